"""What a judge declares (JudgeTraits) and what its kind answers before it is built
(JudgeKind), for the built-in judges and a custom one; a custom judge's plain answers come out
of the judge `JudgeSpec.build` gives already typed."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from rt4chart.transforms.judges.base import Verdict
from rt4chart.transforms.judges.contract import (
    Judge,
    JudgeKind,
    JudgeSpec,
    JudgeTraits,
    PlainJudge,
    judge_model,
)
from rt4chart.transforms.judges.offline import judge as offline
from rt4chart.transforms.judges.offline import lexical

LOCAL = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}  # nothing listens: none is called


def test_the_built_in_judges_declare_their_traits(tmp_path):
    off = JudgeSpec.of("offline").build()
    assert off.traits == JudgeTraits(model=offline.MODEL, shares_event_loop=True,
                                     verifies_absence=True,
                                     decision_threshold=lexical.P_THRESHOLD,
                                     calibration=offline.CALIBRATION)
    direct = JudgeSpec.of("openai", LOCAL).build()
    assert (direct.traits.model, direct.traits.batches_claims, direct.traits.negotiates,
            direct.traits.shares_limits, direct.traits.batch_api) == ("m", True, True, True,
                                                                      False)
    batch = JudgeSpec.of("openai-batch", {**LOCAL, "batch_state_dir": str(tmp_path)}).build()
    assert (batch.traits.batch_api, batch.traits.shares_limits) == (True, False)
    for name, judge in (("offline", off), ("openai", direct), ("openai-batch", batch)):
        kind = JudgeSpec(name).kind().traits  # a built judge declares its kind's, + its model
        assert dataclasses.replace(judge.traits, model=kind.model) == kind, name


def test_a_custom_judges_kind_is_the_default():
    kind = JudgeSpec.of("fake_judges:obedient").kind()
    assert type(kind) is JudgeKind and not kind.traits.negotiates
    spec = JudgeSpec.of("fake_judges:obedient")
    assert kind.negotiate(spec) == (spec, None) and kind.priced(spec) is None
    with pytest.raises(ValueError, match="reports no USD cost"):
        kind.cap_prices(spec)


def test_the_openai_kinds_answer_from_the_options_alone():
    spec = JudgeSpec.of("openai", {"model": "gpt-4o", "reasoning_chars": "300",
                                   "prompt_tokens_per_s": "900", "output_tokens_per_s": "40"})
    kind = spec.kind()
    assert kind.estimate_basis(spec) == (300, "json_schema_strict", "gpt-4o")
    assert kind.speed(spec).prompt_tps == 900
    assert kind.worker_key(spec) == ("OPENAI_API_KEY", False)
    direct = kind.cap_prices(spec)
    batch_spec = JudgeSpec.of("openai-batch", dict(spec.options))
    assert batch_spec.kind().cap_prices(batch_spec).input < direct.input  # the batch discount
    assert JudgeSpec.of("offline").kind().speed(JudgeSpec.of("offline")) is None


def test_a_custom_judge_is_typed_where_it_is_built():
    judge = JudgeSpec.of("fake_judges:obedient").build()
    assert isinstance(judge, PlainJudge) and isinstance(judge, Judge)
    assert judge.traits.verifies_absence and not judge.traits.shares_event_loop
    assert not judge.traits.batches_claims and judge_model(judge, JudgeSpec()) == "obedient"
    verdict = asyncio.run(judge.verify_local("The sky is blue.", "ctx", "q"))
    assert verdict == Verdict("ENT", ("The sky is blue.",))  # its plain tuple, converted
    many = asyncio.run(judge.verify_local_many(["a", "b"], "ctx", "q"))
    assert many == [Verdict("ENT", ("a",)), Verdict("ENT", ("b",))]
    assert judge.quote == "claim"  # its own attributes read through
