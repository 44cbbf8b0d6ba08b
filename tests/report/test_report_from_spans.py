"""The report of a run whose traces came as spans (OTLP, OpenInference, Phoenix, Langfuse): the
trace view shows the question, the documents and the evidence marks, reading the spans again
the way `audit` read them, from the inputs recorded in the run folder or from `--traces`."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from report_dom import browser_dom, chromium

from rt4chart.pipeline.cli import main as audit_cli
from rt4chart.pipeline.cli import report as report_cli
from rt4chart.pipeline.report.trace_view import anchor
from rt4chart.pipeline.results.load import load_run
from rt4chart.pipeline.results.summary import read_table

import fake_judges
from span_export import write_format

JUDGE = ("--judge", "fake_judges:running_example", "--window-size", "2", "--window-overlap", "1")


def _report(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    report_cli.add_parser(parser.add_subparsers(dest="command"))
    return report_cli.run(parser.parse_args(["report", *argv]))


@pytest.fixture(scope="module")
def otlp_run(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("spans-report")
    spans = write_format("otlp", [fake_judges.RUNNING_TRACE], root / "in")
    out = root / "run"
    assert audit_cli.main(["audit", str(spans), *JUDGE, "--out", str(out)]) == 0
    html = root / "report.html"
    assert _report(str(out), "--out", str(html)) == 0  # no --traces: the run's own inputs
    return {"root": root, "spans": spans, "out": out, "html": html}


def test_the_trace_view_of_an_otlp_run_has_its_question_documents_and_evidence(otlp_run):
    if chromium() is None:
        pytest.fail("the report's browser test needs Debian's chromium (`.ci/run` installs it)")
    answers = read_table(str(otlp_run["out"]), "answers").to_pylist()
    assert len(answers) == 1 and answers[0]["label"] == "CON"
    trace_id = answers[0]["trace_id"]
    dom = browser_dom(otlp_run["html"])
    a = anchor(trace_id)
    section = dom.by_id(a)
    assert fake_judges.RUNNING_TRACE["question"] in section.text
    # Claim 1 is contradicted by context sentence 1, marked in the document and linked.
    claim = dom.by_id(f"{a}-c0")
    assert claim.attrs["data-label"] == "CON"
    assert [lk.attrs["href"] for lk in claim.find_all("a", cls="evlink")] == [f"#{a}-s1"]
    target = dom.by_id(f"{a}-s1")
    assert fake_judges.S1.rstrip(".") in target.find("mark", cls="evmark").text
    assert "--traces" not in dom.by_id(a).text  # not the "no traces" notice


@pytest.mark.parametrize("fmt", ["openinference", "phoenix", "langfuse"])
def test_traces_of_every_span_format_are_found_with_traces(otlp_run, fmt, tmp_path):
    """`report RUN --traces FILE` reads each format audit reads (told by the file's content)."""
    spans = write_format(fmt, [fake_judges.RUNNING_TRACE], tmp_path / fmt)
    out = tmp_path / "run"
    assert audit_cli.main(["audit", str(spans), *JUDGE, "--out", str(out)]) == 0
    trace_id = read_table(str(out), "answers").to_pylist()[0]["trace_id"]
    run = load_run(str(out), traces=[str(spans)])
    trace = run.traces[trace_id].trace
    assert trace.question == fake_judges.RUNNING_TRACE["question"]
    assert trace.answer == fake_judges.RUNNING_TRACE["answer"]
    assert [d.text for d in trace.contexts] == [
        d if isinstance(d, str) else d["text"] for d in fake_judges.RUNNING_TRACE["contexts"]]


def test_a_run_whose_inputs_are_gone_still_reports(otlp_run, tmp_path):
    moved = tmp_path / "gone.json"
    otlp_run["spans"].rename(moved)
    try:
        run = load_run(str(otlp_run["out"]))
        assert run.traces == {} and len(run.answers) == 1  # tables, without the trace views
        assert run.summary["input_format"] == "auto" and run.summary["inputs"]
    finally:
        moved.rename(otlp_run["spans"])
