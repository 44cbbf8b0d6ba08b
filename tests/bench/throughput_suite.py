"""The README's throughput scenarios in one run: `python tests/bench/bench_throughput.py --suite
[--quick] [--json out.json]`.

1. QA traces at 600 RPM / 400k TPM (limits adopted from the provider's headers);
2. mixed traces (QA, Summary, Data2txt as sampled) at 500 RPM / 200k TPM;
3. the same traces without cache-aware scheduling (`prefix_gate=false`): cost and verdicts;
4. an instant provider: the pipeline against a plain asyncio loop making the same calls
   through the same judge client, in the same run (the Beam overhead ratio);
5. Summary and Data2txt traces one call at a time against an instant provider: every call is
   sent after all calls before it were answered, so every shared prefix the provider can cache
   is cached: the most cached share any schedule can reach with these prompts.

Each scenario starts its own simulated provider. `--quick` halves the sizes (on this shared
2-core machine the full suite takes about 20 minutes).
"""

from __future__ import annotations

import json
from pathlib import Path

import bench_throughput as bench


def scenarios(quick: bool) -> list[tuple[str, list[str]]]:
    qa, mixed, instant, bound = (36, 16, 40, 10) if quick else (72, 32, 120, 20)
    limits = ["--adopt-limits"]
    return [
        ("qa_600rpm_400k", ["--tasks", "QA", "--rpm", "600", "--tpm", "400000",
                            "--traces", str(qa), *limits]),
        ("mixed_500rpm_200k", ["--rpm", "500", "--tpm", "200000", "--traces", str(mixed),
                               *limits]),
        ("mixed_500rpm_200k_no_scheduling", ["--rpm", "500", "--tpm", "200000", "--traces",
                                             str(mixed), *limits, "--judge-option",
                                             "prefix_gate=false"]),
        ("instant_vs_plain_loop", ["--instant", "--plain-loop", "--traces", str(instant)]),
        # The most any schedule can cache with these prompts: one call at a time, each sent
        # after every call before it was answered (so every shared prefix is cached).
        *((f"cache_bound_{task}", ["--instant", "--max-concurrency", "1", "--tasks", task,
                                   "--traces", str(bound)]) for task in ("Summary", "Data2txt")),
    ]


KEYS = ("traces", "traces_per_min", "fraction_of_physical", "physical_ceiling_traces_per_min",
        "fraction_of_admission", "admission_ceiling_traces_per_min", "admitted_over_used_tokens",
        "calls_per_trace", "input_tokens_per_trace", "cached_tokens_per_trace", "cached_share",
        "output_tokens_per_trace", "usd_per_1000_traces", "http_429", "lost", "duplicated",
        "incomplete", "verdicts_digest", "requests_per_s", "beam_overhead_ratio")


def row(result: dict) -> dict:
    out = {k: result[k] for k in KEYS if k in result}
    out["by_task"] = result.get("by_task")
    out["by_stage"] = result.get("by_stage")
    if "plain_loop" in result:
        plain = result["plain_loop"]
        out["plain_loop"] = plain
        out["pipeline_calls_per_s_wall"] = round(
            result["calls_per_trace"] * result["traces"] / result["wall_s"], 1)
        out["beam_overhead_ratio_wall"] = round(
            out["pipeline_calls_per_s_wall"] / plain["calls_per_s"], 3)
    return out


def main(quick: bool, json_path: str | None, data: str = str(bench.DATA)) -> dict:
    results: dict[str, dict] = {}
    for name, argv in scenarios(quick):
        print(f"== {name}: {' '.join(argv)}", flush=True)
        out = f"/tmp/rt4chart-bench-{name}.json"
        results[name] = row(bench.main(["--data", data, *argv, "--json", out]))
    gate, plain = results["mixed_500rpm_200k"], results["mixed_500rpm_200k_no_scheduling"]
    results["scheduling"] = {
        "cost_change": round(gate["usd_per_1000_traces"] / plain["usd_per_1000_traces"] - 1, 3),
        "cached_share": [plain["cached_share"], gate["cached_share"]],
        "identical_verdicts": gate["verdicts_digest"] == plain["verdicts_digest"],
    }
    results["cache_bound"] = {
        name.removeprefix("cache_bound_"): {"cached_share": r["cached_share"],
                                            "by_stage": {k: v["cached_share"]
                                                         for k, v in r["by_stage"].items()}}
        for name, r in results.items() if name.startswith("cache_bound_")}
    text = json.dumps(results, indent=2)
    print("== suite\n" + text)
    if json_path:
        Path(json_path).write_text(text)
    return results
