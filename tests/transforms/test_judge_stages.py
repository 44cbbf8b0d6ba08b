"""Each judge stage on its own under TestPipeline (issue 49): DecomposeClaims, VerifyLocal,
VerifyGlobal, ConfirmEnt and RunJudge, with a picklable custom judge (tests/fakes/rule_judge.py,
loaded as `rule_judge:RuleJudge` through the public judge contract: a real judge kind, built
in the worker's `setup()`).

The expected outputs are worked out here from the inputs (the context sentences, the windows,
the claims) by the judge's published rules and the stage's contract (the OR-join, one result
per request, a failed call is a failure and never a label), not read off a run. Each stage's
failure path is asserted too: a call that fails leaves its claim failed or without a label
(`judge_error`), never ENT; a record the stage cannot take is a dead letter.
"""

from __future__ import annotations

from dataclasses import replace

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from rule_judge import RuleCallFn, RuleRequest

from rt4chart.schemas.records import (
    ABSENCE,
    Claim,
    ClaimSet,
    ClaimVerdict,
    Document,
    Evidence,
    RunInfo,
    Trace,
    TraceKey,
    Window,
)
from rt4chart.schemas.requests import GlobalRequest
from rt4chart.schemas.rows import JudgeCacheRow
from rt4chart.transforms.common.limits import LimitsConfig
from rt4chart.transforms.confirm import ConfirmEnt
from rt4chart.transforms.decompose import DecomposeClaims
from rt4chart.transforms.judge_stage import RunJudge
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.reuse import cache_key, cache_row
from rt4chart.transforms.segment import SegmentConfig, prepare, render_context
from rt4chart.transforms.verify_global import VerifyGlobal
from rt4chart.transforms.verify_local import VerifyLocal

JUDGE = JudgeSpec.of("rule_judge:RuleJudge")
RUN = RunInfo("rule", "prompts-h")
DOWN = "RuleJudgeDown"  # in the reason of every call the judge failed

# One sentence per line: the judge's rules read lines (see rule_judge.py).
CONTEXT = "\n".join([
    "Tokyo is the capital of Japan.",
    "Kyoto is an old city.",
    "Osaka is known for its food.",
    "Nagoya is home to a large castle.",
    "Sapporo is famous for snow.",
])
SEGMENT = SegmentConfig(window_size=2, window_overlap=0)

ENTAILED = "Tokyo is the capital of Japan."
CONTRADICTED = "Osaka is not known for its food."
BASELESS = "Kobe is a port city."
BROKEN = "The BROKEN claim is about Kyoto."  # every call about it fails
ABSENT = "The passages do not say when Kobe was founded."


def _prepared(trace_id: str, answer: str):
    trace = Trace(trace_id, "r", 1_717_200_000_000_000, "What do we know about Japan?",
                  (Document("d1", CONTEXT),), answer)
    return prepare(trace, SEGMENT)


def _label(claim: str, texts: list[str]) -> str:
    """The judge's label for a claim against some context sentences (its published rule)."""
    if claim in texts:
        return "ENT"
    if any(claim == t.replace(" is ", " is not ", 1) for t in texts):
        return "CON"
    return "NIC"


def _or_join(labels: list[str]) -> tuple[str, int | None]:
    """CON if a window contradicts, else ENT if one entails, else NIC; with the first window
    that says so."""
    for wanted in ("CON", "ENT"):
        if wanted in labels:
            return wanted, labels.index(wanted)
    return "NIC", None


def _claim_set(trace_id: str, claims: list[tuple[str, str]]) -> ClaimSet:
    """A claim set of the given (text, kind) claims, one per answer sentence."""
    prepared = _prepared(trace_id, " ".join(text for text, _ in claims))
    numbered = tuple(
        Claim(trace_id, i, text, s.index, s.start, s.end, kind)
        for i, ((text, kind), s) in enumerate(zip(claims, prepared.answer_sentences, strict=True)))
    return ClaimSet(prepared, numbered)


