"""Local verification: every claim against every window, then an OR-join per claim.

The fan-out is one keyed request per (claim, window). Results are regrouped per trace; a claim
whose windows all answered gets its OR-joined local label and deciding window and goes on to
global verification; a claim with a failed window call is a failed claim (never a label).

An absence claim ("the passages do not say X") skips the windows and goes straight to global
verification, which reads the full context: a window cannot prove that the context lacks
something, and the OR-join would take one window's "not here" (ENT) for the whole context's.
Whatever a window could show against it (X said after all), the full context shows too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import apache_beam as beam

from rt4chart.schemas.records import (
    ABSENCE,
    Claim,
    ClaimSet,
    DeadLetter,
    FailedClaim,
    LocalVerdict,
    RunInfo,
)
from rt4chart.schemas.requests import GlobalRequest, LocalBatchRequest, LocalRequest
from rt4chart.schemas.usage import Usage, UsageRecord
from rt4chart.transforms.checks.evidence import grounded_verdict
from rt4chart.transforms.common.guard import GuardedParts, fault_reason
from rt4chart.transforms.common.joins import or_join
from rt4chart.transforms.common.options_spec import Flex, option
from rt4chart.transforms.judge_stage import JudgeCallFn, RunJudge
from rt4chart.transforms.judges.adapter import TypedJudge, as_verdict, as_verdicts
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.prune import PruneWindows
from rt4chart.transforms.regroup import DEFAULT_TIMEOUT_S, Regroup
from rt4chart.transforms.segment import render_context, render_window


def checked_locally(claim: Claim) -> bool:
    """Whether a claim goes through the windows (every kind but absence, see above)."""
    return claim.kind != ABSENCE


def local_claims(claim_set: ClaimSet) -> tuple[Claim, ...]:
    return tuple(c for c in claim_set.claims if checked_locally(c))


def requests_for(claim_set: ClaimSet) -> Iterable[LocalRequest]:
    """One request per (claim, window), for the claims checked locally."""
    prepared = claim_set.prepared
    chunks = [render_window(prepared, w) for w in prepared.windows]
    for claim in local_claims(claim_set):
        for window, chunk in zip(prepared.windows, chunks, strict=True):
            yield LocalRequest(claim_set.key, claim, window.index, chunk, prepared.trace.user_text)


def batch_requests_for(claim_set: ClaimSet, claims_per_call: int) -> Iterable[LocalBatchRequest]:
    """One request per window and group of up to `claims_per_call` claims of the answer."""
    prepared = claim_set.prepared
    claims = local_claims(claim_set)
    for window in prepared.windows:
        chunk = render_window(prepared, window)
        for start in range(0, len(claims), claims_per_call):
            yield LocalBatchRequest(claim_set.key, claims[start : start + claims_per_call],
                                    window.index, chunk, prepared.trace.user_text)


class _LocalFn(JudgeCallFn):
    """The answer of a call is the verdict's stored form (what judge_cache keeps and --reuse
    replays), so that a fresh and a replayed answer take the same path."""

    stage = "verify_local"

    async def call(self, judge, element: LocalRequest) -> list:
        verdict = await TypedJudge(judge).verify_local(element.claim.text, element.chunk.text,
                                                       element.question)
        return verdict.as_json()

    def cache_inputs(self, element: LocalRequest) -> tuple:
        return (element.claim.text, element.chunk.text, element.question)

    def on_result(self, element: LocalRequest, result, usage) -> Iterable[LocalVerdict]:
        allowed = {s.index for _, s in element.chunk.segments}
        label, evidence, note, _ = grounded_verdict(as_verdict(result), element.chunk,
                                                    element.claim.text, allowed)
        c = element.claim
        yield LocalVerdict(c.trace_id, c.claim_index, element.window_index, label, "ok",
                           evidence, note, usage)

    def on_error(self, element: LocalRequest, reason: str, usage) -> Iterable[LocalVerdict]:
        c = element.claim
        yield LocalVerdict(c.trace_id, c.claim_index, element.window_index, None,
                           "judge_error", (), reason, usage)


class _LocalBatchFn(JudgeCallFn):
    """Several claims per call; each claim still gets its own verdict and evidence. A judge
    without the optional `verify_local_many` is asked claim by claim, concurrently (see
    TypedJudge.verify_local_many)."""

    stage = "verify_local"

    async def call(self, judge, element: LocalBatchRequest) -> list:
        verdicts = await TypedJudge(judge).verify_local_many(
            [c.text for c in element.claims], element.chunk.text, element.question)
        return [v.as_json() for v in verdicts]

    def cache_inputs(self, element: LocalBatchRequest) -> tuple:
        return ([c.text for c in element.claims], element.chunk.text, element.question)

    def on_result(self, element: LocalBatchRequest, result, usage) -> Iterable[LocalVerdict]:
        verdicts = as_verdicts(result, len(element.claims))
        allowed = {s.index for _, s in element.chunk.segments}
        for i, (claim, verdict) in enumerate(zip(element.claims, verdicts, strict=True)):
            label, evidence, note, _ = grounded_verdict(verdict, element.chunk, claim.text,
                                                        allowed)
            # The call's usage goes to the first claim: per-trace sums stay exact.
            yield LocalVerdict(claim.trace_id, claim.claim_index, element.window_index, label,
                               "ok", evidence, note, usage if i == 0 else Usage())

    def on_error(self, element: LocalBatchRequest, reason: str, usage) -> Iterable[LocalVerdict]:
        for i, claim in enumerate(element.claims):
            yield LocalVerdict(claim.trace_id, claim.claim_index, element.window_index, None,
                               "judge_error", (), reason, usage if i == 0 else Usage())


def plan_global(claim_set: ClaimSet, verdicts: Iterable[LocalVerdict]) -> Iterable[object]:
    """OR-join each claim's window verdicts into a global request, or a failed claim."""
    prepared = claim_set.prepared
    by_claim: dict[int, dict[int, LocalVerdict]] = {}
    for v in verdicts:
        by_claim.setdefault(v.claim_index, {})[v.window_index] = v
    context = render_context(prepared)
    for claim in claim_set.claims:
        if not checked_locally(claim):
            yield GlobalRequest(claim_set.key, claim, (), None, None, context, None,
                                prepared.trace.user_text)
            continue
        got = by_claim.get(claim.claim_index, {})
        window_verdicts = [got.get(w.index) for w in prepared.windows]
        usage = sum((v.usage for v in got.values()), Usage())
        failed = [v for v in window_verdicts if v is None or v.status != "ok"]
        if failed:
            reason = failed[0].note if failed[0] is not None else "local verdict missing"
            yield FailedClaim(claim, "verify_local",
                              f"{len(failed)} of {len(window_verdicts)} windows failed: {reason}",
                              usage)
            continue
        labels = [v.label for v in window_verdicts]
        local_label, deciding = or_join(labels)
        hint = None
        if deciding is not None:
            hint = render_window(prepared, prepared.windows[deciding]).text
        yield GlobalRequest(claim_set.key, claim, tuple(labels), local_label, deciding,
                            context, hint, prepared.trace.user_text, usage)


