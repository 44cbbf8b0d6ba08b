"""The measures against hand-computed examples (no Beam, no audit)."""

from __future__ import annotations

import numpy as np
import pytest

from rt4chart.pipeline.eval import measures, metrics


def test_prf_counts_and_undefined_ratios():
    assert metrics.prf(2, 1, 1) == pytest.approx({"precision": 2 / 3, "recall": 2 / 3,
                                                  "f1": 2 / 3})
    # Nothing predicted, something to find: precision undefined, recall and F1 are 0.
    assert metrics.prf(0, 0, 3) == {"precision": None, "recall": 0.0, "f1": 0.0}
    # Nothing to find, something predicted: recall undefined, precision and F1 are 0.
    assert metrics.prf(0, 2, 0) == {"precision": 0.0, "recall": None, "f1": 0.0}
    # Nothing to find and nothing predicted: every ratio undefined, none invented.
    assert metrics.prf(0, 0, 0) == {"precision": None, "recall": None, "f1": None}


def test_char_overlap_merges_overlapping_spans():
    # gold union 0-15 (15 chars), predicted 10-20 (10 chars), shared 10-15 (5 chars)
    assert metrics.char_overlap([(0, 10), (5, 15)], [(10, 20)]) == (15, 10, 5)
    # one predicted span across two gold spans: 2 + 2 shared
    assert metrics.char_overlap([(0, 4), (8, 12)], [(2, 10)]) == (8, 8, 4)
    # a predicted span inside another counts once; an empty span counts nothing
    assert metrics.char_overlap([(0, 6)], [(0, 10), (2, 4), (7, 7)]) == (6, 10, 6)


def test_char_overlap_empty_sides():
    assert metrics.char_overlap([(3, 9)], []) == (6, 0, 0)
    assert metrics.char_overlap([], [(0, 5)]) == (0, 5, 0)
    assert metrics.char_overlap([], []) == (0, 0, 0)


def test_auroc_hand_computed_with_ties():
    # positive-negative pairs ranked right: (0.9>0.6), (0.9>0.1), (0.4>0.1); wrong: (0.4<0.6)
    assert metrics.auroc(np.array([1, 1, 0, 0]), np.array([0.9, 0.4, 0.6, 0.1])) == 0.75
    # a tie counts one half: pairs (1 vs 0) right, (0 vs 0) tie -> 1.5 / 2
    assert metrics.auroc(np.array([1, 1, 0]), np.array([1.0, 0.0, 0.0])) == 0.75
    assert metrics.auroc(np.array([1, 0]), np.array([0.5, 0.5])) == 0.5
    assert metrics.auroc(np.array([1, 1]), np.array([0.2, 0.3])) is None


def test_auprc_is_average_precision():
    y, score = np.array([1, 0, 1, 0]), np.array([0.9, 0.8, 0.7, 0.1])
    # recall steps 0.5 at precision 1 (t=0.9) and 0.5 at precision 2/3 (t=0.7)
    assert metrics.auprc(y, score) == pytest.approx(0.5 * 1 + 0.5 * 2 / 3)
    # a constant score (flag everything) has the prevalence as AUPRC
    assert metrics.auprc(y, np.ones(4)) == pytest.approx(0.5)
    assert metrics.auprc(np.zeros(3), np.ones(3)) is None


def test_ece_ten_bins():
    y, p = np.array([1, 0, 1, 1]), np.array([0.95, 0.05, 0.85, 0.45])
    # one answer per bin: |0.95-1| + |0.05-0| + |0.85-1| + |0.45-1| = 0.8, over 4
    assert metrics.ece(y, p) == pytest.approx(0.2)
    # p = 1.0 falls in the last bin with 0.95: mean 0.975, hit rate 1/2
    assert metrics.ece(np.array([1, 0]), np.array([0.95, 1.0])) == pytest.approx(0.475)


def test_predictive_values_by_bayes_rule():
    ppv, npv = metrics.predictive_values(0.8, 0.1, 0.10)
    assert ppv == pytest.approx(0.08 / (0.08 + 0.09))
    assert npv == pytest.approx(0.81 / (0.81 + 0.02))
    # flag everything: precision is the prevalence, NPV undefined
    assert metrics.predictive_values(1.0, 1.0, 0.05) == (pytest.approx(0.05), None)


def test_choose_threshold_best_f1_ties_to_higher():
    y, s = np.array([1, 1, 0, 0, 1]), np.array([0.9, 0.7, 0.6, 0.2, 0.1])
    assert metrics.choose_threshold(y, s) == 0.7  # F1 0.8 (0.75 at 0.1, 0.5 at 0.9)
    # F1 2/3 at 0.9 and at 0.6: the higher threshold wins
    assert metrics.choose_threshold(np.array([1, 0, 0, 1]),
                                    np.array([0.9, 0.8, 0.7, 0.6])) == 0.9
    assert metrics.choose_threshold(np.zeros(3), np.arange(3.0)) is None