def _usage_of(records) -> beam.PCollection:
    return records | beam.Map(lambda u: (u.trace_id, u.judge_model, u.usage.calls))


def test_the_context_is_what_the_expectations_assume():
    # The expectations below index context sentences and windows: one sentence per line.
    prepared = _prepared("t", ENTAILED)
    assert [s.text for s in prepared.sentences] == CONTEXT.split("\n")
    assert [(w.first, w.last) for w in prepared.windows] == [(0, 1), (2, 3), (4, 4)]


def test_decompose_claims_numbers_claims_and_fails_a_sentence_whose_call_failed():
    good = _prepared("t-good", f"{ENTAILED} {CONTRADICTED} {BASELESS}")
    broken = _prepared("t-broken", f"{ENTAILED} {BROKEN}")
    over = _prepared("t-over", f"{ENTAILED} {CONTRADICTED} {BASELESS} Kyoto is an old city.")
    traces = [good, broken, over]
    limits = LimitsConfig(max_claims_per_answer=3)

    def expected_claims(prepared):
        # The judge gives each sentence back as its one claim; a failed sentence is a failed
        # claim (stage decompose), numbered in answer order with the others.
        ok = [s for s in prepared.answer_sentences if "BROKEN" not in s.text]
        failed = [s for s in prepared.answer_sentences if "BROKEN" in s.text]
        return (prepared.trace.trace_id,
                tuple((s.index, s.text, s.index) for s in ok),
                tuple((s.index, s.text, "decompose", True) for s in failed))

    expected = [expected_claims(p) for p in traces
                if len(p.answer_sentences) <= limits.max_claims_per_answer]
    calls = [(p.trace.trace_id, "rule", 1) for p in traces for _ in p.answer_sentences]
    cached = sum("BROKEN" not in s.text for p in traces for s in p.answer_sentences)
    assert len(expected) == 2 and cached == 8  # the case covers both paths

    with TestPipeline() as p:
        out = (p | beam.Create(traces)
               | DecomposeClaims(JUDGE, run=RUN, limits=limits))
        assert_that(out.claim_sets | "Claims" >> beam.Map(lambda cs: (
            cs.prepared.trace.trace_id,
            tuple((c.claim_index, c.text, c.sentence_index) for c in cs.claims),
            tuple((f.claim.claim_index, f.claim.text, f.stage, DOWN in f.reason)
                  for f in cs.failed))), equal_to(expected))
        assert_that(out.dead_letters | "Dead" >> beam.Map(
            lambda d: (d.stage, d.trace_id, "max_claims_per_answer" in d.reason)),
            equal_to([("decompose", "t-over", True)]), label="DeadLetters")
        assert_that(_usage_of(out.usage), equal_to(calls), label="Usage")
        assert_that(out.cache | "Cached" >> beam.Map(lambda row: row.stage),
                    equal_to(["decompose"] * cached), label="Cache")


