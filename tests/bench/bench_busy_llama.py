"""Answers completed by a real local model server on a busy machine: replies read whole under a
fixed timeout (`stream=false`, as before issue 33) against replies read as a stream with an idle
timeout between tokens.

llama.cpp's `llama-server` (Gemma 3 270M, tests/fakes/llama_server.py; `--kind
llama-cpp-python` for llama.cpp's Python server) serves the audit while CPU-bound processes run
beside it (`--burners`, one per core by default; stopped by PID). Prints one line per mode
(`--modes whole,stream`; "default": the judge's own choice and waits, `--timeout-s 0` leaves
timeout_s and idle_timeout_s at their defaults):

    .venv/bin/python tests/bench/bench_busy_llama.py [--traces FILE] [--timeout-s 60]
        [--kind llama-cpp-python] [--burners 1] [--modes default]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "fakes"), str(HERE.parent / "integration")]

from test_busy_llama import Burners, reply_seconds  # noqa: E402

from rt4chart.pipeline.cli import main as cli  # noqa: E402
from rt4chart.pipeline.results.summary import read_table  # noqa: E402

from llama_server import MODEL_NAME, LlamaServer  # noqa: E402


def audit(server: LlamaServer, traces: Path, out: Path, mode: str, timeout_s: float,
          idle_s: float) -> tuple[int, int, float, str]:
    started = time.monotonic()
    waits = [] if not timeout_s else ["--judge-option", f"timeout_s={timeout_s:g}",
                                      "--judge-option", f"idle_timeout_s={idle_s:g}"]
    how = [] if mode == "default" else [
        "--judge-option", f"stream={str(mode == 'stream').lower()}"]
    cli.main(["audit", str(traces), "--out", str(out), "--judge", "openai", "--base-url",
              server.base_url, "--model", MODEL_NAME, "--judge-option", "price_input=0",
              "--judge-option", "price_output=0", "--judge-option", "reasoning_chars=0",
              "--judge-option", "max_output_tokens_cap=1024", *waits, *how,
              "--max-claims-per-answer", "2", "--oversize", "truncate"])
    took = time.monotonic() - started
    rows = read_table(str(out), "answers").to_pylist() if (out / "answers").exists() else []
    reasons = [r["reason"] for r in rows if r["status"] != "ok"]
    return sum(r["status"] == "ok" for r in rows), len(rows), took, "; ".join(reasons)[:400]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=Path,
                        default=HERE.parent / "data" / "real_judge" / "traces.jsonl")
    parser.add_argument("--timeout-s", type=float, default=2.0)
    parser.add_argument("--idle-timeout-s", type=float, default=20.0)
    parser.add_argument("--kind", default="llama-server",
                        choices=("llama-server", "llama-cpp-python"))
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--modes", default="whole,stream")
    args = parser.parse_args()
    os.environ.pop("OPENAI_API_KEY", None)
    names = {"whole": "whole, fixed timeout", "stream": "streamed, idle timeout",
             "default": "the judge's choice"}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in args.modes.split(","):
            log = Path(tmp) / f"llama-{mode}.log"
            with LlamaServer(args.kind, log) as server, Burners(args.burners):
                ok, total, took, why = audit(server, args.traces, Path(tmp) / f"out-{mode}",
                                        mode, args.timeout_s, args.idle_timeout_s)
            replies = reply_seconds(log)
            print(f"{args.kind} beside {args.burners} busy core(s), {names[mode]}: "
                  f"answers complete {ok}/{total} in {took:.0f} s; timeout_s="
                  f"{args.timeout_s:g}, idle_timeout_s={args.idle_timeout_s:g}; server "
                  f"replies {len(replies)}, longest {max(replies, default=0):.1f} s"
                  + (f"; incomplete: {why}" if why else ""))


if __name__ == "__main__":
    main()
