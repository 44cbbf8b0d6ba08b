"""What the probabilities of the rows mean: one rule, pure functions, no Beam.

A claim row's ``p_unsupported`` and an answer row's ``p_hallucinated`` are calibrated
probabilities that never contradict the row's label:

- Claim. The judge's raw score (the offline judge's lexical score, the openai judge's
  1 - P(ENT) from label-token log-probabilities; a judge that gives none: 0 for ENT, 1
  otherwise; through an overturn the judge's score is kept) goes through the judge model's
  calibration map c (an isotonic fit on the dev part of RAGTruth by ``rt4chart eval
  calibrate``, made strictly increasing by `strictly_monotone` so that it keeps the raw
  score's ranking; the identity when none is given). The run's
  claim threshold is tau = c(decision), the calibrated value of the judge's own decision
  threshold (0.5 for a judge without one). Then the label decides the side::

      CON or NIC:  p = max(c(raw), tau)
      ENT:         p = min(c(raw), below(tau)),  below(tau) = tau - EPS (tau / 2 if tau <= EPS)

  so ENT <=> p < tau. A calibrated value on the right side is kept as it is; one on the wrong
  side (a label the pipeline changed after the judge scored it: grounding or support
  overturned an ENT, confirmation failed, an absence verdict, a tie of the flat map at tau)
  moves to the threshold: the pipeline's decision is known, its confidence is not, so the
  least claim consistent with it is stated. A claim without a verdict (judge_error) has None.
- Answer. p_hallucinated = a(s), with a the answer map (isotonic on the dev part) and s the
  answer's score over its decided claims' p (`answer_score`): with N = 1 - prod(1 - p)
  (noisy-or), s = tau * N when every claim is below tau, tau + (1 - tau) * N otherwise; the
  run's answer threshold is T = a(tau); then the same side rule with T (hallucinated = CON or
  NIC). The answer is hallucinated exactly when some decided claim has p >= tau, that is
  exactly when s >= tau, and a is non-decreasing: a(s) >= T for a hallucinated answer and
  <= T otherwise, so the side rule only breaks ties at T. (Noisy-or alone cannot agree: many
  ENT claims at 0.3 make an answer over 0.5; it only ranks answers within a side.) An
  undecided answer (incomplete, no label) has None.

EPS is 0.01 so that a probability printed with two decimals is visibly on its side.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path

from rt4chart.schemas.records import Calibration

EPS = 0.01
# The least slope of a fitted map (`strictly_monotone`): enough to keep every distinct raw
# score distinct (the ranking, hence AUROC, is the raw score's), too small to move a
# probability by more than 0.001.
STRICT_SLOPE = 1e-3
DEFAULT_DECISION = 0.5
Points = tuple[tuple[float, float], ...]


def interpolate(points: Points, x: float) -> float:
    """The map at `x`: linear between breakpoints, flat outside them, identity when empty."""
    x = min(1.0, max(0.0, float(x)))
    if not points:
        return x
    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1]


def below(threshold: float) -> float:
    """The largest probability an ENT (or a clean answer) may have under `threshold`."""
    return threshold - EPS if threshold > EPS else threshold / 2


def on_side(flagged: bool, p: float, threshold: float) -> float:
    """`p` moved to the side of `threshold` that `flagged` (CON/NIC, hallucinated) says."""
    return max(p, threshold) if flagged else min(p, below(threshold))


def claim_threshold(cal: Calibration) -> float:
    """tau: the calibrated value of the judge's decision threshold."""
    return interpolate(cal.claim_map, cal.decision)


def answer_threshold(cal: Calibration) -> float:
    """T = a(tau): an answer is hallucinated exactly when p_hallucinated >= T."""
    return interpolate(cal.answer_map, claim_threshold(cal))


def claim_p(label: str | None, raw: float | None, cal: Calibration) -> float | None:
    """A claim's p_unsupported from its label and the judge's raw score (module docstring)."""
    if label is None:
        return None
    if raw is None:
        raw = 0.0 if label == "ENT" else 1.0
    return on_side(label != "ENT", interpolate(cal.claim_map, raw), claim_threshold(cal))


def answer_score(claim_ps: Iterable[float | None], tau: float) -> float:
    """The statistic the answer map takes: s = tau * N when every claim p is below tau, else
    tau + (1 - tau) * N, with N = 1 - prod(1 - p) (noisy-or) over the claims. So s >= tau
    exactly when some claim is CON or NIC, and within each side answers rank by noisy-or."""
    ps = [p for p in claim_ps if p is not None]
    keep = 1.0
    for p in ps:
        keep *= 1.0 - p
    n = 1.0 - keep
    return tau + (1.0 - tau) * n if any(p >= tau for p in ps) else tau * n


def answer_p(claim_ps: Iterable[float | None], label: str | None,
             cal: Calibration) -> float | None:
    """An answer's p_hallucinated from its decided claims' p_unsupported and its label."""
    if label is None:
        return None
    s = answer_score(claim_ps, claim_threshold(cal))
    return on_side(label != "ENT", interpolate(cal.answer_map, s), answer_threshold(cal))


def identity(judge_model: str, decision: float = DEFAULT_DECISION) -> Calibration:
    """No fitted map: the raw score is the probability and tau is the decision threshold."""
    return Calibration(judge_model, decision)


