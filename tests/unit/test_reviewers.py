"""The judge against reviewers' labels (`eval --gold phoenix:NAME`) without a server: the
label mapping, the matching, the measures (with Phoenix: integration/test_phoenix_source.py)."""

from __future__ import annotations

import numpy as np
import pytest

from rt4chart.pipeline.eval.reviewers import Review, agreement, gold_name, kappa, match, reading
from rt4chart.transforms.common.joins import wilson


@pytest.mark.parametrize("raw, review", [
    ("ENT", Review(False, "ENT")), (" faithful ", Review(False, "ENT")),
    ("con", Review(True, "CON")), ("NIC", Review(True, "NIC")),
    ("Hallucinated", Review(True, None)),
    ("maybe", None), ("", None), (None, None), (1, None), ("contradiction", None),
])
def test_labels_map_or_are_unknown(raw, review):
    assert reading(raw) == review


def test_gold_spec():
    assert gold_name("phoenix:review") == "review"
    for bad in ("review", "phoenix:", "bq:x"):
        with pytest.raises(ValueError, match="--gold must be phoenix:NAME"):
            gold_name(bad)


def test_kappa_of_known_tables():
    truth = np.array([1, 1, 0, 0], dtype=bool)
    # observed .75, chance .5 * .25 + .5 * .75 = .5: (0.75 - 0.5) / 0.5
    assert kappa(truth, np.array([1, 0, 0, 0], dtype=bool)) == pytest.approx(0.5)
    assert kappa(truth, truth) == pytest.approx(1.0)
    assert kappa(truth, ~truth) == pytest.approx(-1.0)
    assert kappa(np.ones(3, bool), np.ones(3, bool)) is None  # chance agreement 1
    assert kappa(np.array([], bool), np.array([], bool)) is None


def test_match_counts_what_cannot_be_compared():
    judged = {"a": "CON", "b": "ENT", "c": "NIC", "d": "ENT", "e": "CON"}
    labels = {"a": ["NIC"], "b": ["hallucinated"], "c": ["CON", "faithful"], "d": ["??", None]}
    m = match(judged, labels)
    assert m.trace_ids == ["a", "b"] and m.judge == ["CON", "ENT"]
    assert m.reviews == [Review(True, "NIC"), Review(True, None)]
    assert m.conflicting == ["c"] and m.unreviewed == 1  # e has no annotation
    assert dict(m.unknown) == {"??": 1, "(no label)": 1}
    # two reviewers who agree on hallucinated but not on its class: no class
    assert match({"x": "CON"}, {"x": ["CON", "NIC"]}).reviews == [Review(True, None)]


def test_agreement_report():
    judged = {f"t{i}": lab for i, lab in enumerate(["CON"] * 6 + ["ENT"] * 6)}
    reviews = ["CON"] * 4 + ["faithful"] * 2 + ["ENT"] * 5 + ["NIC"]
    m = match(judged, {f"t{i}": [r] for i, r in enumerate(reviews)})
    report = agreement(m, n_boot=200, seed=1)
    assert report["compared"] == 12 and report["agreement"]["value"] == 9 / 12
    assert report["agreement"]["interval"] == list(wilson(9, 12))
    # judge flags 6, reviewers 5: TP 4, FP 2, FN 1
    assert report["precision"]["value"] == pytest.approx(4 / 6)
    assert report["recall"]["value"] == pytest.approx(4 / 5)
    assert report["f1"]["value"] == pytest.approx(8 / 11)
    expected = kappa(np.array([r in ("CON", "NIC") for r in reviews]),
                     np.array([j != "ENT" for j in judged.values()]))
    assert report["kappa"]["value"] == pytest.approx(expected)
    for key in ("kappa", "f1", "precision", "recall"):
        low, high = report[key]["interval"]
        assert low <= report[key]["value"] <= high
    # classes: 4 CON agree, 2 ENT-vs-CON and 1 NIC-vs-ENT differ, 5 ENT agree
    assert report["class_agreement"]["compared"] == 12
    assert report["class_agreement"]["value"] == pytest.approx(9 / 12)
    empty = agreement(match({}, {}), n_boot=10)
    assert empty["compared"] == 0 and empty["agreement"]["value"] is None
    assert empty["kappa"] == {"value": None, "interval": [None, None]}
