"""What a judge's reply will be about, in tokens: the size class of its output reservation.

A reply's length follows what it has to write, and that can be read from the prompt before the
call:

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
"""

from __future__ import annotations

import functools
import math
import re

from rt4chart.transforms.prune import terms

CHARS_PER_TOKEN = 4
QUOTED_SENTENCES = 2  # at most this many sentences count as the likely quote
SHARED_SHARE = 0.2  # a sentence with this share of the claim's terms may be quoted
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_VERIFY_SCHEMAS = ("verify", "verify_many", "verify_absence")


def _block(text: str, tag: str) -> str | None:
    start = text.find(f"<{tag}>")
    if start < 0:
        return None
    end = text.find(f"</{tag}>", start)
    return text[start + len(tag) + 2: end if end >= 0 else len(text)]


def subject_tokens(user: str) -> int:
    """About how many tokens the prompt's last block has (the sentence to decompose, the claim
    or claims to check: every prompt ends with it)."""
    text = user.rstrip()
    close = text.rfind("</")
    if close < 0 or not text.endswith(">"):
        return len(text) // CHARS_PER_TOKEN
    opening = text.rfind(f"<{text[close + 2:-1]}>", 0, close)
    return (close - opening) // CHARS_PER_TOKEN if opening >= 0 else len(text) // CHARS_PER_TOKEN


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


def _claims(user: str) -> list[str]:
    single = _block(user, "claim")
    if single is not None:
        return [single.strip()]
    many = _block(user, "claims") or ""
    return [line.partition("] ")[2] for line in many.splitlines() if line.strip()]


@functools.lru_cache(maxsize=1024)  # asked before the call and again for its reply
def reply_size(schema_name: str, user: str) -> int:
    """The size class input of a call's reply: likely quote tokens for a verification, the
    subject's tokens (the sentence) otherwise."""
    if schema_name not in _VERIFY_SCHEMAS:
        return subject_tokens(user)
    passage = _block(user, "passage") or _block(user, "context") or ""
    return sum(likely_quote_tokens(claim, passage) for claim in _claims(user))
