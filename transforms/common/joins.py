"""The method's joins and the rate interval: pure functions, tested without a pipeline."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence


def or_join(labels: Sequence[str]) -> tuple[str, int | None]:
    """Local OR-join over a claim's windows: CON if any window contradicts, else ENT if any
    supports, else NIC. Returns the label and the index of the deciding window (the first one
    with that label; None for NIC)."""
    for wanted in ("CON", "ENT"):
        for i, label in enumerate(labels):
            if label == wanted:
                return wanted, i
    return "NIC", None


def and_join(labels: Iterable[str]) -> str:
    """Answer-level AND-join: CON if any claim is CON, else NIC if any is NIC, else ENT.

    An answer with no claims (empty, or nothing factual) asserts nothing unsupported: ENT.
    """
    seen = set(labels)
    if "CON" in seen:
        return "CON"
    if "NIC" in seen:
        return "NIC"
    return "ENT"


def merge_spans(spans: Iterable[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Hallucinated spans: one per distinct answer span, CON winning over NIC, in order."""
    best: dict[tuple[int, int], str] = {}
    for start, end, label in spans:
        if best.get((start, end)) != "CON":
            best[(start, end)] = label
    return [(s, e, lbl) for (s, e), lbl in sorted(best.items())]


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float | None, float | None]:
    """95% Wilson score interval of k successes in n trials; (None, None) when n is 0."""
    if n <= 0:
        return None, None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # The interval always holds p; clamp away rounding at p = 0 or 1.
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))
