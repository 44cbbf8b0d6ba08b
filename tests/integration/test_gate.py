"""`rt4chart gate` on runs made for the test: exit codes, lines, JUnit XML, the baseline."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

import rt4chart
from rt4chart.pipeline.cli import main as cli

import golden_traces as gt

G, C, U = gt.GROUNDED, gt.CONTRADICTED, gt.UNSUPPORTED


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """base: billing 1 of 4 hallucinated; new: the same traces, billing 3 of 4; other: other
    trace ids (nothing to pair), billing only."""
    root = tmp_path_factory.mktemp("gate-runs")
    made = {}
    for name, routes, prefix in (
            ("base", {"faq": [G, G, G, G], "billing": [G, G, G, U]}, "g"),
            ("new", {"faq": [G, G, G, G], "billing": [G, C, U, U]}, "g"),
            ("other", {"billing": [G, G]}, "o")):
        made[name] = str(root / name)
        rt4chart.audit(gt.golden(routes, prefix), judge="offline", out=made[name])
    return made


def gate(capsys, *args: str) -> tuple[int, str, str]:
    try:
        code = cli.main(["gate", *args])
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def junit(path) -> list[tuple[str, str, str | None, str]]:
    """(classname, name, failure message or None, failure text) per test case."""
    root = ET.parse(path).getroot()
    cases = []
    for case in root.iter("testcase"):
        failure = case.find("failure")
        cases.append((case.get("classname"), case.get("name"),
                      None if failure is None else failure.get("message"),
                      "" if failure is None else failure.text or ""))
    return cases


def test_over_the_rate_fails_with_a_junit_failure(runs, capsys, tmp_path):
    code, out, _ = gate(capsys, runs["new"], "--max-rate", "0.5", "--junit",
                        str(tmp_path / "gate.xml"))
    assert code == 1
    assert "billing: rate 75.0% [" in out and "of 4: FAIL rate 75.0% > 50.0%" in out
    assert "faq: rate 0.0% [0.0%, " in out and out.count(": ok") == 1
    assert "gate: FAIL (1 of 4 checks failed)" in out
    assert junit(tmp_path / "gate.xml") == [
        ("rt4chart gate.billing", "max-rate 0.5", "rate 75.0% > 50.0%",
         "rate 75.0% > 50.0%"),
        ("rt4chart gate.billing", "max-incomplete 0", None, ""),
        ("rt4chart gate.faq", "max-rate 0.5", None, ""),
        ("rt4chart gate.faq", "max-incomplete 0", None, "")]


def test_within_every_limit_passes(runs, capsys, tmp_path):
    code, out, _ = gate(capsys, runs["base"], "--max-rate", "0.25", "--min-answers", "4",
                        "--junit", str(tmp_path / "g.xml"))
    assert code == 0, out
    cases = junit(tmp_path / "g.xml")
    assert len(cases) == 6 and all(message is None for _, _, message, _ in cases)
    assert "gate: PASS (0 of 6 checks failed)" in out


def test_route_limits_and_a_route_the_run_lacks(runs, capsys):
    assert gate(capsys, runs["new"], "--max-rate", "0.1", "--route", "billing=0.8")[0] == 0
    code, out, _ = gate(capsys, runs["new"], "--route", "missing=0.5")
    assert code == 1 and "missing: rate absent: FAIL the run has no answer on this route" in out


def test_min_answers_fails_a_thin_route(runs, capsys):
    code, out, _ = gate(capsys, runs["other"], "--min-answers", "3")
    assert code == 1 and "FAIL 2 complete answers < 3" in out


def test_baseline_compares_paired_traces_and_names_the_claims(runs, capsys, tmp_path):
    xml, diff = tmp_path / "b.xml", tmp_path / "diff.html"
    code, out, _ = gate(capsys, runs["new"], "--baseline", runs["base"], "--max-increase",
                        "0.25", "--junit", str(xml), "--diff", str(diff))
    assert code == 1
    assert "rates compared on the traces both runs audited" in out
    assert "billing: rate 75.0% [" in out and "(on 4 paired traces)" in out
    assert "25.0% -> 75.0% (+50.0 points > 25.0, on 4 paired traces)" in out
    assert diff.exists() and "<html" in diff.read_text().lower()
    failed = [c for c in junit(xml) if c[2] is not None]
    assert [(c[0], c[1]) for c in failed] == [("rt4chart gate.billing", "max-increase 0.25")]
    text = failed[0][3]
    # The answers changed, so their claims did: each is new in this run (absent before).
    assert f"g-billing-1: absent -> CON: {C}" in text and f"claim-level diff: {diff}" in text
    assert f"g-billing-2: absent -> NIC: {U}" in text and "g-billing-3" not in text  # NIC before


def test_an_increase_at_the_limit_passes(runs, capsys):
    code, out, _ = gate(capsys, runs["new"], "--baseline", runs["base"], "--max-increase",
                        "0.5")
    assert code == 0, out
    assert "claim-level diff: rt4chart report" in out


def test_without_paired_traces_it_says_so_and_a_new_route_fails(runs, capsys):
    code, out, _ = gate(capsys, runs["new"], "--baseline", runs["other"], "--max-increase",
                        "0.9")
    assert code == 1
    assert "billing: rate 75.0%" in out and "(unpaired: no trace in both runs)" in out
    assert "faq: rate 0.0%" in out and "the baseline has no complete answer" in out


@pytest.mark.parametrize("args, message", [
    ((), "give a limit"),
    (("--max-rate", "1.5"), "invalid fraction value"),
    (("--max-increase", "0.1"), "--baseline and --max-increase go together"),
    (("--route", "=0.3"), "--route expects ROUTE=R"),
    (("--route", "faq=high"), "could not convert"),
    (("--min-answers", "0"), "--min-answers must be >= 1"),
    (("--max-rate", "0.1", "--max-rat", "0.2"), "did you mean --max-rate"),
])
def test_usage_errors_exit_2(runs, capsys, args, message):
    code, out, err = gate(capsys, runs["new"], *args)
    assert code == 2 and message in err and out == ""


def test_a_folder_that_is_not_a_run_exits_2(capsys, tmp_path):
    code, _, err = gate(capsys, str(tmp_path), "--max-rate", "0.1")
    assert code == 2 and "no answers table" in err
