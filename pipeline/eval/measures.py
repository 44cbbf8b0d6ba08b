"""Systems scored on items: the judge and the trivial references, every measure, with source
bootstrap intervals.

A *system* is what is scored: per answer, a verdict (hallucinated or not, and per label), the
flagged character spans, the evidence counts, and a score. The judge is one; the references are
``flag_all`` (every answer hallucinated, as CON and as NIC, its whole text as the span, score 1)
and ``length`` (the answer's length in characters as the score, in the direction that ranks
better on the dev part, flagged at the dev part's best-F1 threshold, its whole text as the span,
for every label). Thresholds and directions are chosen on the dev part only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from rt4chart.pipeline.eval import metrics

PREVALENCES = (0.05, 0.10, 0.20)
MEASURES = (
    "answer.precision", "answer.recall", "answer.f1",
    "con.precision", "con.recall", "con.f1", "nic.precision", "nic.recall", "nic.f1",
    "span.precision", "span.recall", "span.f1",
    "evidence.precision", "evidence.recall", "evidence.f1",
    "auroc", "auprc", "threshold.precision", "threshold.recall", "threshold.f1", "ece",
    *(f"{kind}@{p:.0%}" for p in PREVALENCES for kind in ("ppv", "npv")),
    "flag_rate",
)


@dataclass(frozen=True)
class Gold:
    """Gold per item: hallucinated, has a CON span, has a NIC span; the item's source code."""

    y: np.ndarray
    y_con: np.ndarray
    y_nic: np.ndarray
    source: np.ndarray

    @classmethod
    def of(cls, items: list[dict]) -> Gold:
        labels = [{s[2] for s in it["gold_spans"]} for it in items]
        codes = {s: i for i, s in enumerate(dict.fromkeys(it["source_id"] for it in items))}
        return cls(np.array([bool(lb) for lb in labels], dtype=bool),
                   np.array(["CON" in lb for lb in labels], dtype=bool),
                   np.array(["NIC" in lb for lb in labels], dtype=bool),
                   np.array([codes[it["source_id"]] for it in items], dtype=int))


@dataclass(frozen=True)
class System:
    """One scored system over the same items as its Gold."""

    name: str
    flagged: np.ndarray
    flagged_con: np.ndarray
    flagged_nic: np.ndarray
    spans: np.ndarray  # (n, 3): gold, predicted and shared characters
    evidence: np.ndarray  # (n, 3), where gold evidence exists; zeros elsewhere
    has_evidence: np.ndarray
    score: np.ndarray
    probability: bool
    threshold: float | None


def _span_counts(items: list[dict], predicted: Callable[[dict], list]) -> np.ndarray:
    return np.array([metrics.char_overlap([(s, e) for s, e, _ in it["gold_spans"]],
                                          predicted(it)) for it in items], dtype=float
                    ).reshape(-1, 3)


def _evidence_counts(item: dict) -> tuple[int, int, int]:
    gold, pred = item.get("gold_evidence") or [], item.get("pred_evidence") or []
    totals = [0, 0, 0]
    for doc in {d for d, *_ in gold} | {d for d, *_ in pred}:
        counts = metrics.char_overlap([(s, e) for d, s, e in gold if d == doc],
                                      [(s, e) for d, s, e in pred if d == doc])
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
    return tuple(totals)


def judge_system(items: list[dict], dev: np.ndarray) -> System:
    """The audit's verdicts; the score's threshold is chosen on the dev items."""
    gold = Gold.of(items)
    labels = [{s[2] for s in it["pred_spans"]} | {it["label"]} for it in items]
    score = np.array([it["score"] for it in items], dtype=float)
    has_ev = np.array([it.get("gold_evidence") is not None for it in items], dtype=bool)
    return System(
        "judge", np.array([it["flagged"] for it in items], dtype=bool),
        np.array(["CON" in lb for lb in labels], dtype=bool),
        np.array(["NIC" in lb for lb in labels], dtype=bool),
        _span_counts(items, lambda it: [(s, e) for s, e, _ in it["pred_spans"]]),
        np.array([_evidence_counts(it) for it in items], dtype=float).reshape(-1, 3),
        has_ev, score, True, metrics.choose_threshold(gold.y[dev], score[dev]),
    )


def _whole_answer_system(name: str, items: list[dict], flagged: np.ndarray, score: np.ndarray,
                         probability: bool, threshold: float | None) -> System:
    spans = _span_counts(items, lambda it: [(0, it["answer_len"])])
    spans[~flagged, 1:] = 0  # an unflagged answer has no predicted span
    n = len(items)
    return System(name, flagged, flagged, flagged, spans, np.zeros((n, 3)),
                  np.zeros(n, dtype=bool), score, probability, threshold)


def flag_all_system(items: list[dict]) -> System:
    n = len(items)
    return _whole_answer_system("flag_all", items, np.ones(n, dtype=bool), np.ones(n), True, 1.0)


