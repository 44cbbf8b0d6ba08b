"""Faithful quotes on ordinary Unicode, end to end (issue 46, point 4): the case file
tests/data/exemptions/unicode_quotes.jsonl (14 faithful answers whose context is written with
ligatures, soft hyphens, zero-width and bidi characters, decomposed accents, full-width,
mathematical or look-alike letters, half-width katakana, and 15 hallucinated controls on the
same contexts) through `rt4chart audit`, with the judges of tests/fakes/unicode_judges.py
plugged in through the public custom-judge contract. Both quote the context as a model writes
it (the plain form)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "exemptions" / "unicode_quotes.jsonl"


def _traces() -> dict[str, dict]:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line]
    return {t["trace_id"]: t for t in rows}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from rt4chart.pipeline.cli import main as cli

    from testutil import read_tables

    out = {}
    for judge in ("honest", "obeying"):
        folder = tmp_path_factory.mktemp(judge) / "out"
        code = cli.main(["audit", str(DATA), "--judge", f"unicode_judges:{judge}",
                         "--out", str(folder)])
        assert code == 0
        out[judge] = read_tables(folder)
    return out


def test_the_cases_hold_every_kind_of_character_and_both_kinds_of_answer():
    traces = _traces()
    faithful = [t for t in traces.values() if t["metadata"]["hallucinated"] == "false"]
    assert len(faithful) >= 12
    kinds = {t["metadata"]["kind"] for t in faithful}
    assert len(kinds) >= 12
    for trace in faithful:
        assert trace["contexts"][0]["text"] != trace["metadata"]["plain"], trace["trace_id"]
        assert f"{trace['trace_id'].removesuffix('-faithful')}-hallucinated" in traces


@pytest.mark.parametrize("judge", ["honest", "obeying"])
def test_faithful_answers_stay_ent_and_hallucinated_ones_are_flagged(runs, judge):
    traces = _traces()
    labels = {a["trace_id"]: a["label"] for a in runs[judge]["answers"]}
    assert set(labels) == set(traces)
    wrong = [(t, labels[t]) for t, trace in traces.items()
             if (labels[t] == "ENT") != (trace["metadata"]["hallucinated"] == "false")]
    assert not wrong, [(t, label, [(c["claim"], c["label"], c["note"])
                                   for c in runs[judge]["claims"] if c["trace_id"] == t])
                       for t, label in wrong]


def test_evidence_points_into_the_original_context(runs):
    traces = _traces()
    odd = 0
    for claim in runs["honest"]["claims"]:
        text = traces[claim["trace_id"]]["contexts"][0]["text"]
        for e in claim["evidence"]:
            assert text[e["char_start"]:e["char_end"]] == e["text"]
            odd += not e["text"].isascii() and e["text"] not in claim["claim"]
    # The spans hold the context's own characters (a ligature, a soft hyphen), not the quote's.
    assert odd >= 12


def test_the_changed_number_is_what_overturns_the_obeying_judge(runs):
    notes = {c["claim"]: c for c in runs["obeying"]["claims"]}
    for trace in _traces().values():
        if trace["metadata"]["hallucinated"] != "true":
            continue
        plain = trace["metadata"]["plain"]
        changed = [c for s, c in notes.items() if c["trace_id"] == trace["trace_id"]
                   and s not in plain]
        assert changed and all(c["label"] != "ENT" for c in changed), trace["trace_id"]
