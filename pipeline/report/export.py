"""`rt4chart export RUN --flagged|--all [--sample N] --out data.jsonl`: verdicts back to data.

Writes the JSONL that `rt4chart eval --dataset jsonl` reads: one audited answer a line, its
trace as audited (trace_id, route, question, documents, answer, task, generator, metadata) and
rt4chart's hallucinated spans as `gold_spans` (`{start, end, label}` with label CON or NIC,
answer offsets). These are **machine labels**, proposed for review and never to be mistaken for
a person's: every record says so in `label_source` ("rt4chart") and in its metadata
(`labels: machine`, the run's judge model and prompt hash), so that a reviewer who corrects a
record changes `label_source` to show it was reviewed.

`--flagged` takes the hallucinated answers; `--all` every complete answer (a faithful one with
`gold_spans: []`). Incomplete answers carry no label and are never exported; they are counted,
as are answers whose trace cannot be found (the traces come from `--traces`, the run's traces
table, or the inputs recorded in its summary.json, read as `audit` reads them). `--sample N`
keeps N of them, chosen by a seeded hash of the trace id (the same N for the same seed).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import sys
from pathlib import Path

import orjson

from rt4chart.pipeline.results.load import is_bigquery, load_run

logger = logging.getLogger(__name__)

LABEL_SOURCE = "rt4chart"


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("export", help="write audited answers as labelled JSONL for `eval`",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("run", metavar="RUN", help="a run's output folder, or bq:PROJECT:DATASET")
    # Exactly one of the two (checked in `run`: the option registry sees no argparse groups).
    p.add_argument("--flagged", action="store_true", help="the hallucinated answers")
    p.add_argument("--all", action="store_true", help="every complete answer")
    p.add_argument("--sample", type=int, metavar="N", help="at most N of them (seeded)")
    p.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    p.add_argument("--traces", nargs="+", metavar="FILE",
                   help="the traces, in any input format of audit (default: the run's own)")
    p.add_argument("--out", required=True, help="the JSONL file to write")
    return p


def _pick(trace_id: str, seed: int) -> str:
    return hashlib.sha256(f"{seed}\x00{trace_id}".encode()).hexdigest()


def record(answer: dict, trace) -> dict:
    """The eval JSONL record of one audited answer and its trace."""
    t = trace.trace
    metadata = {**dict(t.metadata), "labels": "machine", "rt4chart_label": answer["label"],
                "rt4chart_judge_model": answer.get("judge_model") or "",
                "rt4chart_prompt_hash": answer.get("prompt_hash") or ""}
    return {
        "trace_id": t.trace_id, "route": t.route, "question": t.question,
        "contexts": [{"doc_id": d.doc_id, "text": d.text} for d in t.contexts],
        "answer": t.answer, "task": t.task, "generator": t.generator, "metadata": metadata,
        "gold_spans": [{"start": s["char_start"], "end": s["char_end"], "label": s["label"]}
                       for s in answer.get("hallucinated_spans") or []],
        "label_source": LABEL_SOURCE,
    }


def export(run_dir: str, out: str, flagged: bool, sample: int | None = None, seed: int = 0,
           traces: list[str] | None = None) -> dict:
    """Write the records; the counts of what was written and left out, and why."""
    run = load_run(run_dir, traces)
    complete = [a for a in run.answers if a["status"] == "ok" and a["label"] is not None]
    chosen = [a for a in complete if a["hallucinated"]] if flagged else complete
    missing = [a["trace_id"] for a in chosen if a["trace_id"] not in run.traces]
    found = [a for a in chosen if a["trace_id"] in run.traces]
    found.sort(key=lambda a: _pick(a["trace_id"], seed))
    if sample is not None:
        found = found[:sample]
    found.sort(key=lambda a: a["trace_id"])
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as fh:
        for answer in found:
            fh.write(orjson.dumps(record(answer, run.traces[answer["trace_id"]])) + b"\n")
    return {"written": len(found), "chosen": len(chosen),
            "incomplete": len(run.answers) - len(complete), "without_trace": len(missing)}


def run(args: argparse.Namespace) -> int:
    """0 when records were written; 1 when none could be (no trace found, or nothing chosen)."""
    if args.flagged == args.all:
        raise ValueError("give one of --flagged (the hallucinated answers) or --all")
    if args.sample is not None and args.sample < 1:
        raise ValueError("--sample must be at least 1")
    counts = export(args.run, args.out, args.flagged, args.sample, args.seed, args.traces)
    what = "hallucinated" if args.flagged else "complete"
    print(f"{counts['written']} of {counts['chosen']} {what} answer(s) written to {args.out} "
          f"(machine labels, label_source={LABEL_SOURCE}); {counts['incomplete']} incomplete "
          f"answer(s) not exported (no label)")
    if counts["without_trace"]:
        where = "the bq traces table" if is_bigquery(args.run) else "summary.json's inputs"
        print(f"rt4chart: {counts['without_trace']} answer(s) left out: their trace was not "
              f"found (--traces, or {where})", file=sys.stderr)
    return 0 if counts["written"] else 1
