"""A call's stage and reply size told from its rendered prompt, as a provider sees the call.

The judge passes these facts down with each call (`call_facts.CallFacts`); this reads them back
out of a prompt for what has only prompts: the throughput bench's replay of recorded requests
(`tests/bench/replay_reservation.py`), and the tests that the judge's facts give the same stage
and size as the prompts it sends (`tests/unit/test_call_facts.py`). It is the parse the judge
used before the facts were passed down.
"""

from __future__ import annotations

from rt4chart.transforms.judges.openai.reply_size import CHARS_PER_TOKEN, likely_quote_tokens
from rt4chart.transforms.judges.openai.reservation import stage_of

_VERIFY_SCHEMAS = ("verify", "verify_many", "verify_absence")


def _block(text: str, tag: str) -> str | None:
    start = text.find(f"<{tag}>")
    if start < 0:
        return None
    end = text.find(f"</{tag}>", start)
    return text[start + len(tag) + 2: end if end >= 0 else len(text)]


def _stage(schema_name: str, claims: int | None, user: str) -> str:
    """A call's reservation stage: its schema, claims and the prompt's first block's tag, and
    whether it has a hint."""
    head = user.lstrip()
    reads = head[1:head.find(">")] if head.startswith("<") and ">" in head[:40] else None
    if reads and "\n<hint>\n" in head:  # the global pass of a claim a window labelled ENT/CON
        reads += "+hint"
    return stage_of(schema_name, claims, reads)


def _restates(schema_name: str) -> bool:
    return schema_name == "decompose"


def subject_tokens(user: str) -> int:
    """About how many tokens the prompt's last block has (the sentence to decompose, the claim
    or claims to check: every prompt ends with it)."""
    text = user.rstrip()
    close = text.rfind("</")
    if close < 0 or not text.endswith(">"):
        return len(text) // CHARS_PER_TOKEN
    opening = text.rfind(f"<{text[close + 2:-1]}>", 0, close)
    return (close - opening) // CHARS_PER_TOKEN if opening >= 0 else len(text) // CHARS_PER_TOKEN


def _claims(user: str) -> list[str]:
    single = _block(user, "claim")
    if single is not None:
        return [single.strip()]
    many = _block(user, "claims") or ""
    return [line.partition("] ")[2] for line in many.splitlines() if line.strip()]


def reply_size(schema_name: str, user: str) -> int:
    """The size class input of a call's reply: likely quote tokens for a verification, the
    subject's tokens (the sentence) otherwise."""
    if schema_name not in _VERIFY_SCHEMAS:
        return subject_tokens(user)
    passage = _block(user, "passage") or _block(user, "context") or ""
    return sum(likely_quote_tokens(claim, passage) for claim in _claims(user))