def _plan(claim_set: ClaimSet, verdicts: list[LocalVerdict]) -> Iterable[object]:
    """The trace's global requests and failed claims (tag "failed").

    The trace has fanned out to the answer join, so a fault here must not drop it: every claim
    fails with stage "verify_local" and the answer comes out incomplete (kept for --redo).
    """
    try:
        items = list(plan_global(claim_set, verdicts))
    except Exception as exc:  # noqa: BLE001 - one trace's fault must not stop the run
        yield from _plan_fault(claim_set, fault_reason("verify_local", exc))
        return
    for item in items:
        if isinstance(item, FailedClaim):
            yield beam.pvalue.TaggedOutput("failed", item)
        else:
            yield item


def _plan_fault(claim_set: ClaimSet, reason: str) -> Iterable[object]:
    """The join's fault: every claim fails with the reason (the answer comes out incomplete)."""
    for claim in claim_set.claims:
        yield beam.pvalue.TaggedOutput("failed", FailedClaim(claim, "verify_local", reason))


_plan.fault = _plan_fault


class LocalOutputs(NamedTuple):
    pending: beam.PCollection[GlobalRequest]
    failed: beam.PCollection[FailedClaim]
    usage: beam.PCollection[UsageRecord]
    cache: beam.PCollection[dict]
    claim_sets: beam.PCollection[ClaimSet]  # those whose requests could be built
    dead_letters: beam.PCollection[DeadLetter]


