"""Evaluation measures as pure functions (numpy arrays in, floats out; no Beam, no I/O).

Conventions, one for every measure:

- precision = TP / (TP + FP), recall = TP / (TP + FN), F1 = 2 TP / (2 TP + FP + FN); a ratio
  whose denominator is 0 is undefined (``None``), never 0 or 1 by fiat. So F1 is 0 when nothing
  is predicted but something should have been, and undefined only when there is nothing to
  find and nothing was flagged.
- Span overlap counts characters: per answer, the union of the gold spans and the union of the
  predicted spans (overlapping spans count once), summed over answers (micro).
- AUROC is the Mann-Whitney statistic with ties counted one half; AUPRC is average precision
  (sum over distinct thresholds of the recall step times the precision there).
- ECE: 10 equal-width bins of the score on [0, 1], weighted mean |mean score - hit rate|.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

Span = tuple[int, int]


def ratio(num: float, den: float) -> float | None:
    return float(num) / float(den) if den else None


def prf(tp: float, fp: float, fn: float) -> dict[str, float | None]:
    """Precision, recall and F1 from counts (see the module's conventions)."""
    return {"precision": ratio(tp, tp + fp), "recall": ratio(tp, tp + fn),
            "f1": ratio(2 * tp, 2 * tp + fp + fn)}


def confusion(truth: np.ndarray, flagged: np.ndarray) -> tuple[int, int, int, int]:
    """(TP, FP, FN, TN) of boolean arrays."""
    truth, flagged = truth.astype(bool), flagged.astype(bool)
    return (int(np.sum(truth & flagged)), int(np.sum(~truth & flagged)),
            int(np.sum(truth & ~flagged)), int(np.sum(~truth & ~flagged)))


def merge(spans: Iterable[Span]) -> list[Span]:
    """Sorted, non-overlapping union of half-open character spans (empty ones dropped)."""
    out: list[list[int]] = []
    for start, end in sorted((int(s), int(e)) for s, e in spans if int(e) > int(s)):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(s, e) for s, e in out]


def char_overlap(gold: Iterable[Span], predicted: Iterable[Span]) -> tuple[int, int, int]:
    """(gold characters, predicted characters, characters in both) of one answer's spans."""
    g, p = merge(gold), merge(predicted)
    both = 0
    i = j = 0
    while i < len(g) and j < len(p):
        both += max(0, min(g[i][1], p[j][1]) - max(g[i][0], p[j][0]))
        if g[i][1] < p[j][1]:
            i += 1
        else:
            j += 1
    return sum(e - s for s, e in g), sum(e - s for s, e in p), both


def _ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties given their average rank."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    average = np.cumsum(counts) - (counts - 1) / 2.0
    return average[inverse]


def auroc(truth: np.ndarray, score: np.ndarray) -> float | None:
    """Area under the ROC curve; undefined without both classes."""
    truth = truth.astype(bool)
    n_pos, n_neg = int(truth.sum()), int((~truth).sum())
    if not n_pos or not n_neg:
        return None
    ranks = _ranks(np.asarray(score, dtype=float))
    return float((ranks[truth].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _by_threshold(truth: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, ...]:
    """Distinct thresholds (descending) and the TP and FP counts of `score >= threshold`."""
    order = np.argsort(-np.asarray(score, dtype=float), kind="mergesort")
    s, t = np.asarray(score, dtype=float)[order], truth.astype(bool)[order]
    last = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1]
    tp = np.cumsum(t)[last]
    fp = np.cumsum(~t)[last]
    return s[last], tp, fp


def auprc(truth: np.ndarray, score: np.ndarray) -> float | None:
    """Average precision; undefined without a positive."""
    truth = truth.astype(bool)
    if not truth.any():
        return None
    _, tp, fp = _by_threshold(truth, score)
    recall = tp / truth.sum()
    precision = tp / (tp + fp)
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def roc_curve(truth: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(false positive rates, true positive rates), from (0, 0) to (1, 1)."""
    _, tp, fp = _by_threshold(truth, score)
    pos, neg = max(int(truth.sum()), 1), max(int((~truth.astype(bool)).sum()), 1)
    return np.r_[0.0, fp / neg], np.r_[0.0, tp / pos]


def pr_curve(truth: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(recalls, precisions) at each distinct threshold, highest threshold first."""
    _, tp, fp = _by_threshold(truth, score)
    return tp / max(int(truth.sum()), 1), tp / (tp + fp)


def reliability(truth: np.ndarray, score: np.ndarray, bins: int = 10):
    """Per non-empty bin: (mean score, hit rate, count), equal-width bins on [0, 1]."""
    score = np.clip(np.asarray(score, dtype=float), 0.0, 1.0)
    index = np.minimum((score * bins).astype(int), bins - 1)
    out = []
    for b in range(bins):
        mask = index == b
        if mask.any():
            out.append((float(score[mask].mean()), float(truth[mask].mean()), int(mask.sum())))
    return out


def ece(truth: np.ndarray, score: np.ndarray, bins: int = 10) -> float | None:
    """Expected calibration error of a probability score."""
    if len(truth) == 0:
        return None
    n = len(truth)
    return float(sum(c / n * abs(m - h) for m, h, c in reliability(truth, score, bins)))


def predictive_values(tpr: float | None, fpr: float | None,
                      prevalence: float) -> tuple[float | None, float | None]:
    """(precision, negative predictive value) at a prevalence, by Bayes' rule from the hit
    rates measured on a sample of another prevalence."""
    if tpr is None or fpr is None:
        return None, None
    ppv = ratio(tpr * prevalence, tpr * prevalence + fpr * (1 - prevalence))
    npv = ratio((1 - fpr) * (1 - prevalence),
                (1 - fpr) * (1 - prevalence) + (1 - tpr) * prevalence)
    return ppv, npv


def choose_threshold(truth: np.ndarray, score: np.ndarray) -> float | None:
    """The score threshold (flag when `score >= t`) with the best F1; ties go to the higher
    threshold (fewer flags). Undefined without a positive."""
    truth = truth.astype(bool)
    if not truth.any():
        return None
    thresholds, tp, fp = _by_threshold(truth, score)
    f1 = 2 * tp / (2 * tp + fp + (truth.sum() - tp))
    return float(thresholds[int(np.argmax(f1))])  # argmax: first best, thresholds descending
