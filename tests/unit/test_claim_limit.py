"""max_claims_per_answer, checked where claims are numbered."""

from __future__ import annotations

from rt4chart.schemas.records import DeadLetter, DecomposeResult, Document, PlacedClaim, Trace
from rt4chart.transforms.common.limits import LimitsConfig
from rt4chart.transforms.decompose import limit_claims, number_claims
from rt4chart.transforms.segment import SegmentConfig, prepare

TRACE = Trace("t", "r", 0, "q", (Document("d", "A one. B two."),), "Alpha beta. Gamma. Delta.")
PREPARED = prepare(TRACE, SegmentConfig(2, 1))
RESULTS = [DecomposeResult("t", 0, (PlacedClaim("Alpha"), PlacedClaim("beta")), "ok"),
           DecomposeResult("t", 1, (), "judge_error", "boom"),
           DecomposeResult("t", 2, (PlacedClaim("Delta"),), "ok")]
CLAIM_SET = number_claims(PREPARED, RESULTS)  # claims 0, 1, 3; failed 2


def test_within_the_limit_the_claim_set_is_unchanged():
    assert limit_claims(CLAIM_SET, LimitsConfig(max_claims_per_answer=4)) is CLAIM_SET


def test_over_the_limit_with_reject_is_one_dead_letter_naming_the_limit():
    dead = limit_claims(CLAIM_SET, LimitsConfig(max_claims_per_answer=3))
    assert isinstance(dead, DeadLetter)
    assert (dead.stage, dead.trace_id, dead.route) == ("decompose", "t", "r")
    assert dead.reason == "over limit max_claims_per_answer=3: the answer has 4 claims"


def test_over_the_limit_with_truncate_keeps_the_first_claims_and_marks_partial():
    cut = limit_claims(CLAIM_SET, LimitsConfig(max_claims_per_answer=3, oversize="truncate"))
    assert [c.text for c in cut.claims] == ["Alpha", "beta"]
    assert [f.claim.claim_index for f in cut.failed] == [2]
    assert cut.prepared.partial
    assert cut.prepared.partial_reason == ("over limit max_claims_per_answer=3: the answer has 4 "
                                           "claims; audited the first 3 claims")
    assert not CLAIM_SET.prepared.partial
