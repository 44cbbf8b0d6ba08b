"""`--prune-windows` (opt-in): skip the local calls whose window cannot be about the claim.

Local verification checks every claim against every window. A window that shares no content
word (by a 4-letter stem, as the grounding compares words) and no number with the claim is
taken to be NIC for that claim without asking the judge: the OR-join reads it as "not in this
window", as it would read a judge's NIC. Nothing else changes: the global pass still reads the
full context, and a claim with no content word or number at all is never pruned.

A judge could find a window relevant through a synonym ("resigned" / "stepped down"): on such a
claim pruning can change the local label (CON or ENT found in a window becomes NIC) and so the
hint the global pass gets. Measure the effect with `rt4chart eval` and `rt4chart eval compare`
before turning it on; it is off by default. Calls saved are counted (`rt4chart:
verify_local_pruned`) and reported in the summary.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import NamedTuple

import apache_beam as beam

from rt4chart.schemas.records import Claim, LocalVerdict
from rt4chart.schemas.requests import LocalBatchRequest, LocalRequest
from rt4chart.transforms.common.guard import GuardedDoFn
from rt4chart.transforms.text.terms import relevant, terms

PRUNED_COUNTER = "verify_local_pruned"
PRUNED_NOTE = "pruned: the window shares no content word or number with the claim"

__all__ = ["PRUNED_COUNTER", "PRUNED_NOTE", "PruneWindows", "PrunedRequests", "failed_verdicts",
           "prune", "pruned_verdict", "relevant", "terms"]


def pruned_verdict(request: LocalRequest | LocalBatchRequest, claim: Claim | None = None
                   ) -> LocalVerdict:
    """The NIC verdict of a pruned (claim, window) pair: no call, no usage."""
    c = claim or request.claim
    return LocalVerdict(c.trace_id, c.claim_index, request.window_index, "NIC", "ok", (),
                        PRUNED_NOTE)


def prune(request: LocalRequest | LocalBatchRequest
          ) -> tuple[LocalRequest | LocalBatchRequest | None, list[LocalVerdict]]:
    """The request still to send (None: none) and the verdicts of the pairs pruned from it."""
    window = request.chunk.text
    if isinstance(request, LocalRequest):
        if relevant(request.claim.text, window):
            return request, []
        return None, [pruned_verdict(request)]
    kept = tuple(c for c in request.claims if relevant(c.text, window))
    pruned = [pruned_verdict(request, c) for c in request.claims if c not in kept]
    if not kept:
        return None, pruned
    return dataclasses.replace(request, claims=kept), pruned


def failed_verdicts(request: LocalRequest | LocalBatchRequest, reason: str
                    ) -> list[LocalVerdict]:
    """The failed verdicts of a request whose pruning failed: its claims' windows fail with the
    reason (never NIC: a fault is no verdict), and their answers come out incomplete."""
    claims = (request.claim,) if isinstance(request, LocalRequest) else request.claims
    return [LocalVerdict(c.trace_id, c.claim_index, request.window_index, None, "stage_error",
                         (), reason) for c in claims]


class _PruneFn(GuardedDoFn):
    stage = "prune"

    def fault(self, request, reason: str) -> Iterable:
        for verdict in failed_verdicts(request, reason):
            yield beam.pvalue.TaggedOutput("pruned", verdict)

    def setup(self) -> None:
        self._pruned = beam.metrics.Metrics.counter("rt4chart", PRUNED_COUNTER)

    def process(self, request) -> Iterable:
        kept, verdicts = prune(request)
        if kept is not None:
            yield kept
        for verdict in verdicts:
            yield beam.pvalue.TaggedOutput("pruned", verdict)
        if kept is None:  # a call saved (a multi-claim call with some claims left is smaller)
            self._pruned.inc()


class PrunedRequests(NamedTuple):
    kept: beam.PCollection
    pruned: beam.PCollection[LocalVerdict]


class PruneWindows(beam.PTransform):
    """Local requests -> the requests to send and the NIC verdicts of the pruned pairs."""

    def expand(self, requests: beam.PCollection) -> PrunedRequests:
        out = requests | "Prune" >> beam.ParDo(_PruneFn()).with_outputs("pruned", main="kept")
        return PrunedRequests(out.kept, out.pruned)