def test_verify_local_or_joins_the_windows_and_fails_a_claim_whose_calls_failed():
    claim_set = _claim_set("t-local", [(ENTAILED, "fact"), (CONTRADICTED, "fact"),
                                       (BASELESS, "fact"), (BROKEN, "fact"), (ABSENT, ABSENCE)])
    # A claim set whose window cannot be rendered (a window without its last sentence).
    bad = _claim_set("t-bad", [(ENTAILED, "fact")])
    bad = replace(bad, prepared=replace(bad.prepared, windows=(Window(0, 0, None),)))
    prepared = claim_set.prepared

    pending, failed = [], []
    for claim in claim_set.claims:
        if claim.kind == ABSENCE:  # no window can show an absence: straight to global
            pending.append((claim.claim_index, (), None, None))
        elif "BROKEN" in claim.text:
            failed.append((claim.claim_index, "verify_local", True))
        else:
            labels = [_label(claim.text, [s.text for s in prepared.sentences[w.first:w.last + 1]])
                      for w in prepared.windows]
            pending.append((claim.claim_index, tuple(labels), *_or_join(labels)))
    assert {p[2] for p in pending} == {"ENT", "CON", "NIC", None}
    windows = len(prepared.windows)

    with TestPipeline() as p:
        out = p | beam.Create([claim_set, bad]) | VerifyLocal(JUDGE)
        assert_that(out.pending | "Pending" >> beam.Map(lambda r: (
            r.claim.claim_index, r.window_labels, r.local_label, r.deciding_window)),
            equal_to(pending))
        assert_that(out.failed | "Failed" >> beam.Map(lambda f: (
            f.claim.claim_index, f.stage, f.reason.startswith(f"{windows} of {windows} windows "
                                                              f"failed: {DOWN}"))),
            equal_to(failed), label="Failed")
        assert_that(out.claim_sets | "Heads" >> beam.Map(lambda c: c.key.trace_id),
                    equal_to(["t-local"]), label="ClaimSets")
        assert_that(out.dead_letters | "Dead" >> beam.Map(lambda d: (d.stage, d.trace_id)),
                    equal_to([("verify_local", "t-bad")]), label="DeadLetters")
        # One call per (claim checked locally, window); none for the absence claim.
        assert_that(_usage_of(out.usage), equal_to([("t-local", "rule", 1)] * 4 * windows),
                    label="Usage")


def _global_requests(trace_id: str, texts: list[str]) -> list[GlobalRequest]:
    claim_set = _claim_set(trace_id, [(t, "fact") for t in texts])
    context = render_context(claim_set.prepared)
    return [GlobalRequest(claim_set.key, c, ("NIC",), "NIC", None, context, None,
                          claim_set.prepared.trace.question) for c in claim_set.claims]


def _expected_global(request: GlobalRequest) -> tuple:
    """(claim index, label, status, evidence sentence indices): the judge's rule against the
    whole context, its quote grounded in the sentence it names; a failed call has no label."""
    claim = request.claim
    if "BROKEN" in claim.text:
        return claim.claim_index, None, "judge_error", ()
    sentences = [s for _, s in request.context.segments]
    label = _label(claim.text, [s.text for s in sentences])
    quoted = tuple(s.index for s in sentences if label != "NIC" and claim.text in (
        s.text, s.text.replace(" is ", " is not ", 1)))
    return claim.claim_index, label, "ok", quoted


def test_verify_global_grounds_the_verdict_and_a_failed_call_is_never_a_label():
    requests = _global_requests("t-global", [ENTAILED, CONTRADICTED, BASELESS, BROKEN])
    expected = [_expected_global(r) for r in requests]
    assert [e[1] for e in expected] == ["ENT", "CON", "NIC", None]

    with TestPipeline() as p:
        out = p | beam.Create(requests) | VerifyGlobal(JUDGE, run=RUN)
        verdicts = out.verdicts
        assert_that(verdicts | "Verdicts" >> beam.Map(lambda v: (
            v.claim.claim_index, v.label, v.status, tuple(e.sentence_index for e in v.evidence))),
            equal_to(expected))
        assert_that(verdicts | beam.Filter(lambda v: v.status != "ok")
                    | "Notes" >> beam.Map(lambda v: v.note.startswith(f"verify_global: {DOWN}")),
                    equal_to([True]), label="FailedNote")
        assert_that(_usage_of(out.usage), equal_to([("t-global", "rule", 1)] * 4),
                    label="Usage")
        assert_that(out.cache | "Cached" >> beam.Map(lambda row: row.stage),
                    equal_to(["verify_global"] * 3), label="Cache")


def _verdict(index: int, claim: str, label: str, quoted: list[int], kind: str = "fact"
             ) -> ClaimVerdict:
    """A verdict as global verification leaves it, quoting context sentences by index."""
    lines = CONTEXT.split("\n")
    starts = [sum(len(line) + 1 for line in lines[:i]) for i in range(len(lines))]
    evidence = tuple(Evidence("d1", i, starts[i], starts[i] + len(lines[i]), lines[i])
                     for i in quoted)
    return ClaimVerdict(Claim("t-confirm", index, claim, index, 0, len(claim), kind), (label,),
                        label, 0, label, "ok", evidence, None)


