"""Content words of claims and evidence, read the way structured text is written.

Pure functions, no Beam. Contexts are full of JSON records, tables and key/value lines whose
keys glue words together: ``RestaurantsTakeOut``, ``review_text``, ``walk-in``, ``24hours``.
A word is therefore taken apart at case changes, at ``_`` and ``-`` and at digit/letter
boundaries, and the glued forms are kept as well ("takeout", "wifi", "5pm"), so that a claim
written either way finds it. Every plain word the text had before (a run of letters and digits)
is still a word: splitting only ever adds words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# Words that say nothing about what a claim is about.
STOPWORDS = frozenset(
    "the and for are was were has have had not but with this that from they them their there "
    "its his her she him you your our can could will would should may might must all any "
    "been being into onto than then also only just very more most some such what which who "
    "whom when where why how does did doing done about over under again each other".split()
)
# A compound: letter/digit runs joined by "_" or "-" (snake_case, kebab-case).
_COMPOUND_RE = re.compile(r"[^\W_]+(?:[_-][^\W_]+)*")
_RUN_RE = re.compile(r"[^\W_]+")
# Adjacent parts glued back together, up to this many: "Take"+"Out" -> "takeout".
MAX_GLUED = 3
# A line of a JSON object: "key": value
_KEY_LINE_RE = re.compile(r'^\s*"((?:[^"\\]|\\.)*)"\s*:\s*(.*?)\s*$')


def split_run(run: str) -> list[str]:
    """A run of letters and digits cut at case changes and digit/letter boundaries.

    "RestaurantsTakeOut" -> Restaurants, Take, Out; "HTTPServer" -> HTTP, Server;
    "WiFi" -> Wi, Fi; "5pm" -> 5, pm; "COVID19" -> COVID, 19.
    """
    parts, start = [], 0
    for i in range(1, len(run)):
        a, b = run[i - 1], run[i]
        after = run[i + 1] if i + 1 < len(run) else ""
        if (a.isdigit() != b.isdigit() or a.islower() and b.isupper()
                or a.isupper() and b.isupper() and after.islower()):
            parts.append(run[start:i])
            start = i
    parts.append(run[start:])
    return parts


def _glued(parts: Sequence[str]) -> Iterable[str]:
    for size in range(2, MAX_GLUED + 1):
        for i in range(len(parts) - size + 1):
            yield "".join(parts[i : i + size])
    if len(parts) > MAX_GLUED:
        yield "".join(parts)


def word_forms(text: str) -> set[str]:
    """Every lower-cased word form of a text: plain runs, their parts and the glued parts."""
    forms: set[str] = set()
    for compound in _COMPOUND_RE.findall(text):
        runs = _RUN_RE.findall(compound)
        parts = [p for run in runs for p in split_run(run)]
        forms.update(runs)
        forms.update(parts)
        forms.update(_glued(parts))
    return {f.lower() for f in forms}


def content_words(text: str) -> set[str]:
    """Word forms of 3+ characters that are not stopwords, and all numbers."""
    return {w for w in word_forms(text)
            if w.isdigit() or (len(w) >= 3 and w not in STOPWORDS)}


def same_stem(a: str, b: str) -> bool:
    """The same word, or a shared 4-letter stem of a 5+ letter word: "verified"/"verify",
    "groups"/"group", "takes"/"take"."""
    if a == b:
        return True
    if min(len(a), len(b)) < 4 or max(len(a), len(b)) < 5:
        return False
    return a[:4] == b[:4]


def json_key_paths(lines: Sequence[str]) -> list[tuple[str, ...]]:
    """For each line of pretty-printed JSON, the keys it sits under and its own key.

    ``"street": true`` inside ``"BusinessParking": {`` gets ("BusinessParking", "street"); a
    line that is not a ``"key": value`` line gets (). Lines come one per JSON line, as the
    context's sentences do; a closing bracket without its opener (a window that starts inside
    an object) is ignored.
    """
    stack: list[str] = []
    paths: list[tuple[str, ...]] = []
    for line in lines:
        text = line.strip()
        match = _KEY_LINE_RE.match(text)
        if match:
            key, value = match.groups()
            paths.append((*(k for k in stack if k), key))
            if value.rstrip(",").strip() in ("{", "["):
                stack.append(key)
            continue
        paths.append(())
        if text.rstrip(",") in ("{", "["):
            stack.append("")  # an unnamed object or array (the record, an array element)
        elif text[:1] in ("}", "]") and stack:
            stack.pop()
    return paths
