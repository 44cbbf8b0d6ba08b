"""What a judge's reply will be about, in tokens: the size class of its output reservation.

A reply's length follows what it has to write, which the judge method that makes the call
knows (`call_facts.CallFacts`: the sentence, the claims and the passage, never read back out of
the rendered prompt):

- a decomposition restates its sentence as claims: its size is the sentence's;
- a verification quotes, as evidence, the passage sentences that support or contradict the
  claim, and quotes nothing when the claim is not in the passage (NIC). Its size is the likely
  quote: the passage sentences that share at least a fifth of the claim's content words and
  numbers (by 4-letter stem, as `--prune-windows` and the grounding compare words), the best
  two. A claim checked against a window it has little in common with (most (claim, window)
  pairs of local verification) has size 0 and its own, small, reservation. (Measured on the
  simulator's replies to 48 RAGTruth traces, `tests/bench/bench_throughput.py`: these
  thresholds left the least reserved-and-unused output per call, 77 tokens against 212 with
  no prediction and 144 with half of the terms and three sentences.)

This only chooses which replies' lengths a call's reservation is learned from
(`reservation.OutputReservation` keeps a quantile per stage and size class): when a judge's
replies do not follow the prediction, each class still learns the lengths it sees, and a reply
that exceeds its reservation is retried, never taken cut off.

It also says how large a reply may grow whatever the server does (:func:`reply_cap`): a server
that ignores the request's output limit, or a model that loops, must not stream forever.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from rt4chart.transforms.judges.prompt_tokens import CHARS_PER_TOKEN
from rt4chart.transforms.text.terms import terms

QUOTED_SENTENCES = 2  # at most this many sentences count as the likely quote
SHARED_SHARE = 0.2  # a sentence with this share of the claim's terms may be quoted
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
SENTENCE_FRAME = len("<sentence>\n\n")  # the prompt's tag and line breaks around the sentence


# A reply's cap (reply_cap), from the output limit it was sent with (never below the judge's
# max_output_tokens: the probe's 2-token calls must show a server that ignores the limit).
# Tokens are counted as chunks (or log-probability entries), and a server may stream a token in
# pieces (the suite's local server sends words, spaces and punctuation apart: up to about two
# pieces a token), so the count may reach CAP_PIECES x the limit, plus CAP_SLACK. Text: at most
# MAX_TOKEN_BYTES a token of the limit (a token of any script and a JSON escape fit; a reply of
# 256 tokens is about 1 KB), plus CAP_SLACK of them.
CAP_PIECES = 4
CAP_SLACK = 16
MAX_TOKEN_BYTES = 32


@dataclass(frozen=True)
class ReplyCap:
    """The most a streamed reply may carry, in tokens and in bytes of text."""

    tokens: int
    bytes: int

    def exceeded(self, tokens: int, size: int) -> bool:
        return tokens > self.tokens or size > self.bytes


def reply_cap(max_tokens: int, max_output_tokens: int) -> ReplyCap:
    """The cap of a reply sent with the output limit `max_tokens`, by a judge whose smallest
    full budget is `max_output_tokens`: a server that honours the limit never reaches it."""
    limit = max(max_tokens, max_output_tokens, 1)
    return ReplyCap(CAP_PIECES * limit + CAP_SLACK, (limit + CAP_SLACK) * MAX_TOKEN_BYTES)


def sentence_tokens(sentence: str) -> int:
    """About how many tokens a decomposition's subject has: the sentence with the tag and line
    breaks that frame it in the prompt (`<sentence>` block), as the estimate always counted."""
    return (len(sentence) + SENTENCE_FRAME) // CHARS_PER_TOKEN


@functools.lru_cache(maxsize=256)
def _sentences(passage: str) -> tuple[tuple[int, frozenset[str]], ...]:
    """A passage's sentences (lines of structured text) as (tokens, terms)."""
    return tuple((math.ceil(len(s) / CHARS_PER_TOKEN), terms(s))
                 for s in _SENTENCE_END.split(passage) if s.strip())


def likely_quote_tokens(claim: str, passage: str) -> int:
    """Tokens of the passage sentences a judge would likely quote for the claim (0: likely
    none, the claim shares little with the passage)."""
    wanted = terms(claim)
    if not wanted:
        return 0
    need = max(1, math.ceil(len(wanted) * SHARED_SHARE))
    hits = sorted(((len(wanted & found), tokens) for tokens, found in _sentences(passage)
                   if len(wanted & found) >= need), reverse=True)
    return sum(tokens for _, tokens in hits[:QUOTED_SENTENCES])


def quote_tokens(claims: tuple[str, ...], passage: str) -> int:
    """The size class input of a verification's reply: its claims' likely quote tokens."""
    return sum(likely_quote_tokens(claim, passage) for claim in claims)
