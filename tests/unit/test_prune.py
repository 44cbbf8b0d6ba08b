"""--prune-windows: which (claim, window) pairs are skipped, and the OR-join over what is left."""

from __future__ import annotations

import asyncio

from rt4chart.schemas.records import Document, LocalVerdict, Trace
from rt4chart.schemas.usage import Usage
from rt4chart.transforms.decompose import _DecomposeFn, number_claims
from rt4chart.transforms.decompose import requests_for as decompose_requests
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.offline.judge import OfflineJudge
from rt4chart.transforms.prune import PRUNED_NOTE, prune, relevant
from rt4chart.transforms.segment import SegmentConfig, prepare
from rt4chart.transforms.verify_local import batch_requests_for, plan_global, requests_for

CONTEXT = ("The museum opened in 1998 on the harbour front. "
           "Tickets cost 12 euros for adults. "
           "The café serves breakfast and lunch.")
ANSWER = "The museum opened in 1998. Tickets cost 15 euros."
TRACE = Trace("t", "r", 0, "Tell me about the museum.", (Document("d", CONTEXT),), ANSWER)
PREPARED = prepare(TRACE, SegmentConfig(1, 0))  # one window per context sentence


def _claim_set():
    fn = _DecomposeFn(JudgeSpec())
    results = []
    for request in decompose_requests(PREPARED):
        stored = asyncio.run(fn.call(OfflineJudge(), request))
        results += fn.on_result(request, stored, Usage())
    return number_claims(PREPARED, results)


CLAIM_SET = _claim_set()


def test_relevance_by_content_word_stem_or_number():
    assert relevant("The museum opened in 1998.", "Museums open late.")  # stem "muse"
    assert relevant("It happened in 1998.", "Founded 1998, it grew.")  # a number
    assert not relevant("The museum opened in 1998.", "The café serves breakfast and lunch.")
    assert relevant("It is so.", "Anything at all.")  # no content word: never pruned
    assert not relevant("Tickets cost 15 euros.", "The café serves breakfast and lunch.")


def test_pruned_pairs_are_nic_and_the_or_join_reads_them_so():
    requests = list(requests_for(CLAIM_SET))
    kept, pruned = [], []
    for request in requests:
        sent, verdicts = prune(request)
        kept += [sent] if sent is not None else []
        pruned += verdicts
    claims = {c.claim_index: c.text for c in CLAIM_SET.claims}
    assert len(claims) == 2 and len(requests) == 6
    # Each claim keeps the windows that share something with it; the café window goes.
    assert sorted((r.claim.claim_index, r.window_index) for r in kept) == [(0, 0), (1, 1)]
    assert all(p.label == "NIC" and p.status == "ok" and p.note == PRUNED_NOTE
               and p.usage == Usage() for p in pruned)
    assert {(p.claim_index, p.window_index) for p in pruned} | {
        (r.claim.claim_index, r.window_index) for r in kept} == {
        (c, w) for c in claims for w in range(3)}
    # The judge answers the kept pairs; the OR-join sees the pruned ones as NIC.
    judged = [LocalVerdict("t", 0, 0, "ENT", "ok"), LocalVerdict("t", 1, 1, "CON", "ok")]
    plans = {p.claim.claim_index: p for p in plan_global(CLAIM_SET, judged + pruned)}
    museum, tickets = plans[0], plans[1]
    assert (museum.local_label, museum.deciding_window) == ("ENT", 0)
    assert museum.window_labels == ("ENT", "NIC", "NIC")
    assert (tickets.local_label, tickets.deciding_window) == ("CON", 1)
    assert museum.context.text == plans[1].context.text  # the global pass reads it all


def test_a_claim_pruned_everywhere_is_nic_locally_and_still_checked_globally():
    requests = list(requests_for(CLAIM_SET))
    verdicts = [LocalVerdict("t", r.claim.claim_index, r.window_index, "NIC", "ok", (),
                             PRUNED_NOTE) for r in requests]
    plans = list(plan_global(CLAIM_SET, verdicts))
    assert [(p.local_label, p.deciding_window, p.hint) for p in plans] == [
        ("NIC", None, None)] * 2


def test_multi_claim_requests_lose_only_their_unrelated_claims():
    batches = list(batch_requests_for(CLAIM_SET, 4))
    assert len(batches) == 3
    by_window = {b.window_index: prune(b) for b in batches}
    sent, pruned = by_window[2]  # the café window: every claim pruned, no call
    assert sent is None and len(pruned) == 2
    sent, pruned = by_window[0]  # the museum window keeps the museum claim only
    assert [c.claim_index for c in sent.claims] == [0]
    assert [(p.claim_index, p.window_index) for p in pruned] == [(1, 0)]
