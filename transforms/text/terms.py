"""A text's terms: the stems of its content words and its numbers, the unit of "about the same
thing" for `--prune-windows` (transforms/prune.py), the estimate's prune count and the judges'
reply-size classes (transforms/judges/openai/reply_size.py). Pure functions, no Beam."""

from __future__ import annotations

import functools

from rt4chart.transforms.text.quantities import number_terms
from rt4chart.transforms.text.words import content_words, short_stem


@functools.lru_cache(maxsize=4096)
def terms(text: str) -> frozenset[str]:
    """The stems of a text's content words and its numbers (canonical, "#"-prefixed)."""
    return frozenset({short_stem(w) for w in content_words(text)}
                     | {"#" + n for n in number_terms(text)})


def relevant(claim: str, window: str) -> bool:
    """Whether a window may be about a claim: it shares a content word or a number with it
    (a claim with neither is relevant everywhere)."""
    wanted = terms(claim)
    return not wanted or not wanted.isdisjoint(terms(window))
