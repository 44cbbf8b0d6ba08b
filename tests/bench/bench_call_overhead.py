"""rt4chart's judge calls/s against a bare `AsyncOpenAI` loop, in one run (not a test).

    python tests/bench/bench_call_overhead.py [--copies 40] [--concurrency 32]
        [--latency-ms 50] [--json out.json] [--profile out.prof]

Starts the simulated provider (`sim_provider.py`) in a child process on 127.0.0.1 with no rate
limits and a fixed reply delay, then, one after the other against that same server:

(a) `rt4chart audit` of the bundled example traces (repeated `--copies` times with unique
    trace ids) with `--judge openai --base-url SIM --max-concurrency C`, in process, on the
    local runner the README's commands use;
(b) a bare loop: one `openai.AsyncOpenAI` client (no retries), C calls in flight under a
    semaphore, sending the very request bodies rt4chart sent in (a) (as the simulator
    recorded them), non-streamed, and reading each reply's JSON content.

Prints one JSON object: for each side the calls, seconds, calls/s and CPU milliseconds of this
process per call (getrusage over the side's run: the simulator's own CPU is not counted); the
ratio of rt4chart's calls/s to the bare loop's (`ratio`, the issue's yardstick); the ratio of
the judge span alone (first request to last reply, from the simulator's timeline: Beam's
start-up and the table writes left out); and the machine's load average. `--profile FILE`
runs side (a) under cProfile and writes its stats to FILE (and the top functions to stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "fakes"))
sys.path.insert(0, str(HERE))

from sim_provider import LatencyModel, SimProvider  # noqa: E402

UNLIMITED_RPM, UNLIMITED_TPM = 1e9, 1e12
# Bounds: the run stops growing here whatever the options say.
MAX_COPIES = 500
MAX_CALLS = 50_000


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=40,
                    help="times the bundled example traces are audited (default 40)")
    ap.add_argument("--concurrency", type=int, default=32,
                    help="calls in flight on both sides (rt4chart's --max-concurrency)")
    ap.add_argument("--latency-ms", type=float, default=50.0, help="every reply's delay")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--profile", help="run rt4chart's side under cProfile, stats to this file")
    ap.add_argument("--keep", help="keep rt4chart's output in this directory")
    ap.add_argument("--timeline", help="write rt4chart's calls per second and stage here")
    args = ap.parse_args(argv)
    if not 1 <= args.copies <= MAX_COPIES:
        ap.error(f"--copies: 1..{MAX_COPIES}")
    if args.concurrency < 1:
        ap.error("--concurrency: at least 1")
    return args


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def write_traces(path: Path, copies: int) -> int:
    from rt4chart.pipeline.run.jobs import example_traces

    base = [json.loads(line) for line in Path(example_traces()).read_text().splitlines()
            if line.strip()]
    with open(path, "w") as fh:
        for i in range(copies):
            for trace in base:
                fh.write(json.dumps(dict(trace, trace_id=f"{trace['trace_id']}-c{i}")) + "\n")
    return copies * len(base)


def judge_span(rows: list[list]) -> float:
    rows = [r for r in rows if r[2] == 200 and r[1] is not None]
    return max(r[1] for r in rows) - min(r[0] for r in rows) if rows else 0.0


def per_second(rows: list[list]) -> list[dict]:
    """Per second of the judge span: calls started, mean calls in flight, stages seen."""
    ok = [r for r in rows if r[2] == 200 and r[1] is not None]
    t0 = min(r[0] for r in ok)
    out = []
    for s in range(int(max(r[1] for r in ok) - t0) + 1):
        lo, hi = t0 + s, t0 + s + 1
        started = [r for r in ok if lo <= r[0] < hi]
        busy = sum(max(0.0, min(hi, r[1]) - max(lo, r[0])) for r in ok)
        out.append({"s": s, "started": len(started), "in_flight": round(busy, 1),
                    "stages": sorted({r[10] for r in started})})
    return out


def side(calls: int, seconds: float, cpu: float, span: float, server_cpu: float) -> dict:
    return {"calls": calls, "seconds": round(seconds, 3),
            "calls_per_s": round(calls / seconds, 1) if seconds else None,
            "judge_span_s": round(span, 3),
            "calls_per_s_judge_span": round(calls / span, 1) if span else None,
            "cpu_ms_per_call": round(cpu / calls * 1000, 2) if calls else None,
            "simulator_cpu_ms_per_call": round(server_cpu / calls * 1000, 2) if calls else None}


def run_rt4chart(args: argparse.Namespace, traces: Path, out: Path, base_url: str,
                 profile: bool) -> tuple[int, float, float]:
    from rt4chart.pipeline.cli import main as cli

    # The model named: the simulator lists none (a non-OpenAI endpoint is asked otherwise).
    argv = ["audit", str(traces), "--out", str(out), "--overwrite", "--judge", "openai",
            "--base-url", base_url, "--model", "gpt-4o-mini",
            "--rpm", f"{UNLIMITED_RPM:g}", "--tpm", f"{UNLIMITED_TPM:g}",
            "--max-concurrency", str(args.concurrency)]
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
    cpu0, t0 = cpu_seconds(), time.monotonic()
    if profiler is not None:
        profiler.enable()
    code = cli.main(argv)
    gc.collect()  # the run's garbage is the run's to collect, not the bare loop's after it
    if profiler is not None:
        profiler.disable()
    seconds, cpu = time.monotonic() - t0, cpu_seconds() - cpu0
    if profiler is not None:
        import pstats

        profiler.dump_stats(args.profile)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(60)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(40)
    return code, seconds, cpu


def bare_body(body: dict) -> dict:
    """rt4chart's request as a plain non-streamed chat completion."""
    return {k: v for k, v in body.items() if k not in ("stream", "stream_options")}