def _item(tid, source, gold, pred, *, flagged=None, label=None, length=20, split="test",
          gold_evidence=None, pred_evidence=(), score=None):
    flagged = bool(pred) if flagged is None else flagged
    return {"trace_id": tid, "source_id": source, "task": "QA", "split": split,
            "answer_len": length, "gold_spans": [list(g) for g in gold],
            "gold_evidence": gold_evidence, "status": "ok",
            "label": label or (pred[0][2] if pred else "ENT"), "flagged": flagged,
            "pred_spans": [list(p) for p in pred],
            "pred_evidence": [list(e) for e in pred_evidence],
            "score": float(flagged) if score is None else score, "score_from": "verdict"}


def test_span_level_micro_over_answers():
    items = [
        _item("a", "s1", [(0, 10, "NIC")], [(5, 15, "NIC")]),   # g10 p10 o5
        _item("b", "s1", [], [(0, 5, "CON")]),                   # faithful, flagged: p5
        _item("c", "s2", [(0, 4, "CON")], []),                   # missed: g4
        _item("d", "s2", [], []),                                # nothing either side
    ]
    judge = measures.judge_system(items, np.zeros(4, dtype=bool))
    m = measures.measure(measures.Gold.of(items), judge, np.arange(4))
    assert m["span.precision"] == pytest.approx(5 / 15)
    assert m["span.recall"] == pytest.approx(5 / 14)
    assert m["span.f1"] == pytest.approx(10 / 29)
    # answer level: a TP, b FP, c FN, d TN
    assert (m["answer.precision"], m["answer.recall"]) == (0.5, 0.5)
    # per label: CON gold on c only, CON flagged on b only; NIC gold and flagged on a
    assert (m["con.precision"], m["con.recall"], m["con.f1"]) == (0.0, 0.0, 0.0)
    assert (m["nic.precision"], m["nic.recall"]) == (1.0, 1.0)


def test_evidence_only_on_correctly_detected_contradictions():
    items = [
        # detected CON: gold evidence d[0,10); predicted d[5,20) and e[0,5) -> g10 p20 o5
        _item("a", "s1", [(0, 4, "CON")], [(0, 4, "CON")], gold_evidence=[["d", 0, 10]],
              pred_evidence=[("d", 5, 20), ("e", 0, 5)]),
        # missed CON (judged NIC): its evidence does not count
        _item("b", "s1", [(0, 4, "CON")], [(0, 4, "NIC")], gold_evidence=[["d", 0, 10]],
              pred_evidence=[("d", 0, 10)]),
    ]
    m = measures.measure(measures.Gold.of(items),
                         measures.judge_system(items, np.zeros(2, dtype=bool)), np.arange(2))
    assert m["evidence.precision"] == pytest.approx(0.25)
    assert m["evidence.recall"] == pytest.approx(0.5)
    # no gold evidence anywhere: undefined, not zero
    plain = [_item("c", "s1", [(0, 4, "CON")], [(0, 4, "CON")])]
    m = measures.measure(measures.Gold.of(plain),
                         measures.judge_system(plain, np.zeros(1, dtype=bool)), np.arange(1))
    assert m["evidence.f1"] is None


def test_references_flag_all_and_length_direction_from_dev():
    items = [_item(f"d{i}", f"s{i}", [(0, 3, "NIC")] if long else [], [], length=n,
                   split="dev")
             for i, (n, long) in enumerate([(100, True), (90, True), (20, False), (10, False)])]
    items += [_item("t1", "s9", [(0, 3, "NIC")], [], length=95),
              _item("t2", "s9", [], [], length=15)]
    dev = np.array([it["split"] == "dev" for it in items])
    length, chosen = measures.length_system(items, dev)
    assert chosen["direction"] == "longer" and chosen["threshold_chars"] == 90
    assert length.flagged.tolist() == [True, True, False, False, True, False]
    flag_all = measures.flag_all_system(items)
    test = np.array([4, 5])
    m = measures.measure(measures.Gold.of(items), flag_all, test)
    assert (m["answer.precision"], m["answer.recall"], m["auroc"]) == (0.5, 1.0, 0.5)
    assert m["span.precision"] == pytest.approx(3 / (95 + 15))
    assert m["ppv@10%"] == pytest.approx(0.10)


def test_bootstrap_resamples_whole_sources_deterministically():
    source = np.array([0, 0, 0, 1, 2, 2])
    draws = list(measures.resamples(source, np.arange(6), 50, seed=3))
    for d in draws:
        counts = np.bincount(source[d], minlength=3)
        assert counts[0] % 3 == 0 and counts[2] % 2 == 0  # a source comes whole or not at all
    again = list(measures.resamples(source, np.arange(6), 50, seed=3))
    assert all(np.array_equal(a, b) for a, b in zip(draws, again, strict=True))
    other = list(measures.resamples(source, np.arange(6), 50, seed=4))
    assert not all(np.array_equal(a, b) for a, b in zip(draws, other, strict=True))


def test_interval_needs_half_defined():
    assert measures.interval([None, None, 1.0]) == (None, None)
    low, high = measures.interval([float(v) for v in range(101)])
    assert (low, high) == (2.5, 97.5)
