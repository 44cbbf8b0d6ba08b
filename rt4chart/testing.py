"""Assertions for a RAG project's own tests: its answers on a golden set have no hallucinated
claim, or the test fails naming each failing claim with its label and its evidence.

    import rt4chart
    from rt4chart.testing import assert_no_hallucination

    def test_golden_answers_are_grounded(rt4chart_auditor):
        traces = [my_rag.trace(q) for q in GOLDEN_QUESTIONS]
        assert_no_hallucination(rt4chart_auditor.audit(traces))

An answer passes only when it is complete and ENT: a contradicted (CON) or unsupported (NIC)
answer fails, and so does one the judge could not finish (incomplete) and a record that could
not be audited at all (a dead letter), since neither says the answer is grounded.

The `rt4chart_auditor` fixture (a session-wide :class:`rt4chart.Auditor`, judge `auto`:
openai when OPENAI_BASE_URL or OPENAI_API_KEY is set) comes with
`pytest_plugins = ["rt4chart.testing"]` in a conftest.py; override it there for other options.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rt4chart.pipeline.results.runs import AuditResult
    from rt4chart.schemas.results import Answer, Claim

MAX_TEXT = 300  # characters of a claim or an evidence sentence in a message


def _short(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"


def _claim_lines(claim: Claim) -> Iterator[str]:
    label = claim.label or f"not judged ({claim.status})"
    yield f"    claim {claim.index} [{label}, {claim.kind or 'fact'}]: {_short(claim.text)!r}"
    for ev in claim.evidence:
        yield f"      evidence ({ev.doc_id}, sentence {ev.sentence_index}): {_short(ev.text)!r}"
    if not claim.evidence:
        yield "      evidence: none quoted"
    if claim.note:
        yield f"      note: {_short(claim.note)}"


def _answer_lines(answer: Answer) -> Iterator[str]:
    if answer.complete:
        p = "" if answer.probability is None else f", p_hallucinated {answer.probability:.2f}"
        yield f"- trace {answer.trace_id!r} (route {answer.route!r}): {answer.label}{p}"
    else:
        yield (f"- trace {answer.trace_id!r} (route {answer.route!r}): incomplete, not "
               f"judged: {_short(answer.reason)}")
    for claim in answer.failing_claims():
        yield from _claim_lines(claim)


def _failing(answers: Iterable[Answer]) -> list[Answer]:
    return [a for a in answers if not (a.complete and a.label == "ENT")]


def hallucination_report(result: AuditResult | Iterable[Answer]) -> str:
    """The failing answers (not complete and ENT) and dead letters of `result`, readable: per
    answer its label, then each hallucinated or unjudged claim with its evidence; "" when
    every answer is complete and supported."""
    answers = list(getattr(result, "answers", result))
    dead = list(getattr(result, "dead_letters", ()))
    failing = _failing(answers)
    if not failing and not dead:
        return ""
    lines = [f"{len(failing)} of {len(answers)} answers are not grounded"
             + (f"; {len(dead)} records could not be audited" if dead else "") + ":"]
    for answer in failing:
        lines.extend(_answer_lines(answer))
    for letter in dead:
        lines.append(f"- record not audited (stage {letter.stage}"
                     + (f", trace {letter.trace_id!r}" if letter.trace_id else "")
                     + f"): {_short(letter.reason)}")
    return "\n".join(lines)


def assert_no_hallucination(result: AuditResult | Iterable[Answer]) -> None:
    """Fail (AssertionError) unless every answer is complete and ENT and no record was
    dead-lettered; the message is :func:`hallucination_report`'s."""
    __tracebackhide__ = True  # pytest shows the caller's line
    answers = list(getattr(result, "answers", result))
    if not answers and not list(getattr(result, "dead_letters", ())):
        raise AssertionError("no answer was audited: nothing says the answers are grounded")
    report = hallucination_report(result)
    if report:
        raise AssertionError(report)


def assert_grounded(records: Any, judge: str = "auto", **options: Any) -> AuditResult:
    """Audit `records` (`rt4chart.audit`'s arguments) and :func:`assert_no_hallucination`;
    the result when it passes. A run that judged nothing fails with its reasons too."""
    __tracebackhide__ = True
    from rt4chart.pipeline.api import AuditFailed, audit

    try:
        result = audit(records, judge, **options)
    except AuditFailed as exc:
        raise AssertionError(f"{exc}\n{hallucination_report(exc.result)}") from None
    assert_no_hallucination(result)
    return result


try:
    import pytest
except ImportError:  # the assertions work without pytest; only the fixture needs it
    pytest = None

if pytest is not None:

    @pytest.fixture(scope="session")
    def rt4chart_auditor():
        """A session-wide Auditor (judge auto); override this fixture for other options."""
        from rt4chart.pipeline.api import Auditor

        with Auditor() as auditor:
            yield auditor
