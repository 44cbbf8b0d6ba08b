"""The judge against human reviewers: `rt4chart eval --gold phoenix:NAME --run RUN_DIR`.

Reviewers label answers in Phoenix as span annotations named NAME on the root span of each
trace; `phoenix_labels.py` reads them back. Here they are matched to the run's verdicts (its
answers table, by trace id) and compared.

Labels (the annotation's `label`, case and surrounding blanks ignored): `ENT` or `faithful` is
faithful; `CON` or `NIC` is hallucinated of that class; `hallucinated` is hallucinated of no
class. Any other label, or an annotation without one, is unknown: counted and listed with its
text, never guessed. A trace whose reviewers gave labels that differ in hallucinated/faithful
is counted as `conflicting` and left out; the judge's answers without a label (incomplete,
undecided) are left out and counted.

Measures, on the traces that have both a judge label and a reviewer label ("hallucinated" the
positive class): answer-level agreement (95% Wilson interval); Cohen's kappa and the judge's
precision, recall and F1 against the reviewers (95% percentile bootstrap over traces, as
`measures.interval`); and, where the reviewer gave ENT, CON or NIC, the three-class agreement.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from rt4chart.pipeline.eval.measures import interval
from rt4chart.pipeline.eval.metrics import confusion, prf, ratio
from rt4chart.transforms.common.joins import wilson

GOLD_PREFIX = "phoenix:"
FAITHFUL, HALLUCINATED = "faithful", "hallucinated"
# raw label (lower case) -> (hallucinated?, class or None)
LABELS: dict[str, tuple[bool, str | None]] = {
    "ent": (False, "ENT"), FAITHFUL: (False, "ENT"), "con": (True, "CON"),
    "nic": (True, "NIC"), HALLUCINATED: (True, None),
}


def gold_name(spec: str) -> str:
    """The annotation name of `--gold phoenix:NAME` (ValueError otherwise)."""
    if not spec.startswith(GOLD_PREFIX) or not spec[len(GOLD_PREFIX):].strip():
        raise ValueError(f"--gold must be phoenix:NAME (the span annotations' name), got "
                         f"{spec!r}")
    return spec[len(GOLD_PREFIX):].strip()


@dataclass(frozen=True)
class Review:
    """A reviewer's verdict on one trace: hallucinated or not, and its class if it has one."""

    hallucinated: bool
    label: str | None


def reading(raw: object) -> Review | None:
    """The review a raw annotation label stands for; None when it is not one of `LABELS`."""
    if not isinstance(raw, str):
        return None
    found = LABELS.get(raw.strip().lower())
    return Review(*found) if found else None


@dataclass
class Matched:
    """The run's labelled answers with their reviews, and what could not be compared."""

    judge: list[str] = field(default_factory=list)  # ENT / CON / NIC
    reviews: list[Review] = field(default_factory=list)
    trace_ids: list[str] = field(default_factory=list)
    unknown: Counter = field(default_factory=Counter)  # raw label -> annotations
    conflicting: list[str] = field(default_factory=list)
    unreviewed: int = 0


def match(judged: dict[str, str], labels: dict[str, list[object]]) -> Matched:
    """`judged` {trace id: judge label}, `labels` {trace id: raw reviewer labels of it}."""
    out = Matched()
    for trace_id in sorted(judged):
        raws = labels.get(trace_id, [])
        reviews = []
        for raw in raws:
            review = reading(raw)
            if review is None:
                out.unknown[str(raw) if raw is not None else "(no label)"] += 1
            else:
                reviews.append(review)
        if not reviews:
            out.unreviewed += not raws
            continue
        if len({r.hallucinated for r in reviews}) > 1:
            out.conflicting.append(trace_id)
            continue
        classes = {r.label for r in reviews}
        out.judge.append(judged[trace_id])
        out.reviews.append(Review(reviews[0].hallucinated,
                                  classes.pop() if len(classes) == 1 else None))
        out.trace_ids.append(trace_id)
    return out


def kappa(truth: np.ndarray, flagged: np.ndarray) -> float | None:
    """Cohen's kappa of two binary raters; None when chance agreement is 1 (undefined)."""
    n = len(truth)
    if n == 0:
        return None
    observed = float(np.mean(truth == flagged))
    p_t, p_f = float(np.mean(truth)), float(np.mean(flagged))
    chance = p_t * p_f + (1 - p_t) * (1 - p_f)
    return None if chance >= 1.0 else (observed - chance) / (1 - chance)


def _binary(truth: np.ndarray, flagged: np.ndarray) -> dict[str, float | None]:
    tp, fp, fn, _ = confusion(truth, flagged)
    return {"kappa": kappa(truth, flagged), **prf(tp, fp, fn)}


def agreement(m: Matched, n_boot: int = 1000, seed: int = 0) -> dict:
    """The report: counts, agreement with its Wilson interval, kappa, precision, recall and
    F1 with bootstrap intervals, and the three-class agreement."""
    truth = np.array([r.hallucinated for r in m.reviews], dtype=bool)
    flagged = np.array([j != "ENT" for j in m.judge], dtype=bool)
    n, agree = len(truth), int(np.sum(truth == flagged))
    points = _binary(truth, flagged)
    rng = np.random.default_rng(seed)
    draws = [_binary(truth[idx], flagged[idx])
             for idx in (rng.integers(0, n, n) for _ in range(n_boot if n else 0))]
    measures = {k: {"value": v, "interval": list(interval([d[k] for d in draws]))}
                for k, v in points.items()}
    classed = [(r.label, j) for r, j in zip(m.reviews, m.judge, strict=True) if r.label]
    same = sum(label == judge for label, judge in classed)
    return {
        "compared": n, "unreviewed": m.unreviewed, "conflicting": len(m.conflicting),
        "unknown_labels": dict(sorted(m.unknown.items())),
        "reviewer_hallucinated": int(np.sum(truth)), "judge_hallucinated": int(np.sum(flagged)),
        "agreement": {"value": ratio(agree, n), "interval": list(wilson(agree, n))},
        **measures,
        "class_agreement": {"compared": len(classed), "value": ratio(same, len(classed)),
                            "interval": list(wilson(same, len(classed)))},
    }


def lines(report: dict, name: str) -> Iterable[str]:
    """The report as the command prints it."""
    def show(m: dict) -> str:
        low, high = m["interval"]
        value = "n/a" if m["value"] is None else f"{m['value']:.3f}"
        return value if low is None else f"{value} [{low:.3f}, {high:.3f}]"

    yield (f"rt4chart eval --gold phoenix:{name}: {report['compared']} answer(s) compared; "
           f"{report['unreviewed']} without a review, {report['conflicting']} with reviewers "
           f"who disagree, {report['judge_undecided']} without a judge label, "
           f"{report['not_in_phoenix']} not found in Phoenix")
    yield (f"  agreement {show(report['agreement'])}, Cohen's kappa {show(report['kappa'])}, "
           f"judge F1 {show(report['f1'])} (precision {show(report['precision'])}, recall "
           f"{show(report['recall'])})")
    yield (f"  ENT/CON/NIC agreement {show(report['class_agreement'])} on "
           f"{report['class_agreement']['compared']} answer(s) with a class")
    if report["unknown_labels"]:
        shown = ", ".join(f"{raw!r} x{n}" for raw, n in report["unknown_labels"].items())
        yield f"  unknown labels (not compared): {shown}"
