"""Reading and assembling one OTLP trace whose spans form a chain, against its length (not a
test).

    python tests/bench/bench_span_chain.py [--sizes 1000 10000 100000] [--json out.json]

Each size N is one line of OTLP JSON (the Collector's file exporter) holding a root CHAIN span
and N - 1 nested CHAIN spans, the last a retriever with one document. Times (CPU seconds)
decoding the line (`otlp.line_spans`) and assembling its trace (`assemble`), prints both per
size and the ratio of the largest size's seconds per 1,000 spans to the smallest's: about 1
when the time is linear in the spans. The walk from every span to its root was quadratic:
10,000 nested spans took 29 s.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rt4chart.pipeline.sources import otlp
from rt4chart.transforms.assemble import assemble
from rt4chart.transforms.common.span_mapping import SpanMapping

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"


def _attr(key: str, value: str) -> dict:
    return {"key": key, "value": {"stringValue": value}}


def chain_line(n: int) -> str:
    """One OTLP JSON line: a chain of n spans under one root."""
    spans = []
    for i in range(n):
        attrs = [_attr("openinference.span.kind", "CHAIN")]
        if i == 0:
            attrs += [_attr("input.value", "How long is the trial?"),
                      _attr("output.value", "The trial lasts 14 days.")]
        if i == n - 1:
            attrs = [_attr("openinference.span.kind", "RETRIEVER"),
                     _attr("retrieval.documents.0.document.content", "The trial lasts 14 days.")]
        spans.append({"traceId": TRACE_ID, "spanId": f"{i + 1:016x}",
                      "parentSpanId": f"{i:016x}" if i else "", "name": f"step {i}",
                      "startTimeUnixNano": str(1_714_555_800_000_000_000 + i),
                      "endTimeUnixNano": str(1_714_555_900_000_000_000 - i), "attributes": attrs})
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [
        _attr("service.name", "bench")]}, "scopeSpans": [{"spans": spans}]}]})


def measure(n: int) -> dict:
    line = chain_line(n)
    start = time.process_time()
    spans = otlp.line_spans(line)
    decoded = time.process_time()
    record, letter = assemble(TRACE_ID, spans, SpanMapping())
    done = time.process_time()
    assert letter is None and record["answer"] == "The trial lasts 14 days.", letter
    return {"spans": n, "decode_s": round(decoded - start, 3),
            "assemble_s": round(done - decoded, 3), "total_s": round(done - start, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = [measure(n) for n in sorted(args.sizes)]
    for row in rows:
        print(f"{row['spans']:>8,} spans: decode {row['decode_s']:7.3f} s, assemble "
              f"{row['assemble_s']:7.3f} s, total {row['total_s']:7.3f} s")
    first, last = rows[0], rows[-1]
    per_k = [r["total_s"] / r["spans"] * 1000 for r in (first, last)]
    ratio = per_k[1] / per_k[0] if per_k[0] else float("nan")
    print(f"seconds per 1,000 spans: {per_k[0]:.4f} at {first['spans']:,}, {per_k[1]:.4f} at "
          f"{last['spans']:,}; ratio {ratio:.2f} (about 1: linear)")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "ratio": ratio}, indent=1) + "\n")


if __name__ == "__main__":
    main()
