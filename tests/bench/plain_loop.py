"""The audit's judge calls made by a plain asyncio loop, without Beam: the yardstick of the
pipeline's own overhead in `bench_throughput.py --suite`.

For each trace it makes exactly the calls the pipeline makes (the stages' own request builders,
call and result code: decomposition, every claim against every window, the OR-join, the global
check), through the same judge (`OpenAIJudge`, the same `openai` client, limiter and retries),
all traces concurrently, one stage after the other within a trace.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from rt4chart.schemas.usage import Usage
from rt4chart.transforms.decompose import _DecomposeFn, number_claims
from rt4chart.transforms.decompose import requests_for as decompose_requests
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.openai.judge import OpenAIJudge
from rt4chart.transforms.segment import SegmentConfig, prepare
from rt4chart.transforms.validate import parse_trace
from rt4chart.transforms.verify_global import _GlobalFn
from rt4chart.transforms.verify_local import _LocalFn, plan_global, requests_for


async def _stage(fn, judge, requests) -> list:
    calls = [fn.call(judge, r) for r in requests]
    results = await asyncio.gather(*calls)
    return [out for r, res in zip(requests, results, strict=True)
            for out in fn.on_result(r, res, Usage())]


async def audit_trace(judge: OpenAIJudge, prepared, fns) -> tuple[int, list[str]]:
    """(calls made, claim labels) for one trace."""
    decompose, local, global_ = fns
    d_requests = list(decompose_requests(prepared))
    claim_set = number_claims(prepared, await _stage(decompose, judge, d_requests))
    l_requests = list(requests_for(claim_set))
    verdicts = await _stage(local, judge, l_requests)
    plans = list(plan_global(claim_set, verdicts))
    final = await _stage(global_, judge, plans)
    return len(d_requests) + len(l_requests) + len(plans), [v.label for v in final]


def run(traces_path: Path, options: dict[str, str], window: tuple[int, int] = (25, 10)
        ) -> dict:
    """Audit the traces' judge calls in one event loop; calls, seconds and calls/s."""
    spec = JudgeSpec.of("openai", options)
    fns = (_DecomposeFn(spec), _LocalFn(spec), _GlobalFn(spec))
    config = SegmentConfig(*window)
    prepared = [prepare(parse_trace(json.loads(line)), config)
                for line in traces_path.read_text().splitlines() if line.strip()]

    async def main() -> list[tuple[int, list[str]]]:
        judge = OpenAIJudge(options)
        return await asyncio.gather(*(audit_trace(judge, p, fns) for p in prepared))

    started = time.monotonic()
    results = asyncio.run(main())
    seconds = time.monotonic() - started
    calls = sum(n for n, _ in results)
    return {"traces": len(prepared), "calls": calls, "seconds": round(seconds, 2),
            "calls_per_s": round(calls / seconds, 1)}
