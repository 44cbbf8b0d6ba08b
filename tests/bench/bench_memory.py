"""Peak memory of auditing one trace with a long answer (not a test).

    .venv/bin/python tests/bench/bench_memory.py [--sizes 1250 2500 5000]
        [--context-sentences 40] [--json out.json] [beam options ...]

For each size N, writes one trace whose answer has N generated sentences (and a modest context
of `--context-sentences` sentences), runs `rt4chart audit` on it with the offline judge in a
subprocess (the console script next to this Python, FnApiRunner by default) and reads the
subprocess's peak resident memory and CPU time from `os.wait4`. Prints a table with peak MB,
wall and CPU seconds, claims, then the ratio of each size's figures to the smallest size's:
about N/N0 when memory grows linearly with the answer, (N/N0)**2 when quadratically.

The answer-sentence and claim limits are raised (`--max-answer-sentences 10000`,
`--max-claims-per-answer 100000`) so that the trace is audited rather than dead-lettered.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RT4CHART = str(Path(sys.executable).parent / "rt4chart")

CITIES = ("Lyon", "Porto", "Graz", "Turku", "Bergen", "Ghent", "Split", "Kaunas", "Brno", "Cork")


def answer_sentence(i: int) -> str:
    """A factual sentence, distinct per i, that the sentence splitter keeps whole."""
    city = CITIES[i % len(CITIES)]
    return (f"The museum of {city} opened in {1900 + i % 120} and holds {100 + i} paintings "
            f"in room {i % 37 + 1}.")


def context_sentence(i: int) -> str:
    city = CITIES[i % len(CITIES)]
    return f"The museum of {city} opened in {1900 + i % 120} and is free on Sundays."


def trace(n_sentences: int, n_context: int) -> dict:
    """One trace: an answer of `n_sentences` sentences in one paragraph, a modest context."""
    half = (n_context + 1) // 2
    docs = [" ".join(context_sentence(i) for i in range(start, min(start + half, n_context)))
            for start in (0, half)]
    return {
        "trace_id": f"long-answer-{n_sentences}", "route": "bench/memory",
        "timestamp": "2024-05-03T12:00:00Z", "question": "Which museums are there?",
        "contexts": [{"doc_id": f"doc{k}", "text": text} for k, text in enumerate(docs) if text],
        "answer": " ".join(answer_sentence(i) for i in range(n_sentences)),
    }


def run_once(path: Path, out: Path, beam_args: list[str]) -> dict:
    """One audit in a subprocess: exit code, wall and CPU seconds, peak RSS (MB)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    argv = [RT4CHART, "audit", str(path), "--out", str(out), "--judge", "offline",
            "--max-answer-sentences", "10000", "--max-claims-per-answer", "100000", *beam_args]
    started = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = proc.stderr.read() if proc.stderr else b""
    # wait4 gives this child's own rusage (not the maximum over every child waited for so far).
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    return {"exit": proc.returncode, "wall_s": round(wall, 1),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_mb": round(usage.ru_maxrss / 1024),  # Linux: kilobytes
            "stderr_tail": stderr.decode(errors="replace").strip().splitlines()[-3:]}


def audited(out: Path) -> tuple[int, int]:
    """(answers, claims) written by a run."""
    from rt4chart.pipeline.results.summary import read_table

    return read_table(str(out), "answers").num_rows, read_table(str(out), "claims").num_rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1250, 2500, 5000])
    ap.add_argument("--context-sentences", type=int, default=40)
    ap.add_argument("--json", help="write the figures here")
    args, beam_args = ap.parse_known_args()
    rows: dict[int, dict] = {}
    print(f"{'answer sentences':>16} {'answer chars':>12} {'exit':>4} {'peak MB':>8} "
          f"{'wall s':>7} {'CPU s':>6} {'claims':>7}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        for n in args.sizes:
            record = trace(n, args.context_sentences)
            path = Path(tmp) / f"trace-{n}.jsonl"
            path.write_text(json.dumps(record) + "\n")
            out = Path(tmp) / f"out-{n}"
            row = run_once(path, out, beam_args)
            row["answers"], row["claims"] = audited(out) if row["exit"] == 0 else (0, 0)
            row["answer_chars"] = len(record["answer"])
            rows[n] = row
            print(f"{n:>16,} {row['answer_chars']:>12,} {row['exit']:>4} {row['peak_mb']:>8,} "
                  f"{row['wall_s']:>7} {row['cpu_s']:>6} {row['claims']:>7,}", flush=True)
            if row["exit"] != 0:
                print("  " + "\n  ".join(row["stderr_tail"]), flush=True)
    base = min(rows)
    ratios = {n: {k: round(rows[n][k] / max(rows[base][k], 1e-9), 2)
                  for k in ("peak_mb", "wall_s", "cpu_s")} for n in rows}
    for n, r in ratios.items():
        print(f"ratio {n:,}/{base:,} (x{n / base:g} sentences): peak memory x{r['peak_mb']}, "
              f"wall x{r['wall_s']}, CPU x{r['cpu_s']}")
    figures = {"context_sentences": args.context_sentences, "beam_args": beam_args,
               "sizes": rows, "ratios_to_smallest": ratios}
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
