"""Answers completed by a real local model server on a busy machine: replies read whole under a
fixed timeout (`stream=false`, as before issue 33) against replies read as a stream with an idle
timeout between tokens.

llama.cpp's `llama-server` (Gemma 3 270M, tests/fakes/llama_server.py) serves the audit while
one CPU-bound process per core runs beside it (stopped by PID). Prints one line per mode:

    .venv/bin/python tests/bench/bench_busy_llama.py [--traces FILE] [--timeout-s 60]
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


def audit(server: LlamaServer, traces: Path, out: Path, stream: bool, timeout_s: float,
          idle_s: float) -> tuple[int, int, float]:
    started = time.monotonic()
    cli.main(["audit", str(traces), "--out", str(out), "--judge", "openai", "--base-url",
              server.base_url, "--model", MODEL_NAME, "--judge-option", "price_input=0",
              "--judge-option", "price_output=0", "--judge-option", "reasoning_chars=0",
              "--judge-option", "max_output_tokens_cap=1024",
              "--judge-option", f"timeout_s={timeout_s:g}",
              "--judge-option", f"idle_timeout_s={idle_s:g}",
              "--judge-option", f"stream={str(stream).lower()}",
              "--max-claims-per-answer", "2", "--oversize", "truncate"])
    took = time.monotonic() - started
    rows = read_table(str(out), "answers").to_pylist() if (out / "answers").exists() else []
    return sum(r["status"] == "ok" for r in rows), len(rows), took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=Path,
                        default=HERE.parent / "data" / "real_judge" / "traces.jsonl")
    parser.add_argument("--timeout-s", type=float, default=2.0)
    parser.add_argument("--idle-timeout-s", type=float, default=20.0)
    args = parser.parse_args()
    os.environ.pop("OPENAI_API_KEY", None)
    with tempfile.TemporaryDirectory() as tmp:
        for stream in (False, True):
            log = Path(tmp) / f"llama-{stream}.log"
            with LlamaServer("llama-server", log) as server, Burners(os.cpu_count() or 2):
                ok, total, took = audit(server, args.traces, Path(tmp) / f"out-{stream}",
                                        stream, args.timeout_s, args.idle_timeout_s)
            replies = reply_seconds(log)
            mode = "streamed, idle timeout" if stream else "whole, fixed timeout"
            print(f"{mode:<24} answers complete {ok}/{total} in {took:.0f} s; timeout_s="
                  f"{args.timeout_s:g}, idle_timeout_s={args.idle_timeout_s:g}; server "
                  f"replies {len(replies)}, longest {max(replies, default=0):.1f} s")


if __name__ == "__main__":
    main()
