"""Throughput of `rt4chart audit` against a rate-limited provider, printed as JSON (not a test).

    python tests/bench/bench_throughput.py [--rpm 500 --tpm 200000] [--traces N | --minutes M]
        [--latency-median 0.8 --latency-p95 2.5 --per-output-token-ms 0] [--instant]
        [--max-concurrency C] [--tokenizer chars4|pretok] [--window-s 60] [--no-cache]
        [--no-enforce] [--json out.json] [--profile out.txt]
        [other rt4chart audit options, e.g. --claims-per-call 4]
        [beam options, e.g. --direct_num_workers 2 --direct_running_mode multi_processing]

Starts the simulated provider (`sim_provider.py`, in a child process so that it does not share
the interpreter lock with the pipeline), builds N traces from the RAGTruth sample in
../shared/data/ragtruth (a seeded shuffle, repeated with unique trace_ids), runs
`rt4chart audit --judge openai --base-url SIM --rpm R --tpm T` in process and prints one JSON
object (see `figures()` for what each figure means). With several worker processes
(`--direct_running_mode multi_processing --direct_num_workers W`) each process budgets R/W and
T/W: rt4chart splits them itself when it can (`rate_share`), else this script passes R/W, T/W.

`--instant`: no latency and no limits, for the pipeline's own cost per trace; with
`--plain-loop`, the same calls are then made by a plain asyncio loop through the same judge
client (`plain_loop.py`), in the same run, and the ratio of calls/s is the Beam overhead.
`--tasks QA,Summary`: only traces of these task types. `--adopt-limits`: pass no --rpm/--tpm,
so that the judge adopts the limits the provider reports.
`--suite [--quick]`: the scenarios of the README's throughput table, one after the other
(`throughput_suite.py`).
`--profile FILE`: runs the whole benchmark under py-spy (the pipeline, Beam's worker processes
and the simulator), writes the collapsed stacks to FILE and adds the hottest functions per
process to the figures.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "fakes"))
sys.path.insert(0, str(HERE))

import throughput_figures as tf  # noqa: E402
from sim_provider import LatencyModel, SimProvider, max_in_window, rate_between  # noqa: E402

from rt4chart.pipeline.cli import main as cli  # noqa: E402
from rt4chart.pipeline.eval.datasets import ragtruth_traces  # noqa: E402
from rt4chart.pipeline.results.summary import read_table  # noqa: E402

DATA = HERE.parents[2] / "shared" / "data" / "ragtruth"
# Per trace of the RAGTruth sample (measured with this script, chars4, --claims-per-call 1);
# used only to size --minutes, every reported figure is measured.
EST_CALLS_PER_TRACE = 25.5
EST_ADMITTED_TOKENS_PER_TRACE = 35_000
EST_INSTANT_TRACES_PER_MIN = 240
UNLIMITED_RPM, UNLIMITED_TPM = 1e9, 1e12


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--rpm", type=float, default=500)
    ap.add_argument("--tpm", type=float, default=200_000)
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--traces", type=int, help="traces to audit (default: --minutes 3)")
    size.add_argument("--minutes", type=float,
                      help="size the run to last about this long at the estimated ceiling")
    ap.add_argument("--latency-median", type=float, default=0.8, help="seconds (default 0.8)")
    ap.add_argument("--latency-p95", type=float, default=2.5, help="seconds (default 2.5)")
    ap.add_argument("--per-output-token-ms", type=float, default=0.0,
                    help="added per output token (default 0)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--instant", action="store_true",
                    help="latency 0 and no limits: the pipeline's own cost per trace")
    ap.add_argument("--max-concurrency", type=int, help="the judge's calls in flight per process")
    ap.add_argument("--judge-rpm", type=float, help="client budget per process (default R/W)")
    ap.add_argument("--judge-tpm", type=float, help="client budget per process (default T/W)")
    ap.add_argument("--tokenizer", choices=["chars4", "pretok"], default="chars4",
                    help="how the simulator counts tokens (the judge estimates chars/4)")
    ap.add_argument("--window-s", type=float, default=60.0,
                    help="the simulator's sliding window (limits scale to it; default 60)")
    ap.add_argument("--no-cache", action="store_true", help="simulate no prompt caching")
    ap.add_argument("--no-enforce", action="store_true",
                    help="the simulator counts but never answers 429: does the client hold the "
                         "limit by itself?")
    ap.add_argument("--sim-in-process", action="store_true",
                    help="run the simulator in this process (shares the GIL with the pipeline)")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--timeline", help="write the simulator's per-request timeline here (JSON)")
    ap.add_argument("--replies", help="write every answer's schema, prompt and reply tokens "
                                      "here (JSONL, for tests/bench/replay_reservation.py)")
    ap.add_argument("--profile", help="run under py-spy, collapsed stacks to this file")
    ap.add_argument("--keep", help="keep the audit output in this directory")
    ap.add_argument("--tasks", help="only traces of these task types (comma-separated)")
    ap.add_argument("--adopt-limits", action="store_true",
                    help="pass no --rpm/--tpm: the judge adopts the provider's limits")
    ap.add_argument("--plain-loop", action="store_true",
                    help="with --instant: also make the same calls in a plain asyncio loop")
    ap.add_argument("--suite", action="store_true", help="run the README's scenarios")
    ap.add_argument("--quick", action="store_true", help="with --suite: shorter scenarios")
    return ap.parse_known_args(argv)


def worker_processes(beam_args: list[str]) -> int:
    """Worker processes of the local runner (threads share one limiter, so they count 1)."""
    opts: dict[str, str] = {}
    for i, arg in enumerate(beam_args):
        if arg.startswith("--direct_"):
            key, sep, value = arg.partition("=")
            opts[key] = value if sep else (beam_args[i + 1] if i + 1 < len(beam_args) else "")
    if opts.get("--direct_running_mode") == "multi_processing":
        return max(1, int(opts.get("--direct_num_workers") or 1))
    return 1


def cli_splits_limits() -> bool:
    """Whether rt4chart itself gives each local worker process 1/W of --rpm/--tpm."""
    import importlib.util

    from rt4chart.transforms.judges.openai.judge import OpenAIConfig

    splits = hasattr(cli, "share_limits") or importlib.util.find_spec(
        "rt4chart.pipeline.run.jobs") is not None
    return "rate_share" in OpenAIConfig.__dataclass_fields__ and splits


def write_traces(path: Path, data: str, n: int, seed: int, tasks: str | None = None
                 ) -> list[str]:
    wanted = {t.strip() for t in tasks.split(",")} if tasks else None
    base = [t for t in ragtruth_traces(data) if wanted is None or t.get("task") in wanted]
    random.Random(seed).shuffle(base)
    ids = []
    with open(path, "w") as fh:
        for i in range(n):
            trace = dict(base[i % len(base)], trace_id=f"{base[i % len(base)]['trace_id']}-"
                                                       f"r{i // len(base)}")
            ids.append(trace["trace_id"])
            fh.write(json.dumps(trace) + "\n")
    return ids


def trace_count(args: argparse.Namespace) -> int:
    if args.traces:
        return args.traces
    minutes = args.minutes or 3.0
    if args.instant:
        return max(1, math.ceil(minutes * EST_INSTANT_TRACES_PER_MIN))
    ceiling = min(args.rpm / EST_CALLS_PER_TRACE, args.tpm / EST_ADMITTED_TOKENS_PER_TRACE)
    return max(1, math.ceil(minutes * ceiling))


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main(argv: list[str] | None = None) -> dict:
    args, passthrough = parse_args(argv)
    if args.suite:
        import throughput_suite

        return throughput_suite.main(args.quick, args.json, args.data)
    if args.profile:
        return profiled(args, passthrough, argv if argv is not None else sys.argv[1:])
    n = trace_count(args)
    workers = worker_processes(passthrough)
    latency = LatencyModel.instant() if args.instant else LatencyModel(
        args.latency_median, args.latency_p95, args.per_output_token_ms / 1000.0, seed=args.seed)
    rpm, tpm = (UNLIMITED_RPM, UNLIMITED_TPM) if args.instant else (args.rpm, args.tpm)
    splits = cli_splits_limits()
    if args.judge_rpm or args.judge_tpm:  # explicit per-process budget
        share = ["--judge-option", "rate_share=1"] if splits else []
        client_rpm, client_tpm = args.judge_rpm or rpm / workers, args.judge_tpm or tpm / workers
        how = "per process, as given"
        judge_rpm, judge_tpm = client_rpm, client_tpm
    elif splits:
        share, judge_rpm, judge_tpm = [], rpm, tpm
        client_rpm, client_tpm = rpm / workers, tpm / workers
        how = f"rt4chart splits --rpm/--tpm over {workers} worker process(es)"
    else:
        share, judge_rpm, judge_tpm = [], rpm / workers, tpm / workers
        client_rpm, client_tpm = judge_rpm, judge_tpm
        how = f"this script passes R/{workers}, T/{workers}"
    os.environ["OPENAI_API_KEY"] = "sim-dummy-key"
    with tempfile.TemporaryDirectory() as tmp:
        traces_path = Path(tmp) / "traces.jsonl"
        ids = write_traces(traces_path, args.data, n, args.seed, args.tasks)
        out = Path(args.keep) if args.keep else Path(tmp) / "out"
        limits = [] if args.adopt_limits and not args.instant else [
            "--rpm", f"{judge_rpm:.6g}", "--tpm", f"{judge_tpm:.6g}"]
        argv_audit = ["audit", str(traces_path), "--out", str(out), "--overwrite",
                      "--judge", "openai", *limits, *share, *passthrough]
        if args.max_concurrency:
            argv_audit += ["--max-concurrency", str(args.max_concurrency)]
        with SimProvider(rpm, tpm, latency, cache=not args.no_cache, window_s=args.window_s,
                         enforce=not (args.no_enforce or args.instant), tokenizer=args.tokenizer,
                         process=not args.sim_in_process,
                         record_replies=bool(args.replies)) as sim:
            cpu0 = cpu_seconds()
            started = time.monotonic()
            code = cli.main([*argv_audit, "--base-url", sim.base_url])
            wall = time.monotonic() - started
            cpu = cpu_seconds() - cpu0
            stats = sim.stats(timeline=True, replies=bool(args.replies))
            plain = plain_loop(args, traces_path, sim.base_url, passthrough)
        answers = read_table(str(out), "answers").to_pylist()
        claims = read_table(str(out), "claims").to_pylist()
        dead = read_table(str(out), "dead_letters").num_rows
    result = figures(args, ids, answers, dead, stats, wall, cpu, code)
    result["verdicts_digest"] = tf.verdicts_digest(claims)
    if plain is not None:
        result["plain_loop"] = plain
        result["beam_overhead_ratio"] = round(result["requests_per_s"] / plain["calls_per_s"], 3)
    result["config"].update(
        argv=argv_audit[4:], workers=workers, client_rpm_per_process=round(client_rpm, 3),
        client_tpm_per_process=round(client_tpm, 3), limits_split=how,
        latency={"median_s": latency.median_s, "p95_s": latency.p95_s,
                 "per_output_token_s": latency.per_output_token_s, "seed": latency.seed})
    if args.replies:
        Path(args.replies).write_text("".join(json.dumps(r) + "\n" for r in stats["replies"]))
    if args.timeline:
        Path(args.timeline).write_text(json.dumps(
            {"columns": stats["timeline_columns"], "rows": stats["timeline"]}))
    emit(result, args.json)
    return result


def plain_loop(args: argparse.Namespace, traces: Path, base_url: str,
               passthrough: list[str]) -> dict | None:
    """With --instant --plain-loop: the same calls from a plain asyncio loop (same sim)."""
    if not (args.instant and args.plain_loop):
        return None
    import plain_loop as pl

    options = {"base_url": base_url, "rpm": f"{UNLIMITED_RPM:g}", "tpm": f"{UNLIMITED_TPM:g}"}
    if args.max_concurrency:
        options["max_concurrency"] = str(args.max_concurrency)
    for i, arg in enumerate(passthrough):
        if arg == "--judge-option":
            key, _, value = passthrough[i + 1].partition("=")
            options[key] = value
    return pl.run(traces, options)


def figures(args, ids, answers, dead, stats, wall, cpu, code) -> dict:
    """Everything the benchmark reports (all per-trace figures divide by the traces asked)."""
    n = len(ids)
    counts = Counter(a["trace_id"] for a in answers)
    lost = len(set(ids) - set(counts))
    duplicated = sum(c - 1 for c in counts.values() if c > 1)
    incomplete = sum(1 for a in answers if a["status"] != "ok")
    rows = stats["timeline"]
    ok = [r for r in rows if r[2] == 200]
    calls = len(ok) / n
    admitted_tokens = sum(r[6] for r in ok) / n
    rpm, tpm = args.rpm, args.tpm
    result: dict = {
        "traces": n, "exit_code": code, "wall_s": round(wall, 2),
        "traces_per_min": round(n / wall * 60, 2),
        "calls_per_trace": round(calls, 3),
        "input_tokens_per_trace": round(stats["prompt_tokens"] / n, 1),
        "cached_tokens_per_trace": round(stats["cached_tokens"] / n, 1),
        "output_tokens_per_trace": round(stats["completion_tokens"] / n, 1),
        "admitted_tokens_per_trace": round(admitted_tokens, 1),
        "usage_reported_per_trace": {  # what rt4chart recorded (answers table), for comparison
            "calls": round(sum(a["judge_calls"] for a in answers) / n, 3),
            "input": round(sum(a["input_tokens"] for a in answers) / n, 1),
            "cached": round(sum(a["cached_tokens"] for a in answers) / n, 1),
            "output": round(sum(a["output_tokens"] for a in answers) / n, 1)},
        "usd_per_1000_traces": round(tf.usd(stats["prompt_tokens"], stats["cached_tokens"],
                                            stats["completion_tokens"]) / n * 1000, 3),
        "cached_share": round(stats["cached_tokens"] / max(1, stats["prompt_tokens"]), 3),
        "by_task": tf.per_task(answers), "by_stage": tf.per_stage(ok, n),
        "http_429": stats["rejected_429"], "http_429_by_kind": stats["rejected_429_by_kind"],
        "lost": lost, "duplicated": duplicated, "incomplete": incomplete, "dead_letters": dead,
        "server": {k: stats[k] for k in (
            "requests", "ok", "max_60s_admitted_requests", "max_60s_admitted_tokens",
            "max_60s_attempted_requests", "max_60s_attempted_tokens", "max_in_flight",
            "server_cpu_s")},
        "per_minute": stats["per_minute"],
        "client_cpu_s": round(cpu, 2),
        "config": {"rpm": None if args.instant else rpm, "tpm": None if args.instant else tpm,
                   "instant": args.instant,
                   "max_concurrency": args.max_concurrency, "tokenizer": args.tokenizer,
                   "window_s": args.window_s, "cache": not args.no_cache,
                   "enforce": not (args.no_enforce or args.instant)},
    }
    if ok:
        first = min(r[0] for r in ok)
        last_done = max(r[1] for r in rows if r[1] is not None)
        span = max(1e-9, last_done - first)
        result["judge_span_s"] = round(span, 2)
        result["traces_per_min_judge_span"] = round(n / span * 60, 2)
        result["requests_per_s"] = round(len(ok) / span, 1)
        result["mean_in_flight"] = round(sum(r[1] - r[0] for r in ok if r[1]) / span, 1)
    rejected = Counter(r[9] for r in rows if r[2] == 429)
    result["prompts_rejected"] = len(rejected)
    result["max_429s_for_one_prompt"] = max(rejected.values(), default=0)
    if args.instant:
        result["overhead_ms_per_trace"] = round(wall / n * 1000, 1)
        result["client_cpu_ms_per_trace"] = round(cpu / n * 1000, 1)
        result["server_cpu_ms_per_trace"] = round(stats["server_cpu_s"] / n * 1000, 1)
        return result
    result.update(ceiling(ok, calls, admitted_tokens, rpm, tpm, n, wall))
    result.update(tf.ceilings(ok, n, rpm, tpm, n / wall * 60))
    result["limit_held"] = {
        "client_alone": (stats["max_60s_attempted_requests"] <= rpm
                         and stats["max_60s_attempted_tokens"] <= tpm),
        "admitted": (stats["max_60s_admitted_requests"] <= rpm
                     and stats["max_60s_admitted_tokens"] <= tpm)}
    return result


def ceiling(ok: list[list], calls: float, tokens: float, rpm: float, tpm: float, n: int,
            wall: float) -> dict:
    """The rate-limit ceiling and the achieved fraction, overall and in the steady part."""
    by_requests, by_tokens = rpm / calls, tpm / tokens
    top = min(by_requests, by_tokens)
    bound = "requests" if by_requests <= by_tokens else "tokens"
    times = [r[0] for r in ok]
    amounts = [r[6] for r in ok]
    first, last = min(times), max(times)
    skip = 0.1 * (last - first)  # ramp-up (incl. the client's 10 s burst) and tail left out
    start, end = first + skip, last - skip
    steady_rpm = rate_between(times, start, end)
    steady_tpm = rate_between(times, start, end, amounts)
    steady = steady_rpm / calls if bound == "requests" else steady_tpm / tokens
    return {
        "ceiling_traces_per_min": round(top, 2), "ceiling_bound_by": bound,
        "ceiling_by_requests": round(by_requests, 2), "ceiling_by_tokens": round(by_tokens, 2),
        "fraction_of_ceiling": round(n / wall * 60 / top, 3),
        "steady": {"from_s": round(start, 1), "to_s": round(end, 1),
                   "requests_per_min": round(steady_rpm, 1),
                   "tokens_per_min": round(steady_tpm),
                   "utilisation_requests": round(steady_rpm / rpm, 3),
                   "utilisation_tokens": round(steady_tpm / tpm, 3),
                   "traces_per_min": round(steady, 2),
                   "fraction_of_ceiling": round(steady / top, 3)},
        "max_10s_admitted_requests": max_in_window(times, 10.0),
    }


def emit(result: dict, path: str | None) -> None:
    text = json.dumps(result, indent=2)
    print(text)
    if path:
        Path(path).write_text(text)


# ---------------------------------------------------------------- profiling


def profiled(args: argparse.Namespace, passthrough: list[str], argv: list[str]) -> dict:
    """Re-run this script under py-spy (every process, threads apart) and summarise."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    inner = list(argv)
    i = inner.index("--profile") if "--profile" in inner else None
    if i is not None:
        del inner[i:i + 2]
    else:
        inner = [a for a in inner if not a.startswith("--profile=")]
    figures_path = Path(args.json or tempfile.mktemp(suffix=".json"))
    if "--json" not in inner:
        inner += ["--json", str(figures_path)]
    cmd = [spy, "record", "--subprocesses", "--threads", "--rate", "50", "--format", "raw",
           "-o", args.profile, "--", sys.executable, str(Path(__file__).resolve()), *inner]
    subprocess.run(cmd, check=True)
    result = json.loads(figures_path.read_text())
    result["profile"] = summarise_profile(Path(args.profile), rate=50)
    emit(result, args.json)
    return result


