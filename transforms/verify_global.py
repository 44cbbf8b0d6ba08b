"""Global verification: every claim once more against the full context, adaptive prompt.

A local NIC is asked with no hint (its evidence may be spread over windows); a local ENT or CON
is asked with its deciding window as a location hint, to confirm or overturn. The final evidence
is what the judge quotes from the full context, aligned and grounded; a NIC has none.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import apache_beam as beam

from rt4chart.schemas.records import ClaimVerdict, GlobalRequest, RunInfo, UsageRecord
from rt4chart.transforms.evidence import grounded_verdict
from rt4chart.transforms.judge_stage import JudgeCallFn, RunJudge
from rt4chart.transforms.judges.adapter import TypedJudge, as_verdict
from rt4chart.transforms.judges.base import JudgeSpec


class _GlobalFn(JudgeCallFn):
    """The answer of a call is the verdict's stored form (what judge_cache keeps and --reuse
    replays), so that a fresh and a replayed answer take the same path."""

    stage = "verify_global"

    async def call(self, judge, element: GlobalRequest) -> list:
        verdict = await TypedJudge(judge).verify_global(
            element.claim.text, element.context.text, element.question, element.local_label,
            element.hint,
        )
        return verdict.as_json()

    def cache_inputs(self, element: GlobalRequest) -> tuple:
        return (element.claim.text, element.context.text, element.question, element.local_label,
                element.hint)

    def on_result(self, element: GlobalRequest, result, usage) -> Iterable[ClaimVerdict]:
        label, evidence, note, p = grounded_verdict(as_verdict(result), element.context,
                                                    element.claim.text)
        yield ClaimVerdict(element.claim, element.window_labels, element.local_label,
                           element.deciding_window, label, "ok", evidence, note,
                           element.usage + usage, p)

    def on_error(self, element: GlobalRequest, reason: str, usage) -> Iterable[ClaimVerdict]:
        yield ClaimVerdict(element.claim, element.window_labels, element.local_label,
                           element.deciding_window, None, "judge_error", (),
                           f"verify_global: {reason}", element.usage + usage)


class GlobalOutputs(NamedTuple):
    verdicts: beam.PCollection[ClaimVerdict]
    usage: beam.PCollection[UsageRecord]
    cache: beam.PCollection[dict]


class VerifyGlobal(beam.PTransform):
    """GlobalRequest -> ClaimVerdict (final label, grounded evidence, or judge_error)."""

    def __init__(self, spec: JudgeSpec, run: RunInfo | None = None,
                 reuse: beam.PCollection | None = None):
        super().__init__()
        self._spec = spec
        self._run = run
        self._reuse = reuse

    def expand(self, pending: beam.PCollection[GlobalRequest]) -> GlobalOutputs:
        judged = pending | "Judge" >> RunJudge(_GlobalFn(self._spec, run=self._run), self._reuse)
        return GlobalOutputs(judged.results, judged.usage, judged.cache)
