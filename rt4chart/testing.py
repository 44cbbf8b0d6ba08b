"""Assertions for a RAG project's own tests: its answers on a golden set have no hallucinated
claim, or the test fails naming each failing claim with its label and its evidence.

    import rt4chart
    from rt4chart.testing import assert_no_hallucination

    def test_golden_answers_are_grounded(rt4chart_auditor):
        traces = [my_rag.trace(q) for q in GOLDEN_QUESTIONS]
        assert_no_hallucination(rt4chart_auditor.audit(traces))

An answer passes only when it was checked and found grounded: complete, ENT, audited whole,
with at least one claim checked. A contradicted (CON) or unsupported (NIC) answer fails; so do,
unless a keyword flag allows them, one the judge could not finish (incomplete:
`allow_incomplete=True` leaves it out), one audited on its first sentences or claims only
(partial, `--oversize truncate`: `allow_partial=True`), and one none of whose claims asserts
anything checkable (every claim `no_claim`, or none: `allow_no_claim=True`); a record that
could not be audited at all (a dead letter) always fails. None of them says the answer is
grounded. The result (or the answers) is read once, so a generator, `iter(...)` or
`filter(...)` over answers is checked as a list would be.

The `rt4chart_auditor` fixture (a session-wide :class:`rt4chart.Auditor`, judge `auto`:
openai when OPENAI_BASE_URL or OPENAI_API_KEY is set) comes with
`pytest_plugins = ["rt4chart.testing"]` in a conftest.py; override it there for other options.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rt4chart.pipeline.results.runs import AuditResult
    from rt4chart.schemas.results import Answer, Claim

MAX_TEXT = 300  # characters of a claim or an evidence sentence in a message


@dataclass(frozen=True)
class _Allowed:
    incomplete: bool = False
    partial: bool = False
    no_claim: bool = False


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


def _why(answer: Answer, allowed: _Allowed) -> str | None:
    """Why `answer` does not pass ("incomplete", "hallucinated", "partial", "no_claim"), None
    when it passes or is left out (an allowed incomplete answer: `_left_out`)."""
    if not answer.complete:
        return None if allowed.incomplete else "incomplete"
    if answer.label != "ENT":
        return "hallucinated"
    if answer.partial and not allowed.partial:
        return "partial"
    if not any(c.status == "ok" for c in answer.claims) and not allowed.no_claim:
        return "no_claim"
    return None


def _head(answer: Answer, why: str) -> str:
    where = f"- trace {answer.trace_id!r} (route {answer.route!r})"
    if why == "incomplete":
        return (f"{where}: incomplete, not judged: {_short(answer.reason)} "
                "(allow_incomplete=True leaves such answers out)")
    p = "" if answer.probability is None else f", p_hallucinated {answer.probability:.2f}"
    if why == "partial":
        return (f"{where}: {answer.label} on part of the answer only{p}: partial, audited on "
                "its first sentences or claims (--oversize truncate); the rest was never "
                "checked (allow_partial=True accepts it)")
    if why == "no_claim":
        return (f"{where}: {answer.label} with no claim checked{p}: its {len(answer.claims)} "
                "claims assert nothing checkable (no_claim) (allow_no_claim=True accepts it)")
    return f"{where}: {answer.label}{p}"


def _answer_lines(answer: Answer, why: str) -> Iterator[str]:
    yield _head(answer, why)
    claims = answer.claims if why == "no_claim" else answer.failing_claims()
    for claim in claims:
        yield from _claim_lines(claim)


def _read(result: AuditResult | Iterable[Answer]) -> tuple[list[Answer], list]:
    """The answers and dead letters, each read once (a generator is consumed here only)."""
    answers = getattr(result, "answers", None)
    answers = list(result if answers is None else answers)
    return answers, list(getattr(result, "dead_letters", ()))


def _report(answers: list[Answer], dead: list, allowed: _Allowed) -> str:
    failing = [(a, why) for a in answers if (why := _why(a, allowed)) is not None]
    if not failing and not dead:
        return ""
    lines = [f"{len(failing)} of {len(answers)} answers are not grounded"
             + (f"; {len(dead)} records could not be audited" if dead else "") + ":"]
    for answer, why in failing:
        lines.extend(_answer_lines(answer, why))
    for letter in dead:
        lines.append(f"- record not audited (stage {letter.stage}"
                     + (f", trace {letter.trace_id!r}" if letter.trace_id else "")
                     + f"): {_short(letter.reason)}")
    return "\n".join(lines)


def hallucination_report(result: AuditResult | Iterable[Answer], *,
                         allow_incomplete: bool = False, allow_partial: bool = False,
                         allow_no_claim: bool = False) -> str:
    """The failing answers and dead letters of `result` (an `AuditResult`, or any iterable of
    answers, read once), readable: per answer why it fails, then each hallucinated or unjudged
    claim with its evidence; "" when every answer passes (see the module's docstring for what
    passes and what the flags allow)."""
    answers, dead = _read(result)
    return _report(answers, dead, _Allowed(allow_incomplete, allow_partial, allow_no_claim))


def assert_no_hallucination(result: AuditResult | Iterable[Answer], *,
                            allow_incomplete: bool = False, allow_partial: bool = False,
                            allow_no_claim: bool = False) -> None:
    """Fail (AssertionError) unless every answer was checked and is grounded (complete, ENT,
    audited whole, a claim checked; the flags allow incomplete, partial or no_claim-only
    answers) and no record was dead-lettered; the message is :func:`hallucination_report`'s.
    `result` is read once: a generator or `filter(...)` over answers is checked whole."""
    __tracebackhide__ = True  # pytest shows the caller's line
    answers, dead = _read(result)
    allowed = _Allowed(allow_incomplete, allow_partial, allow_no_claim)
    if not answers and not dead:
        raise AssertionError("no answer was audited: nothing says the answers are grounded")
    report = _report(answers, dead, allowed)
    if report:
        raise AssertionError(report)
    if not dead and all(not a.complete for a in answers):
        raise AssertionError(f"none of the {len(answers)} answers was checked (every one is "
                             "incomplete, left out by allow_incomplete=True): nothing says "
                             "the answers are grounded")


def assert_grounded(records: Any, judge: str = "auto", *, allow_incomplete: bool = False,
                    allow_partial: bool = False, allow_no_claim: bool = False,
                    **options: Any) -> AuditResult:
    """Audit `records` (`rt4chart.audit`'s arguments) and :func:`assert_no_hallucination`
    (with the same flags); the result when it passes. A run that judged nothing fails with
    its reasons too."""
    __tracebackhide__ = True
    from rt4chart.pipeline.api import AuditFailed, audit

    flags = {"allow_incomplete": allow_incomplete, "allow_partial": allow_partial,
             "allow_no_claim": allow_no_claim}
    try:
        result = audit(records, judge, **options)
    except AuditFailed as exc:
        raise AssertionError(f"{exc}\n{hallucination_report(exc.result, **flags)}") from None
    assert_no_hallucination(result, **flags)
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
