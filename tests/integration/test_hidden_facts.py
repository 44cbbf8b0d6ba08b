"""Hidden facts end to end (issue 46): tests/data/exemptions/hidden_facts.jsonl through the
`rt4chart audit` command with the honest judge of tests/fakes/honest_judge.py, once returning
each sentence as its claim and once returning no claim. No planted false fact (a heading, a bold
line, a list item, a lead-in with a colon, a greeting or thanks before it, a question tag, an
advice clause, "Here is how ...", in six languages) ends ENT; no faithful answer whose only
other sentence is discourse ("I hope this helps!", "Vielen Dank!") loses its ENT."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "bench"))

from bench_hidden_facts import DEFAULT_DATA, measure  # noqa: E402


def test_the_case_file_holds_every_form_in_several_languages():
    rows = [json.loads(line) for line in DEFAULT_DATA.read_text("utf-8").splitlines()]
    planted = [r["metadata"] for r in rows if r["metadata"]["planted"] == "true"]
    assert len(planted) >= 30
    forms = Counter(m["form"] for m in planted)
    assert {"heading", "bold line", "list item", "lead-in", "greeting", "question", "advice",
            "presentative"} <= set(forms)
    assert len({m["language"] for m in planted}) >= 5
    assert all(m["false_sentence"] in r["answer"] for r in rows
               for m in [r["metadata"]] if m["planted"] == "true")


@pytest.mark.parametrize("mode", ["sentence", "none"])
def test_no_planted_fact_escapes_and_no_faithful_answer_is_lost(mode, tmp_path):
    figures = measure(DEFAULT_DATA, mode, tmp_path / mode)
    assert figures.planted >= 30 and figures.controls >= 10
    assert figures.escaped_ids == []
    assert figures.lost_ids == []
