"""Before a run: what the judge's endpoint accepts (probe.py), and `rt4chart check-judge`.

`audit` and `stream` negotiate before the first trace. An OpenAI judge's endpoint is settled
first, from the flags and this process's environment (base URL, Azure's endpoint and API
version, model, organisation, project: transforms/judges/openai/endpoint.py), and travels in
the judge options the stages carry: workers read no endpoint variable, only the key, so they
call the endpoint probed here. It is probed once, and what it accepts travels to every worker
as the judge option `negotiated` (with the timings adapted to a slow server), so that no worker
probes again and every one sends the same request. A judge that cannot be used at all (a wrong
key, a wrong model, no chat endpoint, a chat template that drops the instructions) stops the
run there, with the server's message.

`rt4chart check-judge` (check_judge.py) runs the same probe and a few example calls.
"""

from __future__ import annotations

from typing import Any

from rt4chart.transforms.judges.contract import JudgeSpec


def negotiate(spec: JudgeSpec) -> tuple[JudgeSpec, dict[str, Any] | None]:
    """The judge spec a run uses (its endpoint settled, with `negotiated` and the adapted
    timings), and what the probe found (None when there was nothing to probe: a judge without
    an endpoint to negotiate, `probe=false`, or a spec negotiated already). JudgeUnusable when
    the endpoint cannot be used. The judge's kind negotiates (contract.JudgeKind.negotiate)."""
    return spec.kind().negotiate(spec)
