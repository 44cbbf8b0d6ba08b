"""ROC, precision-recall and reliability plots as SVG files (pipeline/report/svg.py: the same
charts as the audit report, no plotting library)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rt4chart.pipeline.eval import metrics
from rt4chart.pipeline.eval.measures import Gold, System
from rt4chart.pipeline.report import svg
from rt4chart.pipeline.report.svg import OKABE_ITO, Axes, Line

GREY = "#777777"
UNIT = (0.0, 1.0)


def _save(path: Path, drawing: str) -> str:
    # A standalone file (Markdown viewers and browsers open it); the same input writes the same
    # bytes (no date or version stamp).
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n' + drawing + "\n",
                    encoding="utf-8")
    return path.name


def _pairs(xs, ys) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in zip(xs, ys, strict=True)]


def _fmt(value: float | None, name: str) -> str:
    return "" if value is None else f" ({name} {value:.3f})"


def roc(gold: Gold, systems: list[System], idx: np.ndarray, path: Path) -> str:
    """The ROC curve of each system on the items `idx`; the file's name."""
    y = gold.y[idx]
    lines = []
    for i, s in enumerate(systems):
        fpr, tpr = metrics.roc_curve(y, s.score[idx])
        name = s.name + _fmt(metrics.auroc(y, s.score[idx]), "AUROC")
        lines.append(Line(name, _pairs(fpr, tpr), OKABE_ITO[i % len(OKABE_ITO)]))
    title = "ROC, hallucinated answers"
    axes = Axes("false positive rate", "true positive rate", x_range=UNIT, y_range=UNIT)
    return _save(path, svg.lines("roc", title, title, lines, axes,
                                 references=[Line("chance", [(0, 0), (1, 1)], GREY)]))


def pr(gold: Gold, systems: list[System], idx: np.ndarray, path: Path) -> str:
    """The precision-recall curve of each system on the items `idx`; the file's name."""
    y = gold.y[idx]
    lines = []
    for i, s in enumerate(systems):
        recall, precision = metrics.pr_curve(y, s.score[idx])
        name = s.name + _fmt(metrics.auprc(y, s.score[idx]), "AUPRC")
        lines.append(Line(name, _pairs(recall, precision), OKABE_ITO[i % len(OKABE_ITO)],
                          step=True))
    refs = [Line("prevalence", [(0, float(y.mean())), (1, float(y.mean()))], GREY)] if len(y) \
        else []
    title = "Precision-recall, hallucinated answers"
    axes = Axes("recall", "precision", x_range=UNIT, y_range=UNIT)
    return _save(path, svg.lines("pr", title, title, lines, axes, references=refs))


def calibration(gold: Gold, systems: list[System], idx: np.ndarray, path: Path,
                group: str = "overall") -> str:
    """The reliability plot (10 bins) of each probabilistic system; the file's name."""
    y = gold.y[idx]
    lines = []
    for i, s in enumerate(systems):
        if not s.probability:
            continue
        bins = metrics.reliability(y, s.score[idx])
        lines.append(Line(
            f"{s.name} (ECE {metrics.ece(y, s.score[idx]) or 0:.3f})",
            [(float(b[0]), float(b[1])) for b in bins], OKABE_ITO[i % len(OKABE_ITO)],
            tips=[f"{s.name}: mean p {b[0]:.3f}, {b[1]:.1%} hallucinated of {b[2]}"
                  for b in bins]))
    title = f"Reliability (10 bins), {group}, {len(idx)} answers"
    axes = Axes("mean predicted p_hallucinated", "fraction hallucinated", x_range=UNIT,
                y_range=UNIT)
    return _save(path, svg.lines("calibration", title, title, lines, axes,
                                 references=[Line("perfect calibration", [(0, 0), (1, 1)],
                                                  GREY)]))


def calibration_file(group: str) -> str:
    """The reliability plot's file name of a group (overall or a task type)."""
    if group == "overall":
        return "calibration.svg"
    return "calibration_" + "".join(c if c.isalnum() else "_" for c in group.lower()) + ".svg"


def write_all(gold: Gold, systems: list[System], groups: dict[str, np.ndarray],
              out: Path) -> list[str]:
    """The ROC and precision-recall plots of the reported part, and a reliability plot per
    group (overall and each task type); their file names (relative to `out`)."""
    idx = groups["overall"]
    return [roc(gold, systems, idx, out / "roc.svg"), pr(gold, systems, idx, out / "pr.svg"),
            *(calibration(gold, systems, g, out / calibration_file(name), name)
              for name, g in groups.items())]