def test_confirm_ent_keeps_an_ent_only_when_its_evidence_says_it_again():
    key = TraceKey("t-confirm", "r", "2024-06-01")
    verdicts = [
        _verdict(0, ENTAILED, "ENT", [0]),  # its evidence is the claim: confirmed
        _verdict(1, ENTAILED, "ENT", [1]),  # its evidence says something else: NIC
        _verdict(2, BROKEN, "ENT", [1]),  # the confirming call fails: no label
        _verdict(3, BASELESS, "NIC", []),
        _verdict(4, CONTRADICTED, "CON", [2]),
        _verdict(5, ABSENT, "ENT", [], ABSENCE),  # an absence has no quote to confirm with
    ]

    def expected(v: ClaimVerdict) -> tuple:
        if not (v.label == "ENT" and v.evidence and v.claim.kind != ABSENCE):
            return v.claim.claim_index, v.label, v.status, len(v.evidence), v.note
        if "BROKEN" in v.claim.text:
            return v.claim.claim_index, None, "judge_error", 0, "confirm"
        if v.claim.text in [e.text for e in v.evidence]:
            return v.claim.claim_index, "ENT", "ok", len(v.evidence), v.note
        return v.claim.claim_index, "NIC", "ok", 0, "not confirmed"

    asked = sum(v.label == "ENT" and bool(v.evidence) for v in verdicts)

    def note_head(note: str | None) -> str | None:
        return note if note is None else note.split(":")[0]

    with TestPipeline() as p:
        out = (p | beam.Create([(key, v, ()) for v in verdicts])
               | ConfirmEnt(JUDGE, RUN))
        assert_that(out.verdicts | beam.Map(lambda v: (
            v.claim.claim_index, v.label, v.status, len(v.evidence), note_head(v.note))),
            equal_to([expected(v) for v in verdicts]))
        assert_that(_usage_of(out.usage), equal_to([("t-confirm", "rule", 1)] * asked),
                    label="Usage")


def test_run_judge_gives_one_result_per_request_and_replays_what_an_earlier_run_stored():
    key = TraceKey("t-run", "r", "2024-06-01")
    requests = [RuleRequest(key, ENTAILED, CONTEXT), RuleRequest(key, BASELESS, CONTEXT),
                RuleRequest(key, BROKEN, CONTEXT),
                RuleRequest(key, f"{BROKEN} Again.", CONTEXT)]
    # An earlier run answered the last request: it is replayed, the judge is not asked (it
    # would fail), and the stored answer goes through the stage's own handling.
    stored = cache_row(cache_key("rule_call", RUN, (requests[-1].claim, CONTEXT)), "rule_call",
                       RUN, ["CON", [], None])
    assert isinstance(stored, JudgeCacheRow)
    expected = []
    for r in requests[:-1]:
        label = None if "BROKEN" in r.claim else _label(r.claim, CONTEXT.split("\n"))
        expected.append((r.claim, label, label is None))
    expected.append((requests[-1].claim, "CON", False))

    with TestPipeline() as p:
        reuse = p | "Earlier" >> beam.Create([stored])
        out = p | beam.Create(requests) | RunJudge(RuleCallFn(JUDGE, run=RUN), reuse)
        assert_that(out.results | beam.Map(lambda r: (
            r[1], r[2], r[3] is not None and r[3].startswith(DOWN))), equal_to(expected))
        # One usage record per request: three calls made, one answer reused at no call.
        assert_that(out.usage | beam.Map(lambda u: (u.usage.calls, u.usage.reused)),
                    equal_to([(1, 0)] * 3 + [(0, 1)]), label="Usage")
        # Cache rows of what was answered: the two calls that succeeded and the replay.
        assert_that(out.cache | "Cached" >> beam.Map(lambda row: row.stage),
                    equal_to(["rule_call"] * 3), label="Cache")
