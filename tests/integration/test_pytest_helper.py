"""`rt4chart.testing` in a RAG project's own test suite: run with pytest in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import golden_traces as gt
from fake_openai_server import FakeOpenAI, lexical_responder

FAKES = Path(__file__).resolve().parents[1] / "fakes"

PROJECT_TEST = '''
import golden_traces as gt
from rt4chart.testing import assert_grounded, assert_no_hallucination

GROUNDED = [gt.trace("q-hours", "faq", gt.GROUNDED)]
GOLDEN = [*GROUNDED, gt.trace("q-open", "faq", gt.CONTRADICTED)]


def test_golden_answers_with_the_fixture(rt4chart_auditor):
    assert_no_hallucination(rt4chart_auditor.audit(GOLDEN))


def test_grounded_answers_pass(rt4chart_auditor):
    assert_no_hallucination(rt4chart_auditor.audit(GROUNDED))


def test_golden_answers_in_one_call():
    assert_grounded(GOLDEN, judge="offline")
'''


@pytest.fixture
def judge_env(monkeypatch):
    """The fixture's judge is `auto`: the openai judge, on a local server."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAI(lexical_responder) as server:
        yield {"OPENAI_BASE_URL": server.base_url,
               "OPENAI_API_KEY": "sk-test-0123456789abcdefghijklmnop"}


def test_a_hallucinated_answer_fails_with_its_claims_and_evidence(tmp_path, judge_env):
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["rt4chart.testing"]\n')
    (tmp_path / "test_rag.py").write_text(PROJECT_TEST)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:bqemulator",
         "test_rag.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(FAKES), **judge_env})
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "2 failed, 1 passed" in out
    assert "FAILED test_rag.py::test_golden_answers_with_the_fixture" in out
    assert "FAILED test_rag.py::test_golden_answers_in_one_call" in out
    report = out.split("AssertionError: ")[1]
    assert report.startswith("1 of 2 answers are not grounded:")
    assert "- trace 'q-open' (route 'faq'): CON" in report
    assert f"claim 0 [CON, fact]: {gt.CONTRADICTED!r}" in report
    assert ("evidence (library-hours, sentence 0): 'The library opens at 8 am on weekdays"
            in report)
    assert "q-hours" not in report.split("\n\n")[0]  # a supported answer is not listed


def test_report_lists_incomplete_answers_and_dead_letters():
    from rt4chart.schemas.results import Answer, Claim
    from rt4chart.schemas.rows import DeadLetterRow
    from rt4chart.testing import assert_no_hallucination, hallucination_report

    unjudged = Claim(0, "Opens at 8.", None, "fact", "judge_error", "judge_error: timeout",
                     None, 0, "Opens at 8.", 0, 11, ())
    answer = Answer("t", "r", None, "incomplete", None, (), (unjudged,), "judge_error: timeout",
                    "m", 1, 0, 0, None, False, False)
    letter = DeadLetterRow(stage="validate", reason="no answer", trace_id="d", route=None,
                           raw="{}", received_at=gt_time(), dead_letter_id="x")

    class Result:
        answers, dead_letters = (answer,), (letter,)

    report = hallucination_report(Result())
    assert report.splitlines()[0] == ("1 of 1 answers are not grounded; 1 records could not be "
                                      "audited:")
    assert "incomplete, not judged: judge_error: timeout" in report
    assert "claim 0 [not judged (judge_error), fact]: 'Opens at 8.'" in report
    assert "evidence: none quoted" in report
    assert "record not audited (stage validate, trace 'd'): no answer" in report
    with pytest.raises(AssertionError, match="nothing says the answers are grounded"):
        assert_no_hallucination([])


def gt_time():
    from datetime import UTC, datetime

    return datetime(2024, 6, 1, tzinfo=UTC)
