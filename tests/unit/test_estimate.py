"""The estimator's rules, on hand-made traces: calls per stage for the schedule options, the
prompt and reply sizes they follow, and prices (batch discount, unknown price)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rt4chart import prompts
from rt4chart.schemas.records import Document, Trace
from rt4chart.transforms.estimate import EstimateConfig, estimate_trace, expected_calls
from rt4chart.transforms.judges.offline import claims as lexical_claims
from rt4chart.transforms.judges.openai.pricing import Prices, PriceTable
from rt4chart.transforms.judges.prompt_tokens import PromptTokens
from rt4chart.transforms.segment import SegmentConfig, make_windows, prepare

ANSWER = "The bridge opened in 1932. It cost nine million dollars. Tolls were never charged."
DOCS = (Document("a", "The harbour bridge opened in 1932 after eight years of work. "
                      "Its steel came from England. Workers painted it grey."),
        Document("b", "The bridge cost nine million dollars in total. Tolls were charged "
                      "until 1990. Ferries ran before it opened. Trams crossed it too."))


def prepared(window_size: int = 3, overlap: int = 1, answer: str = ANSWER, docs=DOCS):
    trace = Trace("t", "r", 1_700_000_000_000_000, "When did the bridge open?", docs, answer)
    return prepare(trace, SegmentConfig(window_size, overlap))


def claims_of(p) -> list[str]:
    return [c.text for s in p.answer_sentences for c in lexical_claims.decompose_claims(s.text)
            if c.kind != "absence"]


@pytest.mark.parametrize(("size", "overlap"), [(1, 0), (2, 1), (3, 1), (25, 10)])
def test_local_calls_are_claims_times_windows_for_w_and_o(size, overlap):
    p = prepared(size, overlap)
    est = estimate_trace(p)
    assert est.windows == len(make_windows(len(p.sentences), size, overlap)) == len(p.windows)
    assert est.stages["decompose"].calls == len(p.answer_sentences)
    assert est.stages["verify_local"].calls == len(claims_of(p)) * len(p.windows)
    assert est.stages["verify_global"].calls == est.claims


@pytest.mark.parametrize("per_call", [2, 3, 50])
def test_claims_per_call_packs_each_windows_claims_in_groups(per_call):
    p = prepared(2, 1)
    n = len(claims_of(p))
    assert n >= 3
    one = estimate_trace(p)
    packed = estimate_trace(p, EstimateConfig(claims_per_call=per_call))
    assert packed.stages["verify_local"].calls == math.ceil(n / per_call) * len(p.windows)
    # Fewer prompts repeat the window: fewer input tokens; global and decompose unchanged.
    assert packed.stages["verify_local"].input_tokens < one.stages["verify_local"].input_tokens
    assert packed.stages["verify_global"] == one.stages["verify_global"]


def test_prune_windows_skips_the_pairs_with_no_shared_term():
    docs = (Document("a", "The bridge cost nine million dollars."),
            Document("b", "Penguins swim in cold water."))
    p = prepared(1, 0, answer="The bridge cost nine million dollars.", docs=docs)
    assert len(p.windows) == 2 and len(claims_of(p)) == 1
    assert estimate_trace(p).stages["verify_local"].calls == 2
    assert estimate_trace(p, EstimateConfig(prune_windows=True)).stages["verify_local"].calls == 1


def test_input_tokens_are_the_judges_estimate_of_the_rendered_prompt():
    p = prepared(25, 10, answer="The bridge opened in 1932.")
    est = estimate_trace(p, EstimateConfig())
    user = prompts.render("decompose_user.txt", question=p.trace.question, answer=p.trace.answer,
                          sentence=p.answer_sentences[0].text)
    expected = PromptTokens().estimate([prompts.load("decompose_system.txt"), user])
    assert est.stages["decompose"].input_tokens == expected


def test_a_schema_in_the_system_message_costs_input_tokens():
    p = prepared()
    native = estimate_trace(p, EstimateConfig(structured="json_schema_strict"))
    in_prompt = estimate_trace(p, EstimateConfig(structured="json_object"))
    schema_tokens = len(json.dumps(prompts.schema("decompose"))) // 4
    extra = (in_prompt.stages["decompose"].input_tokens
             - native.stages["decompose"].input_tokens) / len(p.answer_sentences)
    assert extra >= schema_tokens * 0.8
    assert in_prompt.stages["decompose"].calls == native.stages["decompose"].calls


def test_reasoning_is_counted_as_its_bound_times_the_fill():
    p = prepared()
    calls = estimate_trace(p).total.calls
    none = estimate_trace(p, EstimateConfig(reasoning_chars=0)).total.output_tokens
    half = estimate_trace(p, EstimateConfig(reasoning_chars=400, reasoning_fill=0.5))
    full = estimate_trace(p, EstimateConfig(reasoning_chars=400, reasoning_fill=1.0))
    assert half.total.output_tokens - none == pytest.approx(calls * (200 + 16) / 4, rel=0.05)
    assert full.total.output_tokens - half.total.output_tokens == pytest.approx(
        calls * 200 / 4, rel=0.05)
    with pytest.raises(ValueError, match="reasoning_fill"):
        EstimateConfig(reasoning_fill=1.5)


def test_evidence_quotes_cost_output_tokens():
    supported = prepared(25, 10, answer="The bridge cost nine million dollars.")
    unrelated = prepared(25, 10, answer="Penguins swim in cold water.")
    s = estimate_trace(supported, EstimateConfig(reasoning_chars=0)).stages["verify_global"]
    u = estimate_trace(unrelated, EstimateConfig(reasoning_chars=0)).stages["verify_global"]
    assert s.calls == u.calls == 1
    assert s.output_tokens > u.output_tokens + len("The bridge cost nine million dollars") // 4


def test_confirm_ent_adds_a_call_per_claim_with_a_likely_quote_only_when_on():
    p = prepared(25, 10, answer="The bridge cost nine million dollars. Penguins swim fast.")
    assert "confirm" not in estimate_trace(p).stages
    on = estimate_trace(p, EstimateConfig(confirm_ent=True))
    assert on.claims == 2 and on.stages["confirm"].calls == 1


def test_usd_batch_discount_and_unpriced_model():
    est = estimate_trace(prepared())
    table = PriceTable({"m": Prices(1.0, 0.5, 4.0)}, batch_discount=0.5)
    total = est.total
    usd = est.usd("m", table)
    assert usd == pytest.approx((total.input_tokens * 1.0 + total.output_tokens * 4.0) / 1e6)
    assert est.usd("m", table, batch_api=True) == pytest.approx(usd * 0.5)
    assert est.usd("m-2024-07-18", table) == pytest.approx(usd)  # a dated snapshot
    assert est.usd("unpriced-model", table) is None  # unknown, not free


def test_sums_add_counts_and_stages():
    a, b = estimate_trace(prepared(2, 1)), estimate_trace(prepared(3, 1))
    s = a + b
    assert (s.traces, s.claims, s.windows) == (2, a.claims + b.claims, a.windows + b.windows)
    assert s.total.calls == a.total.calls + b.total.calls


SENTENCES = ("The bridge opened in 1932.", "It cost nine million dollars.",
             "Tolls were never charged.", "The bridge does not carry trains.",
             "Penguins swim in cold water.", "Its steel came from England and it is grey.")


@settings(max_examples=40, deadline=None)
@given(answer=st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=4),
       size=st.integers(1, 4), overlap=st.integers(0, 3), per_call=st.integers(1, 5),
       prune=st.booleans(), confirm=st.booleans())
def test_expected_calls_are_the_estimates_calls(answer, size, overlap, per_call, prune, confirm):
    """What a run's progress expects of a trace is what `--estimate` counts, for every option
    that changes the calls."""
    p = prepared(size, min(overlap, size - 1), answer=" ".join(answer))
    config = EstimateConfig(claims_per_call=per_call, prune_windows=prune, confirm_ent=confirm)
    assert expected_calls(p, config) == estimate_trace(p, config).total.calls


def test_an_empty_retrieval_is_expected_to_take_its_decompositions_only():
    """Its claims are decided without a global call (verify_global.unretrieved_verdict): the
    progress ETA's count and the estimate say so, as the run does."""
    from rt4chart.transforms.estimate import EstimateConfig, estimate_trace, expected_calls
    from rt4chart.transforms.segment import SegmentConfig, prepare
    from rt4chart.transforms.validate import parse_trace

    answer = "The store opens at 9 am. It closes at 6 pm."
    empty = prepare(parse_trace({"trace_id": "e", "answer": answer, "contexts": []}),
                    SegmentConfig())
    full = prepare(parse_trace({"trace_id": "f", "answer": answer,
                                "contexts": ["The store opens at 9 am."]}), SegmentConfig())
    sentences = len(empty.answer_sentences)
    assert sentences == 2
    assert expected_calls(empty) == estimate_trace(empty, EstimateConfig()).total.calls == 2
    assert expected_calls(full) > sentences