def check_map(points: Points, name: str = "map") -> Points:
    """The breakpoints, validated: in [0, 1], x increasing, y non-decreasing (ValueError)."""
    pts = tuple((float(x), float(y)) for x, y in points)
    if any(not (0.0 <= v <= 1.0) for pt in pts for v in pt):
        raise ValueError(f"calibration {name}: breakpoints must lie in [0, 1]")
    for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False):
        if x1 <= x0 or y1 < y0:
            raise ValueError(f"calibration {name}: x must increase and y must not decrease "
                             f"({x0}, {y0}) -> ({x1}, {y1})")
    return pts


def isotonic(xs: Sequence[float], ys: Sequence[float], min_count: int = 1) -> Points:
    """Isotonic (non-decreasing) regression of 0/1 outcomes `ys` on scores `xs` by pool
    adjacent violators (equal scores share a block); blocks of fewer than `min_count` outcomes
    are merged into a neighbour, which keeps the fit monotone. Each block is flat at its
    outcome rate from its lowest to its highest score (two breakpoints, one if they are
    equal), with linear ramps across the gaps between blocks: in-sample, every score maps to
    its block's rate."""
    if len(xs) != len(ys):
        raise ValueError("isotonic: xs and ys differ in length")
    tied: dict[float, list[float]] = {}  # equal scores first make one block
    for x, y in zip(xs, ys, strict=True):
        tied.setdefault(float(x), [0.0, 0.0])
        tied[float(x)][0] += float(y)
        tied[float(x)][1] += 1.0
    blocks: list[list[float]] = []  # [lowest x, highest x, sum y, count]
    for x in sorted(tied):
        blocks.append([x, x, *tied[x]])
        while len(blocks) > 1 and blocks[-2][2] / blocks[-2][3] >= blocks[-1][2] / blocks[-1][3]:
            _merge(blocks, len(blocks) - 2)
    while len(blocks) > 1:
        small = min(range(len(blocks)), key=lambda i: blocks[i][3])
        if blocks[small][3] >= min_count:
            break
        _merge(blocks, small if small + 1 < len(blocks) else small - 1)
    points: list[tuple[float, float]] = []
    for low, high, sy, n in blocks:
        points += [(low, sy / n)] + ([(high, sy / n)] if high > low else [])
    return check_map(tuple(points), "isotonic fit")


def strictly_monotone(points: Points, slope: float = STRICT_SLOPE) -> Points:
    """A non-decreasing map (an `isotonic` fit's steps) made strictly increasing, so that it
    ranks scores exactly as they came: its breakpoints, extended flat to 0 and 1, mixed with
    the identity by `slope` ((1 - slope) * map + slope * x). Every step keeps its rate within
    `slope` (the calibration stays the fit's) and gains a slope of at least `slope` (scores the
    judge told apart stay apart). Empty (the identity) stays empty.

    Linear interpolation through the steps' midpoints was tried first: it also keeps the
    ranking, but spreads a wide step's rate over scores where the fit saw none, and its
    cross-validated answer ECE on RAGTruth dev was 0.105 against 0.045 (docs/calibration.md).
    """
    if not 0.0 < slope < 1.0:
        raise ValueError(f"strictly_monotone: slope must lie in (0, 1), got {slope}")
    pts = list(check_map(points))
    if not pts:
        return ()
    if pts[0][0] > 0.0:
        pts.insert(0, (0.0, pts[0][1]))
    if pts[-1][0] < 1.0:
        pts.append((1.0, pts[-1][1]))
    return check_map(tuple((x, (1.0 - slope) * y + slope * x) for x, y in pts),
                     "strictly monotone map")


def _merge(blocks: list[list[float]], i: int) -> None:
    a, b = blocks[i], blocks.pop(i + 1)
    blocks[i] = [a[0], b[1], a[2] + b[2], a[3] + b[3]]


def to_json(cal: Calibration) -> dict:
    """The file form of a calibration (what `load` reads)."""
    return {"judge_model": cal.judge_model, "decision": cal.decision,
            "claim_map": [list(p) for p in cal.claim_map],
            "answer_map": [list(p) for p in cal.answer_map], "fit": json.loads(cal.fit)}


def from_json(data: dict, source: str) -> Calibration:
    try:
        decision = float(data["decision"])
        cal = Calibration(str(data["judge_model"]), decision,
                          check_map(data.get("claim_map") or (), "claim_map"),
                          check_map(data.get("answer_map") or (), "answer_map"), source,
                          json.dumps(data.get("fit") or {}, sort_keys=True))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"calibration {source}: not a calibration file ({exc})") from exc
    if not 0.0 < claim_threshold(cal) <= 1.0 or not 0.0 <= decision <= 1.0:
        raise ValueError(f"calibration {source}: the claim threshold must lie in (0, 1]")
    return cal


def load(path: str) -> Calibration:
    """A calibration file: a path, or `package:NAME` for one shipped with rt4chart (under
    rt4chart/transforms/judges/)."""
    if path.startswith("package:"):
        name = path.removeprefix("package:")
        text = resources.files("rt4chart.transforms.judges").joinpath(name).read_text()
    else:
        text = Path(path).read_text(encoding="utf-8")
    return from_json(json.loads(text), path)


def record(cal: Calibration) -> dict:
    """What summary.json and the report record of the rule a run used."""
    return {"claim_threshold": claim_threshold(cal), "answer_threshold": answer_threshold(cal),
            "judge_decision_threshold": cal.decision, "judge_model": cal.judge_model,
            "calibration": cal.source, "fit": json.loads(cal.fit),
            "rule": "claim ENT <=> p_unsupported < claim_threshold; answer hallucinated <=> "
                    "p_hallucinated >= answer_threshold (rt4chart.transforms.common.probability)"}