async def bare_loop(base_url: str, bodies: list[dict], concurrency: int) -> int:
    """Every body through one AsyncOpenAI client, `concurrency` at a time; the replies' JSON
    is read (as any client of structured outputs does)."""
    import openai

    client = openai.AsyncOpenAI(api_key="sim-dummy-key", base_url=base_url, max_retries=0,
                                timeout=60)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(body: dict) -> dict | None:
        async with semaphore:
            completion = await client.chat.completions.create(**body)
        choice = completion.choices[0]
        if choice.finish_reason == "length":  # cut off: rt4chart sent it again, as recorded
            return None
        return json.loads(choice.message.content)

    try:
        replies = await asyncio.gather(*(one(b) for b in bodies))
    finally:
        await client.close()
    return len(replies)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    os.environ.setdefault("OPENAI_API_KEY", "sim-dummy-key")
    latency = LatencyModel(args.latency_ms / 1000.0, args.latency_ms / 1000.0)  # fixed delay
    with tempfile.TemporaryDirectory() as tmp:
        traces, warm = Path(tmp) / "traces.jsonl", Path(tmp) / "warm.jsonl"
        n_traces = write_traces(traces, args.copies)
        write_traces(warm, 1)
        out = Path(args.keep) if args.keep else Path(tmp) / "out"
        with SimProvider(UNLIMITED_RPM, UNLIMITED_TPM, latency, cache=False, enforce=False,
                         process=True, record_requests=True) as sim:
            # Warm-up, not measured: the simulator computes (and keeps) each distinct prompt's
            # answer once, so that neither side pays for the simulator's first answers.
            run_rt4chart(args, warm, Path(tmp) / "warm-out", sim.base_url, profile=False)
            before = sim.stats(timeline=True)
            code, seconds, cpu = run_rt4chart(args, traces, out, sim.base_url,
                                              profile=bool(args.profile))
            stats = sim.stats(timeline=True, requests=True)
            bodies = [bare_body(b) for b in stats["requests_bodies"][before["ok"]:]][:MAX_CALLS]
            # The bare loop as if in a process of its own: the heap rt4chart's side left
            # (Beam and all it imported) set aside from the cyclic collector by the same helper
            # rt4chart's runs use (pipeline/run/jobs.py), so that neither side pays for walking
            # the other's objects.
            from rt4chart.pipeline.run.jobs import _heap_set_aside

            with _heap_set_aside():
                cpu0, t0 = cpu_seconds(), time.monotonic()
                bare_calls = asyncio.run(bare_loop(sim.base_url, bodies, args.concurrency))
                bare_s, bare_cpu = time.monotonic() - t0, cpu_seconds() - cpu0
            after = sim.stats(timeline=True)
    rows = stats["timeline"][len(before["timeline"]):]
    if args.timeline:
        Path(args.timeline).write_text(json.dumps(per_second(rows)))
    ours = side(stats["ok"] - before["ok"], seconds, cpu, judge_span(rows),
                stats["server_cpu_s"] - before["server_cpu_s"])
    bare = side(bare_calls, bare_s, bare_cpu, judge_span(after["timeline"][len(rows) + len(
        before["timeline"]):]), after["server_cpu_s"] - stats["server_cpu_s"])
    result = {
        "traces": n_traces, "exit_code": code, "concurrency": args.concurrency,
        "latency_ms": args.latency_ms, "rt4chart": ours, "bare_asyncopenai": bare,
        "ratio": round(ours["calls_per_s"] / bare["calls_per_s"], 3),
        "ratio_judge_span": round(ours["calls_per_s_judge_span"]
                                  / bare["calls_per_s_judge_span"], 3),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text)
    return result


if __name__ == "__main__":
    main()
