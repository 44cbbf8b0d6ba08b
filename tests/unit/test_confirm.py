"""`--confirm-ent` without a pipeline: what is asked, and what the answer does to the verdict."""

from __future__ import annotations

import pytest

from rt4chart.schemas.records import ABSENCE, Claim, ClaimVerdict, Evidence
from rt4chart.transforms.confirm import (
    ConfirmConfig,
    confirmed,
    evidence_text,
    needs_confirmation,
)
from rt4chart.transforms.judges.contract import JudgeSpec

CLAIM = Claim("t", 0, "The free trial includes premium support.", 0, 0, 40)
EVIDENCE = (Evidence("faq", 0, 0, 37, "The free trial includes basic support"),
            Evidence("faq", 2, 0, 19, "Plans renew monthly"))
ENT = ClaimVerdict(CLAIM, ("ENT",), "ENT", 0, "ENT", "ok", EVIDENCE, None, p_unsupported=0.2)


def test_only_an_ent_with_evidence_is_asked_again():
    assert needs_confirmation(ENT)
    assert not needs_confirmation(ENT.__class__(**{**ENT.__dict__, "label": "NIC"}))
    assert not needs_confirmation(ENT.__class__(**{**ENT.__dict__, "evidence": ()}))
    absence = Claim("t", 1, "The passages do not name a price.", 0, 0, 30, kind=ABSENCE)
    assert not needs_confirmation(ENT.__class__(**{**ENT.__dict__, "claim": absence}))


def test_the_judge_sees_only_the_quotes_one_per_line_mapped_to_their_sentences():
    rendered = evidence_text(ENT)
    assert rendered.text == "The free trial includes basic support\nPlans renew monthly"
    assert [(offset, s.index, s.doc_id) for offset, s in rendered.segments] == [
        (0, 0, "faq"), (38, 2, "faq")]


def test_a_confirmed_ent_stands_unchanged():
    assert confirmed(ENT, ("ENT", ["The free trial includes basic support"])) == ENT
    # A quote about something else is no confirmation (grounding, as in verify_global).
    assert confirmed(ENT, ("ENT", ["Plans renew monthly"])).label == "NIC"


def test_an_ent_the_judge_does_not_confirm_is_nic_with_a_note():
    out = confirmed(ENT, ("NIC", []))
    assert (out.label, out.evidence, out.p_unsupported) == ("NIC", (), 1.0)
    assert out.note == ("not confirmed: given only the claim and its evidence the judge said NIC")
    # ENT again, but quoting what the evidence does not hold: not a confirmation.
    out = confirmed(ENT, ("ENT", ["Premium support is included"]))
    assert out.label == "NIC" and out.note.startswith("not confirmed: judge said ENT but")


def test_a_second_judges_disagreement_names_which_judge_said_what():
    judges = ("gpt-4o-mini", "confirm-model")
    assert confirmed(ENT, ("ENT", ["The free trial includes basic support"]), judges) == ENT
    out = confirmed(ENT, ("CON", ["The free trial includes basic support"]), judges)
    assert (out.label, out.evidence) == ("NIC", ())
    assert out.note == ("not confirmed: judges disagree: gpt-4o-mini said ENT, confirming "
                        "judge confirm-model said CON given only the claim and its evidence")
    out = confirmed(ENT, ("ENT", ["Premium support is included"]), judges)
    assert out.label == "NIC" and out.note.startswith(
        "not confirmed: judges disagree: gpt-4o-mini said ENT, confirming judge confirm-model: "
        "judge said ENT but")


def test_confirm_config_builds_the_second_judges_spec_as_the_judge_options_do():
    assert not ConfirmConfig().enabled and ConfirmConfig().judge_spec() is None
    assert ConfirmConfig(confirm_ent=True).enabled
    assert ConfirmConfig(confirm_ent=True).judge_spec() is None  # the same judge
    config = ConfirmConfig(confirm_judge="openai", confirm_judge_option=[
        "model=a", "base_url=http://127.0.0.1:1/v1", "model=b"])
    assert config.enabled  # a confirming judge implies the confirmation
    assert config.judge_spec() == JudgeSpec.of("openai", {
        "model": "b", "base_url": "http://127.0.0.1:1/v1"})  # the last of a key wins
    resolved = JudgeSpec.of("openai", {"model": "b", "negotiated": "1"})
    assert ConfirmConfig(confirm_judge="openai", resolved=resolved).judge_spec() == resolved


@pytest.mark.parametrize("kwargs, message", [
    ({"confirm_judge_option": ("model=x",)}, "--confirm-judge-option needs --confirm-judge"),
    ({"confirm_judge": "openai", "confirm_judge_option": ("model",)}, "expects KEY=VALUE"),
    ({"confirm_judge": "openai", "confirm_judge_option": ("=x",)}, "expects KEY=VALUE"),
    ({"confirm_judge": " "}, "--confirm-judge needs a judge"),
])
def test_confirm_config_refuses_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ConfirmConfig(**kwargs)


def test_a_quoted_json_field_is_grounded_by_its_key_path_as_in_the_global_stage():
    """`"lot": true` alone names no parking: the global stage read its key path in the whole
    record; the confirmation gets that path with the request and applies the same rule."""
    claim = Claim("t", 0, "The business offers customer parking.", 0, 0, 37)
    field = Evidence("biz", 7, 10, 21, '"lot": true')
    verdict = ClaimVerdict(claim, ("ENT",), "ENT", 0, "ENT", "ok", (field,), None,
                           p_unsupported=0.1)
    answer = ("ENT", ['"lot": true'])
    assert confirmed(verdict, answer).label == "NIC"  # the quote alone: no word of the claim
    keys = ((7, frozenset({"business", "parking", "lot"})),)
    assert confirmed(verdict, answer, keys=keys) == verdict
    # The path grounds the quote; it does not make a refusal a confirmation.
    assert confirmed(verdict, ("NIC", []), keys=keys).label == "NIC"