@dataclass(frozen=True)
class VerifyLocalConfig:
    """How local verification schedules its judge calls (validated here, once)."""

    claims_per_call: int = option(
        "--claims-per-call",
        flex=Flex(
            "Claims per local verification call",
            "Check up to N claims of an answer against a window in one judge call. Default: 1 "
            "(the paper's schedule).",
            regexes=("^[1-9][0-9]*$",)),
        default=1, parse=int, metavar="N",
        help="local verification: check up to N claims of an answer against a window in one "
             "judge call (default 1, the paper's schedule)")
    prune_windows: bool = option(  # see transforms/prune.py
        "--prune-windows", "--prune_windows",
        flex=Flex(
            "Prune windows",
            "true: skip a (claim, window) local check when the window shares no content word "
            "or number with the claim (counted as NIC for the OR-join; the global check still "
            "reads the full context). Default: false.",
            regexes=("^(true|false)$",)),
        default=False, kind="flag",
        help="local verification: skip a (claim, window) call when the window shares no "
             "content word or number with the claim (it counts as NIC; the global pass still "
             "reads the full context). Off by default: measure its effect with `rt4chart eval "
             "compare`")

    def __post_init__(self) -> None:
        if self.claims_per_call < 1:
            raise ValueError(f"--claims-per-call must be >= 1, got {self.claims_per_call}")


class VerifyLocal(beam.PTransform):
    """ClaimSet -> GlobalRequest per claim (local label, deciding window) or FailedClaim."""

    def __init__(self, spec: JudgeSpec, streaming: bool = False,
                 join_timeout_s: float = DEFAULT_TIMEOUT_S,
                 config: VerifyLocalConfig = VerifyLocalConfig(),
                 run: RunInfo | None = None, reuse: beam.PCollection | None = None):
        super().__init__()
        self._spec = spec
        self._prune = config.prune_windows  # --prune-windows: see transforms/prune.py
        self._run = run
        self._reuse = reuse
        self._streaming = streaming
        self._timeout_s = join_timeout_s
        self._per_call = config.claims_per_call

    def expand(self, claim_sets: beam.PCollection[ClaimSet]) -> LocalOutputs:
        if self._per_call == 1:
            parts_of, fn = requests_for, _LocalFn(self._spec, run=self._run)
        else:
            parts_of = partial(batch_requests_for, claims_per_call=self._per_call)
            fn = _LocalBatchFn(self._spec, run=self._run)
        built = claim_sets | "Requests" >> GuardedParts("verify_local", parts_of,
                                                        lambda c: c.prepared.trace)
        parts, pruned = built.parts, None
        if self._prune:
            parts, pruned = parts | "PruneWindows" >> PruneWindows()
        judged = parts | "Judge" >> RunJudge(fn, self._reuse)
        results = judged.results if pruned is None else (
            (judged.results, pruned) | "WithPruned" >> beam.Flatten())
        planned = {"head": built.heads, "parts": results} | "Regroup" >> Regroup(
            key_head=lambda c: c.key.trace_id,
            key_part=lambda v: v.trace_id,
            expected=lambda c: len(local_claims(c)) * len(c.prepared.windows),
            join=_plan,
            event_time=lambda c: c.prepared.trace.event_time_us / 1e6,
            streaming=self._streaming, timeout_s=self._timeout_s, tags=("failed",),
        )
        return LocalOutputs(planned.main, planned.failed, judged.usage, judged.cache,
                            built.heads, built.dead_letters)