HOT_MODULES = ("rt4chart", "apache_beam", "openai", "httpx", "httpcore", "json", "sim_provider",
               "asyncio", "pyarrow", "judge", "transforms", "pipeline", "socket")


def _short(frame: str) -> str:
    """"f (/long/path/site-packages/pkg/mod.py:12)" -> "f (pkg/mod.py:12)"."""
    return re.sub(r"\((?:[^()]*site-packages/|/[^()]*/(?=[^/()]*/[^/()]*\)))", "(", frame)


def summarise_profile(path: Path, rate: float, top: int = 12) -> dict:
    """Per process: seconds of samples py-spy judged active (it leaves idle threads out, but a
    thread blocked in a socket read or on a lock may still count: compare with the measured
    client_cpu_s and server_cpu_s), the hottest functions (self and inclusive) and threads."""
    leaves: dict[str, Counter] = defaultdict(Counter)
    threads: dict[str, Counter] = defaultdict(Counter)
    inclusive: dict[str, Counter] = defaultdict(Counter)
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit() or not stack.startswith("process "):
            continue
        frames = stack.split(";")
        # a child process's stacks sit under its parent's process frame: take the innermost
        at = max(i for i, f in enumerate(frames) if f.startswith("process "))
        head = frames[at]
        proc = head.split(":", 1)[0] + " " + head[head.find('"'):][:90]
        frames = [_short(f) for f in frames[at + 1:]]
        leaves[proc][frames[-1] if frames else "?"] += int(count)
        if frames:
            threads[proc][frames[0]] += int(count)
        for frame in set(frames[1:]):
            if any(k in frame for k in HOT_MODULES):
                inclusive[proc][frame] += int(count)
    return {proc: {"active_s": round(sum(c.values()) / rate, 1),
                   "top_self": [[f, round(v / rate, 1)] for f, v in c.most_common(top)],
                   "top_threads": [[t, round(v / rate, 1)] for t, v in
                                   threads[proc].most_common(5)],
                   "top_inclusive": [[f, round(v / rate, 1)] for f, v in
                                     inclusive[proc].most_common(top)]}
            for proc, c in leaves.items()}


if __name__ == "__main__":
    main()
