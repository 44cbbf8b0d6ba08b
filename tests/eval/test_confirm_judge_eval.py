"""A second judge through the real `rt4chart eval` (29 RAGTruth answers, tests/data/ragtruth_gold):
with the lucky-quote judge first and the gold judge confirming, at most 10% of the
gold-hallucinated sentences end ENT (the lucky judge alone passes far more); with the gold judge
first, confirming by the gold judge loses no answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rt4chart.pipeline.cli import eval as eval_cli

from lucky_judge import pass_share

DATA = Path(__file__).resolve().parents[1] / "data" / "ragtruth_gold"
GOLD = ("gold_judge:factory", f"data={DATA}")


def _eval(out: Path, judge: tuple[str, ...], confirm: tuple[str, ...] = ()) -> Path:
    code = eval_cli.main(["--dataset", "ragtruth", "--data", str(DATA), "--split", "all",
                          "--out", str(out), "--judge", judge[0],
                          *(x for opt in judge[1:] for x in ("--judge-option", opt)),
                          *confirm, "--bootstrap", "20", "--seed", "3"])
    assert code == 0
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("confirm-eval")
    second = ("--confirm-judge", GOLD[0], "--confirm-judge-option", GOLD[1])
    return {"lucky": _eval(tmp / "lucky", ("lucky_judge:factory",)),
            "lucky+gold": _eval(tmp / "lucky-gold", ("lucky_judge:factory",), second),
            "gold+gold": _eval(tmp / "gold-gold", GOLD, second)}


def test_an_honest_second_judge_stops_the_lucky_quotes(runs):
    alone, _, _, _ = pass_share(runs["lucky"])
    passed, total, _, _ = pass_share(runs["lucky+gold"])
    assert total > 0 and passed <= 0.10 * total
    assert alone > passed  # the lucky judge alone gets hallucinations through


def test_the_gold_judge_confirmed_by_itself_loses_no_answer(runs):
    items = [json.loads(line) for line in (runs["gold+gold"] / "items.jsonl").open()]
    assert len(items) == 29
    wrong = [it["trace_id"] for it in items
             if it["flagged"] != bool(it["gold_spans"]) or it["status"] != "ok"]
    assert wrong == []