def length_system(items: list[dict], dev: np.ndarray) -> tuple[System, dict]:
    """Answer length as the score, direction and threshold chosen on the dev items."""
    gold = Gold.of(items)
    length = np.array([it["answer_len"] for it in items], dtype=float)
    dev_auc = metrics.auroc(gold.y[dev], length[dev])
    direction = "shorter" if dev_auc is not None and dev_auc < 0.5 else "longer"
    score = length if direction == "longer" else -length
    threshold = metrics.choose_threshold(gold.y[dev], score[dev])
    flagged = score >= threshold if threshold is not None else np.zeros(len(items), dtype=bool)
    chosen = {"direction": direction, "threshold_chars": None if threshold is None
              else abs(threshold), "dev_auroc": dev_auc}
    return _whole_answer_system("length", items, flagged, score, False, threshold), chosen


def _answer_measures(gold: Gold, s: System, idx: np.ndarray) -> dict:
    out = {}
    for prefix, truth, flags in (("answer", gold.y, s.flagged), ("con", gold.y_con, s.flagged_con),
                                 ("nic", gold.y_nic, s.flagged_nic)):
        tp, fp, fn, _ = metrics.confusion(truth[idx], flags[idx])
        out.update({f"{prefix}.{k}": v for k, v in metrics.prf(tp, fp, fn).items()})
    tp, fp, fn, tn = metrics.confusion(gold.y[idx], s.flagged[idx])
    tpr, fpr = metrics.ratio(tp, tp + fn), metrics.ratio(fp, fp + tn)
    for p in PREVALENCES:
        out[f"ppv@{p:.0%}"], out[f"npv@{p:.0%}"] = metrics.predictive_values(tpr, fpr, p)
    out["flag_rate"] = metrics.ratio(int(s.flagged[idx].sum()), len(idx))
    return out


def _count_measures(prefix: str, counts: np.ndarray) -> dict:
    g, p, o = counts.sum(axis=0) if len(counts) else (0, 0, 0)
    return {f"{prefix}.precision": metrics.ratio(o, p), f"{prefix}.recall": metrics.ratio(o, g),
            f"{prefix}.f1": metrics.ratio(2 * o, g + p)}


def _score_measures(gold: Gold, s: System, idx: np.ndarray) -> dict:
    y, score = gold.y[idx], s.score[idx]
    out = {"auroc": metrics.auroc(y, score), "auprc": metrics.auprc(y, score),
           "ece": metrics.ece(y, score) if s.probability else None}
    if s.threshold is None:
        out.update({f"threshold.{k}": None for k in ("precision", "recall", "f1")})
    else:
        tp, fp, fn, _ = metrics.confusion(y, score >= s.threshold)
        out.update({f"threshold.{k}": v for k, v in metrics.prf(tp, fp, fn).items()})
    return out


def measure(gold: Gold, s: System, idx: np.ndarray) -> dict[str, float | None]:
    """Every measure of a system on the items `idx` (indices, repeats allowed)."""
    correct_con = (gold.y_con & s.flagged_con & s.has_evidence)[idx]
    out = {**_answer_measures(gold, s, idx), **_count_measures("span", s.spans[idx]),
           **_count_measures("evidence", s.evidence[idx][correct_con]),
           **_score_measures(gold, s, idx)}
    return {k: out[k] for k in MEASURES}


def resamples(source: np.ndarray, idx: np.ndarray, n: int, seed: int) -> Iterator[np.ndarray]:
    """`n` bootstrap resamples of the items `idx`: their sources drawn with replacement, every
    answer of a drawn source taken together."""
    by_source: dict[int, list[int]] = {}
    for i in idx:
        by_source.setdefault(int(source[i]), []).append(int(i))
    groups = [np.array(v) for v in by_source.values()]
    rng = np.random.default_rng(seed)
    for _ in range(n):
        drawn = rng.integers(0, len(groups), size=len(groups))
        yield np.concatenate([groups[d] for d in drawn]) if len(groups) else idx


def interval(values: list[float | None]) -> tuple[float | None, float | None]:
    """95% percentile interval of the defined values (None if fewer than half are defined)."""
    defined = np.array([v for v in values if v is not None], dtype=float)
    if len(defined) == 0 or len(defined) < len(values) / 2:
        return None, None
    low, high = np.percentile(defined, [2.5, 97.5])
    return float(low), float(high)


def with_intervals(points: dict, draws: list[dict]) -> dict:
    return {k: {"value": v, "interval": list(interval([d[k] for d in draws]))}
            for k, v in points.items()}


def evaluate(gold: Gold, systems: list[System], idx: np.ndarray, n_boot: int,
             seed: int) -> dict[str, dict]:
    """Every system's measures on `idx`, each with a 95% source-bootstrap interval (the same
    resamples for every system)."""
    draws: dict[str, list[dict]] = {s.name: [] for s in systems}
    for sample in resamples(gold.source, idx, n_boot, seed):
        for s in systems:
            draws[s.name].append(measure(gold, s, sample))
    return {s.name: with_intervals(measure(gold, s, idx), draws[s.name]) for s in systems}
