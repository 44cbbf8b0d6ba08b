"""Before a run: what the judge's endpoint accepts (probe.py), and `rt4chart check-judge`.

`audit` and `stream` negotiate before the first trace: an OpenAI judge's endpoint is probed
once, and what it accepts travels to every worker as the judge option `negotiated` (with the
timings adapted to a slow server), so that no worker probes again and every one sends the same
request. A judge that cannot be used at all (a wrong key, a wrong model, no chat endpoint, a
chat template that drops the instructions) stops the run there, with the server's message.

`rt4chart check-judge` (check_judge.py) runs the same probe and a few example calls.
"""

from __future__ import annotations

import asyncio
from typing import Any

from rt4chart.transforms.judges.base import JudgeSpec, close_judge
from rt4chart.transforms.judges.openai_config import OPENAI_JUDGES, config_only
from rt4chart.transforms.judges.probe import probe

BATCH = "openai-batch"


def negotiate(spec: JudgeSpec) -> tuple[JudgeSpec, dict[str, Any] | None]:
    """The judge spec a run uses (with `negotiated` and the adapted timings), and what the
    probe found (None when there was nothing to probe: another judge, `probe=false`, or a spec
    negotiated already). JudgeUnusable when the endpoint cannot be used."""
    if spec.name not in OPENAI_JUDGES:
        return spec, None
    options = dict(spec.options)
    config = config_only(options)
    if not config.probe or config.negotiated:
        return spec, None
    judge = spec.build()
    report = asyncio.run(_probe(judge, set(options)))
    if spec.name == BATCH:  # its calls wait at the provider, in batches, not in a server's
        report.options.pop("max_concurrency", None)  # slots: fewer would mean smaller batches
    return JudgeSpec.of(spec.name, {**options, **report.options}), report.describe()


async def _probe(judge: Any, options: set[str]) -> Any:
    """The probe's report; the judge's connections closed in the probe's own loop."""
    try:
        return await probe(judge, options)
    finally:
        await close_judge(judge)


