"""The isotonic block size is chosen by cross-validation over sources, not fixed."""

from __future__ import annotations

import random

from rt4chart.pipeline.eval import calibrate


def _data(n: int = 240, seed: int = 3):
    rng = random.Random(seed)
    items, claims = [], []
    for i in range(n):
        raw = rng.random()
        hallucinated = rng.random() < raw  # a judge whose raw score is the true rate
        label = "NIC" if raw >= 0.12 else "ENT"
        tid = f"t{i}"
        items.append({"trace_id": tid, "source_id": f"s{i // 2}", "label": label,
                      "status": "ok", "score": raw,
                      "gold_spans": [(0, 5, "NIC")] if hallucinated else []})
        claims.append({"trace_id": tid, "status": "ok", "label": label, "p_unsupported": raw,
                       "spans": [{"char_start": 0, "char_end": 5}], "answer_start": 0,
                       "answer_end": 5})
    return items, claims


def test_the_chosen_block_is_the_one_with_the_lowest_held_out_ece():
    items, claims = _data()
    block, scores = calibrate.choose_min_block(items, claims, "m", 0.12)
    assert set(scores) == {str(b) for b in calibrate.BLOCK_CHOICES}
    assert all(0.0 <= v <= 1.0 for v in scores.values())
    best = min(scores.values())
    assert scores[str(block)] == best
    # Ties go to the larger block (the smoother map).
    assert block == max(b for b in calibrate.BLOCK_CHOICES if scores[str(b)] == best)


def test_held_out_folds_cover_every_answer_once():
    items, claims = _data()
    counted = sum(calibrate._held_out_ece(items, claims, "m", 0.12, 25, f)[1]
                  for f in range(calibrate.FOLDS))
    assert counted == len(items)
