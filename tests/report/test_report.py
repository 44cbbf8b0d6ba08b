"""`rt4chart report`: generated from a small run, opened in headless Chromium, checked in the DOM.

Run "after": the paper's running example audited by its scripted judge (claims 1-2 CON with
evidence in context sentences 1 and 2), plus a hostile trace whose question, answer and route
hold markup. Run "before": the same traces audited by the offline judge, for the comparison.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest
from report_dom import browser_dom, chromium, run_chromium

from rt4chart.pipeline.cli import main as audit_cli
from rt4chart.pipeline.cli import report as report_cli
from rt4chart.pipeline.report.trace_view import anchor
from rt4chart.pipeline.results.load import latest_panes, route_totals
from rt4chart.pipeline.results.summary import read_table

import fake_judges

PWN = "document.body.setAttribute('data-pwned','1')"
HOSTILE = {
    **fake_judges.RUNNING_TRACE,
    "trace_id": "hostile<1>",
    "route": "evil</script><b>route",
    "question": f"<script>{PWN}</script>What?",
    "answer": f'<img src=x onerror="{PWN}"><script>{PWN}</script> Nothing to see.',
}
SCREENSHOT = Path("/tmp/rt4chart-report.png")



def _audit(traces: Path, out: Path, *judge: str, expect: int = 0) -> None:
    code = audit_cli.main(["audit", str(traces), *judge, "--window-size", "2",
                           "--window-overlap", "1", "--out", str(out)])
    assert code == expect


def _report(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    report_cli.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["report", *argv])
    return report_cli.run(args)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("report")
    traces = root / "traces.jsonl"
    traces.write_text("".join(json.dumps(t) + "\n" for t in (fake_judges.RUNNING_TRACE, HOSTILE)))
    # The scripted judge has no script for the hostile answer: that answer ends incomplete,
    # which the audit's exit status says (3), and the report shows it as such.
    _audit(traces, root / "after", "--judge", "fake_judges:running_example", expect=3)
    _audit(traces, root / "before", "--judge", "offline")
    html = root / "report.html"
    assert _report(str(root / "after"), "--compare", str(root / "before"),
                   "--out", str(html)) == 0
    return {"root": root, "after": root / "after", "before": root / "before", "html": html}


@pytest.fixture(scope="module")
def dom(runs):
    if chromium() is None:
        pytest.fail("the report's browser test needs Debian's chromium (`.ci/run` installs it: "
                    "apt-get install chromium)")
    return browser_dom(runs["html"])


def test_report_is_self_contained(runs):
    html = runs["html"].read_text()
    assert "<script src" not in html and "<link" not in html
    assert "cdn.plot.ly" not in html.split("<script>", 1)[0]


def test_flagged_trace_is_listed_worst_first(dom):
    rows = list(dom.by_id("flagged-table").find("tbody").find_all("tr"))
    ids = [r.attrs["data-trace"] for r in rows]
    assert ids[0] == "running-example"  # CON before the incomplete hostile trace
    first = rows[0]
    assert first.attrs["data-label"] == "CON" and first.attrs["data-route"] == "support-bot"
    link = first.find("a")
    assert link.attrs["href"] == "#" + anchor("running-example")
    assert "1 of" not in dom.by_id("flagged-count").text  # both shown, script ran
    assert dom.by_id("flagged-count").text.startswith(f"{len(rows)} of {len(rows)}")


def test_contradicted_span_is_marked_and_linked_to_its_evidence(dom):
    a = anchor("running-example")
    section = dom.by_id(a)
    span = next(m for m in section.find_all("mark", cls="span")
                if fake_judges.A1 in m.text)
    assert span.attrs["data-label"] == "CON" and "lab-CON" in span.classes
    assert span.find("a").text == "CON"  # the label in text, not colour only
    # Claim 1 ("Every user can start a free trial.") is contradicted by context sentence 1.
    claim = dom.by_id(f"{a}-c0")
    assert claim.attrs["data-label"] == "CON" and fake_judges.C1 in claim.text
    links = list(claim.find_all("a", cls="evlink"))
    assert [lk.attrs["href"] for lk in links] == [f"#{a}-s1"]
    target = dom.by_id(f"{a}-s1")
    assert "ev" in target.classes and target.attrs["data-label"] == "CON"
    assert fake_judges.S1.rstrip(".") in target.find("mark", cls="evmark").text
    assert f"#{a}-c0" in [b.attrs["href"] for b in target.find_all("a", cls="backlink")]
    # Claim 2 (30 days) points at sentence 2 (14 days); claim 5 is NIC with no evidence.
    assert dom.by_id(f"{a}-c1").find("a", cls="evlink").attrs["href"] == f"#{a}-s2"
    assert dom.by_id(f"{a}-c4").attrs["data-label"] == "NIC"
    assert "W1 (s1–s2)" in claim.text and "Global (full context)" in claim.text
    assert fake_judges.RUNNING_TRACE["question"] in section.text


def test_route_rates_match_the_tables(dom, runs):
    rows = latest_panes(read_table(str(runs["after"]), "route_rates").to_pylist(),
                        ("route", "window_start"))
    totals = route_totals(rows)
    shown = {tr.attrs["data-route"]: tr for tr in dom.by_id("route-rates").find_all("tr")
             if "data-route" in tr.attrs}
    assert set(shown) == {t.route for t in totals}
    for t in totals:
        cell = shown[t.route].find("td", cls="rate")
        if t.rate is None:
            assert cell.text == "n/a"
        else:
            assert float(cell.attrs["data-value"]) == pytest.approx(t.rate)
            assert cell.text == f"{t.rate:.1%}"
    table_rows = {r["route"]: r for r in rows}
    assert float(shown["support-bot"].find("td", cls="rate").attrs["data-value"]) == (
        pytest.approx(table_rows["support-bot"]["rate"]))
    # Every chart is inline SVG with its title and a tooltip per mark (one per route here).
    charts = {c.attrs["id"]: c for c in dom.find_all("svg", cls="chart")}
    assert {"chart-rate", "chart-time", "chart-split"} <= set(charts)
    rate = charts["chart-rate"]
    assert rate.find("text", cls="chart-title").text.startswith("Hallucination rate per route")
    tips = [m.find("title").text for m in rate.find_all("g", cls="mark")]
    assert len(tips) == len(totals) and all(tip.startswith(t.route) for tip, t in
                                            zip(tips, totals, strict=True))


def test_trace_content_is_inert(dom):
    body = dom.find("body")
    assert "data-pwned" not in body.attrs
    for script in dom.find_all("script"):
        assert "data-pwned" not in script.text or "\\u003c" in script.text
    assert not [img for img in dom.find_all("img") if "onerror" in img.attrs]
    section = dom.by_id(anchor("hostile<1>"))
    assert f"<script>{PWN}</script>What?" in section.text  # shown as text


def test_comparison_lists_changed_verdicts_and_claims(dom):
    changed = {tr.attrs["data-trace"] for tr in dom.by_id("changed-traces").find_all("tr")
               if "data-trace" in tr.attrs}
    # The scripted judge cannot decompose the hostile answer (incomplete); the offline one can.
    assert "hostile<1>" in changed
    claims = list(dom.by_id("changed-claims").find("tbody").find_all("tr"))
    assert claims and all(len(list(tr.find_all("span", cls="badge"))) == 2 for tr in claims)
    assert {tr.attrs["data-route"] for tr in dom.by_id("compare-rates").find_all("tr")
            if "data-route" in tr.attrs} >= {"support-bot"}


def test_screenshot(runs):
    png = runs["root"] / "report.png"
    run_chromium(runs["html"], f"--screenshot={png}", "--window-size=1280,5200",
                 "--virtual-time-budget=5000")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 50_000
    shutil.copy(png, SCREENSHOT)


def test_missing_run_is_an_error(tmp_path):
    assert _report(str(tmp_path / "nothing"), "--out", str(tmp_path / "r.html")) == 2


def test_the_report_can_be_used_from_the_keyboard_and_without_colour(dom):
    """Native controls only, every control labelled, every in-page link has a target, and every
    coloured label also says its label in text."""
    root = dom
    ids = {el.attrs["id"] for el in root.iter() if "id" in el.attrs}
    assert not [el for el in root.iter() if "onclick" in el.attrs]
    for button in root.find_all("button"):
        assert button.text.strip() or button.attrs.get("aria-label"), button.attrs
    labelled = {el.attrs.get("for") for el in root.find_all("label")}
    for control in [*root.find_all("input"), *root.find_all("select")]:
        wrapped, el = False, control.parent
        while el is not None and not wrapped:
            wrapped, el = el.tag == "label", el.parent
        assert wrapped or control.attrs.get("id") in labelled or control.attrs.get(
            "aria-label"), control.attrs
    links = [a.attrs["href"][1:] for a in root.find_all("a")
             if a.attrs.get("href", "").startswith("#") and len(a.attrs["href"]) > 1]
    assert links and all(target in ids for target in links)
    assert [t for t in root.iter() if t.tag in ("table",)]  # data in tables, not only charts
    marked = [el for el in root.iter() if "data-label" in el.attrs]
    assert marked and all(el.attrs["data-label"] in el.text or el.attrs["data-label"] == ""
                          for el in marked if el.attrs["data-label"] in ("CON", "NIC", "ENT"))
