"""The judge's probability that a claim is unsupported, from the label token's log-probabilities.

The verification schema puts the label last (`"label": "ENT"`). The token that starts the label's
value carries, in its `top_logprobs`, the model's alternatives at that point: their probability
mass on tokens that begin "ENT", "CON" or "NIC", renormalised over the three, gives
P(ENT), and `p_unsupported = 1 − P(ENT)` (the claim is contradicted or not in the context).
Token positions are counted in UTF-8 bytes (a token can be part of a character).
"""

from __future__ import annotations

import math
import re
from typing import Any

LABELS = ("ENT", "CON", "NIC")
_LABEL_VALUE = re.compile(r'"label"\s*:\s*"')


def _token_bytes(token: Any) -> bytes:
    raw = getattr(token, "bytes", None)
    return bytes(raw) if raw else token.token.encode("utf-8")


def _mass(prefix: bytes, alternatives: list[tuple[bytes, float]]) -> dict[str, float]:
    mass = dict.fromkeys(LABELS, 0.0)
    for text, logprob in alternatives:
        if not text.startswith(prefix):
            continue
        rest = text[len(prefix):].decode("utf-8", errors="ignore").strip()
        for label in LABELS:
            if rest and (label.startswith(rest) or rest.startswith(label)):
                mass[label] += math.exp(logprob)
                break
    return mass


def p_unsupported(content: str, logprobs: Any) -> float | None:
    """1 − P(ENT) from a chat completion's `logprobs` (None when it cannot be read)."""
    tokens = getattr(logprobs, "content", None) if logprobs is not None else None
    matches = list(_LABEL_VALUE.finditer(content or ""))
    if not tokens or not matches:
        return None
    start = len(content[: matches[-1].end()].encode("utf-8"))
    position = 0
    for token in tokens:
        raw = _token_bytes(token)
        if position <= start < position + len(raw):
            prefix = raw[: start - position]
            alternatives = [(_token_bytes(t), t.logprob) for t in (token.top_logprobs or [])]
            if not any(text == raw for text, _ in alternatives):
                alternatives.append((raw, token.logprob))
            mass = _mass(prefix, alternatives)
            total = sum(mass.values())
            return None if total <= 0 else 1.0 - mass["ENT"] / total
        position += len(raw)
    return None
