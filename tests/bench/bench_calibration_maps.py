"""The calibration map's effect alone, printed as figures (not a test).

    rt4chart eval --dataset ragtruth --data ../shared/data/ragtruth --judge offline \\
        --judge-option calibration=identity --out /tmp/eval-identity --overwrite
    python tests/bench/bench_calibration_maps.py /tmp/eval-identity

From one identity-calibrated eval folder (raw scores), fits the claim and answer maps on its
dev answers as `rt4chart eval calibrate` does (block size by cross-validation over dev
sources) with three map shapes: the isotonic steps, the steps made strictly increasing (what
the calibration ships, `probability.strictly_monotone`) and linear interpolation through the
steps' midpoints; applies each to the test answers as a run does, and prints the held-out dev
ECE of the chosen block, the test AUROC and ECE, and the number of distinct probabilities.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from rt4chart.pipeline.eval import calibrate, metrics
from rt4chart.pipeline.eval.runner import read_jsonl
from rt4chart.pipeline.results.summary import read_table
from rt4chart.transforms.common import probability


def _steps(points, slope=probability.STRICT_SLOPE):
    return probability.check_map(points)


def _midpoints(points, slope=probability.STRICT_SLOPE):
    pts = probability.check_map(points)
    runs: list[tuple[float, float]] = []
    for x, y in pts:
        if runs and runs[-1][1] == y:
            continue
        runs.append((x, y))
    ends = [x for (x, y), nxt in zip(pts, [*pts[1:], None], strict=True)
            if nxt is None or nxt[1] != y]
    knots = [((x0 + x1) / 2, y) for (x0, y), x1 in zip(runs, ends, strict=True)]
    if knots and knots[0][0] > 0:
        knots.insert(0, (0.0, knots[0][1]))
    if knots and knots[-1][0] < 1:
        knots.append((1.0, knots[-1][1]))
    return probability.check_map(tuple((x, (1 - slope) * y + slope * x) for x, y in knots))


SHAPES = {"isotonic steps": _steps, "strictly increasing (shipped)":
          probability.strictly_monotone, "midpoint interpolation": _midpoints}


def main(run: Path) -> None:
    items = read_jsonl(run / "items.jsonl")
    claims = read_table(str(run / "audit"), "claims").to_pylist()
    used = json.loads((run / "audit" / "summary.json").read_text())["probability"]
    model, decision = used["judge_model"], used["judge_decision_threshold"]
    dev = [it for it in items if it["split"] == "dev"]
    test = calibrate._answered([it for it in items if it["split"] == "test"])
    truth = np.array([bool(it["gold_spans"]) for it in test])
    by_trace = calibrate._by_trace(claims)
    raw = [probability.answer_score([c["p_unsupported"] for c in by_trace.get(it["trace_id"], [])],
                                    decision) for it in test]
    print(f"raw answer score: test AUROC {metrics.auroc(truth, np.array(raw)):.3f}")
    shipped = probability.strictly_monotone
    try:
        for name, shape in SHAPES.items():
            probability.strictly_monotone = shape  # what calibrate.fit calls
            block, cv = calibrate.choose_min_block(dev, claims, model, decision)
            cal, _ = calibrate.fit(dev, claims, model, decision, block)
            p = np.array(calibrate._answer_ps(
                test, calibrate._answer_scores(test, by_trace, cal), cal))
            print(f"{name}: block {block}, held-out dev ECE {cv[str(block)]:.3f}; test AUROC "
                  f"{metrics.auroc(truth, p):.3f}, ECE {metrics.ece(truth, p):.3f}, "
                  f"{len(set(p.round(12).tolist()))} distinct p of {len(p)}")
    finally:
        probability.strictly_monotone = shipped


if __name__ == "__main__":
    main(Path(sys.argv[1]))
