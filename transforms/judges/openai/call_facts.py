"""What a judge call is about, told by the judge method that makes it.

The output reservation (:mod:`.reservation`) learns replies' lengths per stage and size class.
Both follow from what the call asks, which the method that renders the prompt holds: the
reply's schema, what the prompt reads (a window's passage, the full context, a hint) and the
text the reply is about (the claims and the passage they are checked against, or the sentence a
decomposition restates). The judge passes these facts down with the call; nothing reads them
back out of the rendered prompt.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from rt4chart.transforms.judges.openai.reply_size import quote_tokens, sentence_tokens
from rt4chart.transforms.judges.openai.reservation import stage_of

VERIFY_SCHEMAS = ("verify", "verify_many", "verify_absence")
# What a prompt reads first (its first block), by the kind of call.
READS_WINDOW, READS_CONTEXT, READS_QUESTION = "passage", "context", "question"


@dataclass(frozen=True)
class CallFacts:
    """One call's reply schema, what its prompt reads, and what its reply is about.

    Attributes:
        schema: the reply's JSON schema ("decompose", "verify", "verify_many",
            "verify_absence").
        reads: the prompt's first block: a window's "passage", the full "context" of the
            global pass and of absence checks, or the "question" of a decomposition.
        claims: the claims a verification checks (in the order the prompt numbers them).
        passage: the window or context they are checked against.
        sentence: the sentence a decomposition restates.
        hint: the global pass of a claim a window labelled ENT or CON, shown the window's
            evidence (mostly confirmed, quoting it; without one, mostly NIC with no quote).
        numbered: how many claims one reply answers by number (verify_many), else None.
    """

    schema: str
    reads: str
    claims: tuple[str, ...] = ()
    passage: str = ""
    sentence: str = ""
    hint: bool = False
    numbered: int | None = None

    @property
    def stage(self) -> str:
        """The reservation's stage: schema, claims per reply and what the prompt reads."""
        reads = f"{self.reads}+hint" if self.hint else self.reads
        return stage_of(self.schema, self.numbered, reads)

    @property
    def restates(self) -> bool:
        """Whether the reply restates its subject (a decomposition: its length is
        proportional to the sentence's)."""
        return self.schema == "decompose"

    @functools.cached_property
    def size(self) -> int:  # asked before the call and again for its reply
        """The size class input of the reply: the likely quote tokens of a verification, the
        sentence's tokens of a decomposition (`reply_size`)."""
        if self.schema in VERIFY_SCHEMAS:
            return quote_tokens(self.claims, self.passage)
        return sentence_tokens(self.sentence)
