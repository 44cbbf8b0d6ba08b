"""`rt4chart gate` on the runs it must refuse or fail (issue 47, defect 1), made by real audits
with a custom judge and by a crash's leftovers (tests/fakes/gate_cases.py): each exits 2
(refused) or 1 (a limit not held) naming why, in its output and in the JUnit file, while the
run they all differ from passes. `tests/bench/bench_gate_cases.py` prints the tally."""

from __future__ import annotations

import collections
import xml.etree.ElementTree as ET

import pytest

import rt4chart
from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.storage.run_lock import FolderLock
from rt4chart.testing import assert_no_hallucination

import gate_cases

NAMES = [case.name for case in gate_cases.should_fail(collections.defaultdict(str))]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return gate_cases.make_runs(tmp_path_factory.mktemp("gate-cases"))


def gate(capsys, *args: str) -> tuple[int, str]:
    try:
        code = cli.main(["gate", *args])
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out + out.err


def not_held(path) -> list[tuple[str, str, str, str]]:
    """(element, type, test case name, message) of each failure or error in the JUnit file."""
    found = []
    for case in ET.parse(path).getroot().iter("testcase"):
        for element in ("failure", "error"):
            for item in case.findall(element):
                found.append((element, item.get("type"), case.get("name"), item.get("message")))
    return found


@pytest.mark.parametrize("index", range(len(NAMES)), ids=NAMES)
def test_a_should_fail_case_is_refused_or_failed_with_its_reason(runs, capsys, tmp_path,
                                                                 index):
    case = gate_cases.should_fail(runs)[index]
    xml = tmp_path / "gate.xml"
    code, printed = gate(capsys, *case.args, "--junit", str(xml))
    assert code == case.expected, printed
    assert case.reason in printed
    problems = not_held(xml)
    assert any(case.reason in message for *_, message in problems), problems
    if case.expected == 2:  # refused: the run's numbers were never checked
        assert "gate: REFUSED" in printed and "gate: PASS" not in printed
        assert problems and all(p[:2] == ("error", "GateRefused") for p in problems)
    else:
        assert "gate: FAIL" in printed
        assert problems and all(p[:2] == ("failure", "GateLimit") for p in problems)


def test_the_run_they_differ_from_passes(runs, capsys, tmp_path):
    case = gate_cases.should_pass(runs)
    xml = tmp_path / "gate.xml"
    code, printed = gate(capsys, *case.args, "--junit", str(xml))
    assert code == 0, printed
    assert "gate: PASS (0 of 4 checks failed)" in printed
    assert "faq: rate 0.0% [0.0%, 43.4%] of 5; baseline 0.0%" in printed
    assert not_held(xml) == []


def test_judge_failed_case_names_both_checks_it_fails(runs, capsys):
    code, printed = gate(capsys, runs["judge-failed"], "--max-rate", "0.05", "--min-answers",
                         "4")
    assert code == 1
    assert ("faq: rate 0.0% [0.0%, 49.0%] of 4 (1 incomplete: counted as hallucinated, 20.0% "
            "at worst): FAIL rate 0.0%, 20.0% counting 1 incomplete as hallucinated > 5.0%; "
            "1 incomplete answer > 0") in printed
    assert "gate: FAIL (2 of 3 checks failed)" in printed


def test_allowed_unchecked_answers_still_count_as_hallucinated(runs, capsys):
    # Allowing the incomplete answer does not let it hide: the rate at worst (1 of 5) must hold.
    code, printed = gate(capsys, runs["judge-failed"], "--max-rate", "0.05",
                         "--max-incomplete", "1")
    assert code == 1 and "20.0% counting 1 incomplete as hallucinated > 5.0%" in printed
    code, printed = gate(capsys, runs["partial"], "--max-rate", "0.2", "--max-incomplete", "1")
    assert code == 0, printed
    assert "(1 partial: counted as hallucinated, 20.0% at worst): ok" in printed


def test_a_run_still_being_written_is_refused(runs, capsys, tmp_path):
    lock = FolderLock(runs["pass-copy"])  # what a running `rt4chart audit` holds
    lock.acquire()
    try:
        code, printed = gate(capsys, runs["pass"], "--max-rate", "0.05", "--baseline",
                             runs["pass-copy"], "--max-increase", "0.02", "--junit",
                             str(tmp_path / "g.xml"))
    finally:
        lock.release()
    assert code == 2
    assert f"the baseline {runs['pass-copy']} is still being written" in printed
    assert [p[:3] for p in not_held(tmp_path / "g.xml")] == [
        ("error", "GateRefused", "baseline state")]
    # Released (the audit ended), the same command passes.
    assert gate(capsys, runs["pass"], "--max-rate", "0.05", "--baseline", runs["pass-copy"],
                "--max-increase", "0.02")[0] == 0


def test_another_judge_is_compared_only_when_asked(runs, capsys):
    code, printed = gate(capsys, runs["pass"], "--baseline", runs["other-model"],
                         "--max-increase", "0.02")
    assert code == 2
    assert "the run was judged by judge model lexical-a" in printed
    assert "the baseline by judge model lexical-b" in printed and "--across-judges" in printed
    code, printed = gate(capsys, runs["pass"], "--baseline", runs["other-prompt"],
                         "--max-increase", "0.02")
    assert code == 2 and "another prompt hash" in printed and "another judge model" not in printed
    code, printed = gate(capsys, runs["pass"], "--baseline", runs["other-model"],
                         "--max-increase", "0.02", "--across-judges")
    assert code == 0, printed
    assert "*: note the run was judged by judge model lexical-a" in printed
    assert "compared all the same: --across-judges" in printed


def test_the_testing_helper_fails_on_real_unchecked_answers(runs):
    partial, failed = rt4chart.open_run(runs["partial"]), rt4chart.open_run(runs["judge-failed"])
    with pytest.raises(AssertionError, match="g-faq-4.*ENT on part of the answer only"):
        assert_no_hallucination(a for a in partial.answers)
    assert_no_hallucination(filter(None, partial.answers), allow_partial=True)
    with pytest.raises(AssertionError, match="g-faq-4.*incomplete, not judged"):
        assert_no_hallucination(iter(failed.answers))
    assert not failed.complete and [a.trace_id for a in failed.incomplete_answers] == [
        "g-faq-4"]
    assert partial.complete and partial.incomplete_answers == ()
