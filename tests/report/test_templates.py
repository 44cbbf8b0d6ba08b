"""The report's templates: every part escapes trace content, a missing value fails the render,
and the templates ship with the package."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest
from hostile_run import EVIL, evil, hostile_run
from jinja2 import UndefinedError
from report_dom import parse

from rt4chart.pipeline.report.page import render
from rt4chart.pipeline.report.templating import macro
from rt4chart.pipeline.report.templating import render as render_template
from rt4chart.pipeline.report.trace_view import anchor, trace_data

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "pipeline" / "report" / "templates"


@pytest.fixture(scope="module")
def dom():
    after = hostile_run()
    before = hostile_run(out_dir=evil("before_dir"), label="ENT")
    return parse(render(after, before, title=evil("title")))


def _texts(dom, **where) -> str:
    return " ".join(el.text for el in dom.find_all(**where))


# (where on the page, the fields shown there): one row per template part.
PARTS = [
    ("page.html", {"tag": "header"}, ["title", "out_dir", "judge_model", "prompt_hash"]),
    ("route_table.html", {"id": "route-rates"}, ["route"]),
    ("route_table.html", {"id": "window-rates"}, ["route", "pane"]),
    ("overview.html", {"id": "incomplete-reasons"}, ["reason"]),
    ("overview.html", {"id": "dead-letter-reasons"}, ["stage", "dead"]),
    ("overview.html", {"id": "suspicious-table"}, ["trace_id", "route", "snippet"]),
    ("flagged.html", {"id": "flagged-table"}, ["trace_id", "route", "incomplete_id"]),
    ("flagged.html", {"id": "filter-route"}, ["route"]),
    ("compare.html", {"id": "compare"}, ["before_dir", "out_dir"]),
    ("compare.html", {"id": "changed-traces"}, ["trace_id", "route"]),
    ("compare.html", {"id": "changed-claims"}, ["trace_id", "claim"]),
    ("trace.html", {"id": anchor(evil("trace_id"))},
     ["trace_id", "route", "question", "answer"]),
    ("trace.html", {"id": anchor(evil("incomplete_id"))}, ["reason"]),
    ("claims.html", {"cls": "claim"}, ["claim", "claim-status", "note", "evidence", "doc"]),
    ("claims.html", {"cls": "sentence"}, ["answer"]),
    ("context.html", {"cls": "doc"}, ["doc"]),
]


@pytest.mark.parametrize(("part", "where", "fields"), PARTS,
                         ids=[f"{p}-{next(iter(w.values()))}" for p, w, _ in PARTS])
def test_markup_in_a_trace_field_is_shown_as_text_in_each_part(dom, part, where, fields):
    shown = _texts(dom, **where)
    assert shown, f"{part}: nothing at {where}"
    for field in fields:
        assert evil(field) in shown, f"{part}: {field} is not shown as text"


def test_no_markup_from_the_run_becomes_an_element(dom):
    assert not list(dom.find_all("img")) and not list(dom.find_all("b"))
    scripts = list(dom.find_all("script"))
    assert len(scripts) == 1  # the page's own script, nothing else (the charts are SVG)
    charts = list(dom.find_all("svg", cls="chart"))
    assert charts  # the route name (markup) is text in each chart's marks, not an element
    for chart in charts:
        assert not list(chart.find_all("script")) and not list(chart.find_all("img"))
    assert EVIL in " ".join(t.text for c in charts for t in c.find_all("title"))
    assert EVIL in _texts(dom, cls="context")  # the context sentence itself, as text


def test_an_absence_claim_has_no_local_label(dom):
    (absence,) = [c for c in dom.find_all("li", cls="claim") if "(absence claim)" in c.text]
    assert "none: an absence is checked on the full context" in absence.text


def test_a_missing_value_fails_the_render():
    run = hostile_run()
    (flag,) = [a for a in run.answers if a["status"] == "ok"]
    view = trace_data(flag, run.claims, run.traces[flag["trace_id"]], run.summary)
    assert evil("question") in parse(macro("trace.html", "trace_view", view)).text
    del view["reason"]
    with pytest.raises(UndefinedError, match="reason"):
        macro("trace.html", "trace_view", view)
    with pytest.raises(UndefinedError, match="page"):
        render_template("page.html")


def test_every_template_is_package_data():
    """A non-editable install ships the templates (pyproject's package-data globs)."""
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["rt4chart.pipeline.report"]
    files = [p.relative_to(TEMPLATES.parent).as_posix() for p in TEMPLATES.rglob("*")
             if p.is_file()]
    assert "templates/page.html" in files
    assert all(any(fnmatch(f, g) for g in globs) for f in files), files
