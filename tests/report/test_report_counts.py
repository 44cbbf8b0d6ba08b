"""`rt4chart report`'s closing line and its overview count answers the same way."""

from __future__ import annotations

from types import SimpleNamespace

from rt4chart.pipeline.cli.report import report_line
from rt4chart.pipeline.report.page import _stats


def _answer(tid: str, status: str, label: str | None, hallucinated: bool | None) -> dict:
    return {"trace_id": tid, "status": status, "label": label, "hallucinated": hallucinated,
            "cost_usd": None}


def test_the_closing_line_agrees_with_the_overview():
    # An incomplete answer with a label, as runs before 'incomplete carries no label' wrote it.
    answers = [_answer("a", "incomplete", "CON", True), _answer("b", "ok", "ENT", False),
               _answer("c", "incomplete", None, None)]
    stats = dict(_stats(SimpleNamespace(answers=answers, claims=[])))
    assert stats["Hallucinated"] == "0 (0.0%)"
    assert report_line("r.html", answers) == "report: r.html (3 answers, 1 complete, " \
                                             "0 hallucinated)"
    answers.append(_answer("d", "ok", "NIC", True))
    stats = dict(_stats(SimpleNamespace(answers=answers, claims=[])))
    assert stats["Hallucinated"].startswith("1 ")
    assert report_line("r.html", answers).endswith("2 complete, 1 hallucinated)")
