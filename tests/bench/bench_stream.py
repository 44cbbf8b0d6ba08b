"""Streaming latency and judge-outage behaviour, against the Pub/Sub emulator (not a test).

    python tests/bench/bench_stream.py [--traces 120] [--rate 4]
    python tests/bench/bench_stream.py --outage 60 [--traces 240] [--rate 2]
    python tests/bench/bench_stream.py --compare-memo [--traces 60] [--rate 2]

Starts the Pub/Sub emulator and `rt4chart stream` (a subprocess, as a user runs it), publishes
RAGTruth sample traces at `--rate` per second, and waits until every one has a verdict.

- Default: the offline judge. Prints the latency from publish to verdict (`audited_at` minus the
  publish time acknowledged by Pub/Sub): median, 95th percentile, max.
- `--outage S`: the openai judge through the real client against a local OpenAI-compatible
  server that answers 503 to everything for S seconds, starting 10 s into publishing. Prints how
  many traces were audited, recorded as incomplete (with reasons) or lost, then runs
  `rt4chart audit --redo` once the endpoint is back and prints what the redo completed.
- `--compare-memo`: the same run twice, the second with Beam's DoFn specs asked afresh at each
  bundle (pipeline/run/dofn_specs.py off), and the ratio of the two medians.
Figures are also written as JSON (`--json`).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "fakes"))

import orjson  # noqa: E402
from bench_dofn_specs import WITHOUT_MEMO  # noqa: E402

from fake_openai_server import FakeOpenAI  # noqa: E402
from pubsub_emulator import PubSubEmulator  # noqa: E402
from testutil import load_traces, read_tables  # noqa: E402

RT4CHART = str(Path(sys.executable).parent / "rt4chart")


def _traces(n: int) -> list[dict]:
    base = load_traces(HERE.parent / "data" / "ragtruth_sample.jsonl")
    out = []
    for i in range(n):
        record = dict(base[i % len(base)])
        record["trace_id"] = f"{record['trace_id']}-{i}"
        record.pop("timestamp", None)  # the publish time is the event time
        out.append(record)
    return out


def _answers(out: Path) -> list[dict]:
    return read_tables(out)["answers"] if (out / "answers").exists() else []


def _pct(values: list[float], q: float) -> float:
    # inclusive: a percentile between the smallest and the largest value, never beyond them
    return (statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]
            if len(values) > 1 else values[0])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=120)
    ap.add_argument("--rate", type=float, default=4.0, help="traces published per second")
    ap.add_argument("--outage", type=float, default=0.0, help="seconds the judge is down")
    ap.add_argument("--deadline", type=float, default=600.0)
    ap.add_argument("--compare-memo", action="store_true",
                    help="run twice, the second time without the DoFn-specs memo, and print both")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    figures: dict = {"traces": args.traces, "rate_per_s": args.rate, "outage_s": args.outage}
    records = _traces(args.traces)
    if args.compare_memo:
        with_memo = _run(args, records, [RT4CHART])
        without = _run(args, records, WITHOUT_MEMO)
        figures.update({"with_memo": with_memo, "without_memo": without,
                        "p50_without_over_with": round(without["latency_s"]["p50"]
                                                       / with_memo["latency_s"]["p50"], 2)})
    else:
        figures.update(_run(args, records, [RT4CHART]))
    print(json.dumps(figures, indent=2, default=str))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2, default=str))


def _run(args: argparse.Namespace, records: list[dict], rt4chart: list[str]) -> dict:  # noqa: C901
    """One stream, started with the `rt4chart` command given, fed `records`: its figures."""
    figures: dict = {}
    with tempfile.TemporaryDirectory() as tmp, PubSubEmulator.start() as emulator:
        out = Path(tmp) / "out"
        topic = emulator.create_topic("traces")
        sub = emulator.create_subscription(topic, "traces-sub", ack_deadline=600)
        env = {**os.environ, **emulator.env()}
        server = None
        command = [*rt4chart, "stream", "--subscription", sub, "--out", str(out)]
        if args.outage:
            server = FakeOpenAI().__enter__()
            env["OPENAI_API_KEY"] = "sk-bench-not-a-secret"
            command += ["--judge", "openai", "--base-url", server.base_url, "--rpm", "6000",
                        "--tpm", "10000000"]
        else:
            env.pop("OPENAI_API_KEY", None)
            command += ["--judge", "offline"]
        log = open(Path(tmp) / "stream.log", "wb")  # noqa: SIM115 - closed below
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        published: dict[str, float] = {}
        outage: dict[str, float] = {}

        def outage_switch() -> None:
            time.sleep(10)
            server.down = True
            outage["start"] = time.time()
            time.sleep(args.outage)
            server.down = False
            outage["end"] = time.time()

        try:
            time.sleep(8)  # let the pipeline start before the clock runs
            if server is not None:
                threading.Thread(target=outage_switch, daemon=True).start()
            started = time.time()
            for i, record in enumerate(records):
                _, published[record["trace_id"]] = emulator.publish(topic, orjson.dumps(record))
                time.sleep(max(0.0, started + (i + 1) / args.rate - time.time()))
            deadline = time.monotonic() + args.deadline
            while time.monotonic() < deadline:
                if process.poll() is not None:
                    raise SystemExit(f"stream exited: {(Path(tmp) / 'stream.log').read_text()}")
                done = {a["trace_id"] for a in _answers(out)}
                if done >= set(published) and (not server or "end" in outage):
                    break
                time.sleep(2)
            answers = _answers(out)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
            log.close()
        counts = Counter(a["trace_id"] for a in answers)
        figures["audited"] = len(counts)
        figures["lost"] = len(set(published) - set(counts))
        figures["duplicated"] = sum(n > 1 for n in counts.values())
        latencies = sorted(a["audited_at"].timestamp() - published[a["trace_id"]]
                           for a in answers if a["trace_id"] in published)
        figures["latency_s"] = {"p50": round(_pct(latencies, 50), 2),
                                "p95": round(_pct(latencies, 95), 2),
                                "max": round(latencies[-1], 2)}
        if server is not None:
            incomplete = [a for a in answers if a["status"] != "ok"]
            figures["ok"] = len(answers) - len(incomplete)
            figures["incomplete"] = len(incomplete)
            figures["incomplete_reasons"] = Counter(
                (a["reason"] or "")[:90] for a in incomplete).most_common(3)
            figures["outage_window_s"] = [round(outage["start"] - started, 1),
                                          round(outage["end"] - started, 1)]
            redo_out = Path(tmp) / "redo"
            if incomplete:
                code = subprocess.run(
                    [RT4CHART, "audit", "--redo", str(out), "--out", str(redo_out), "--judge",
                     "openai", "--base-url", server.base_url], env=env,
                    capture_output=True, timeout=600).returncode
                redone = _answers(redo_out)
                figures["redo"] = {"exit": code, "audited": len(redone),
                                   "ok": sum(a["status"] == "ok" for a in redone),
                                   "same_traces": {a["trace_id"] for a in redone}
                                   == {a["trace_id"] for a in incomplete}}
            server.__exit__(None, None, None)
    return figures


if __name__ == "__main__":
    main()
