"""ROC, precision-recall and reliability plots (PNG, matplotlib's Agg backend: no display)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rt4chart.pipeline.eval import metrics
from rt4chart.pipeline.eval.measures import Gold, System


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4.5), dpi=100)
    return plt, fig, ax


def _save(plt, fig, ax, path: Path, title: str) -> str:
    ax.set_title(title)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})  # no version stamp: same input, same file
    plt.close(fig)
    return path.name


def roc(gold: Gold, systems: list[System], idx: np.ndarray, path: Path) -> str:
    plt, fig, ax = _figure()
    y = gold.y[idx]
    for s in systems:
        fpr, tpr = metrics.roc_curve(y, s.score[idx])
        auc = metrics.auroc(y, s.score[idx])
        ax.plot(fpr, tpr, marker=".", label=f"{s.name} (AUROC {auc:.3f})" if auc is not None
                else s.name)
    ax.plot([0, 1], [0, 1], ":", color="grey")
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    return _save(plt, fig, ax, path, "ROC, hallucinated answers")


def pr(gold: Gold, systems: list[System], idx: np.ndarray, path: Path) -> str:
    plt, fig, ax = _figure()
    y = gold.y[idx]
    for s in systems:
        recall, precision = metrics.pr_curve(y, s.score[idx])
        ap = metrics.auprc(y, s.score[idx])
        ax.step(recall, precision, where="post", marker=".",
                label=f"{s.name} (AUPRC {ap:.3f})" if ap is not None else s.name)
    if len(y):
        ax.axhline(float(y.mean()), linestyle=":", color="grey", label="prevalence")
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.set_ylim(0, 1.02)
    return _save(plt, fig, ax, path, "Precision-recall, hallucinated answers")


def calibration(gold: Gold, systems: list[System], idx: np.ndarray, path: Path,
                group: str = "overall") -> str:
    plt, fig, ax = _figure()
    y = gold.y[idx]
    for s in systems:
        if not s.probability:
            continue
        bins = metrics.reliability(y, s.score[idx])
        ax.plot([b[0] for b in bins], [b[1] for b in bins], marker="o",
                label=f"{s.name} (ECE {metrics.ece(y, s.score[idx]) or 0:.3f})")
    ax.plot([0, 1], [0, 1], ":", color="grey", label="perfect calibration")
    ax.set_xlabel("mean predicted p_hallucinated")
    ax.set_ylabel("fraction hallucinated")
    return _save(plt, fig, ax, path, f"Reliability (10 bins), {group}, {len(idx)} answers")


def calibration_file(group: str) -> str:
    """The reliability plot's file name of a group (overall or a task type)."""
    if group == "overall":
        return "calibration.png"
    return "calibration_" + "".join(c if c.isalnum() else "_" for c in group.lower()) + ".png"


def write_all(gold: Gold, systems: list[System], groups: dict[str, np.ndarray],
              out: Path) -> list[str]:
    """The ROC and precision-recall plots of the reported part, and a reliability plot per
    group (overall and each task type); their file names (relative to `out`)."""
    idx = groups["overall"]
    return [roc(gold, systems, idx, out / "roc.png"), pr(gold, systems, idx, out / "pr.png"),
            *(calibration(gold, systems, g, out / calibration_file(name), name)
              for name, g in groups.items())]
