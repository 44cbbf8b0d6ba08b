"""What one trace may hold: field limits checked at validation, work limits checked at
segmentation (and, for claims, at decomposition).

Field limits are fixed: an id, a route or a metadata entry over them is not a trace anyone
meant to send, and later stages (table columns, grouping keys, file names) assume them. A
record over one goes to the dead letters with stage "validate", naming the field and the limit.

Work limits bound what one trace can cost (judge calls grow with answer sentences, claims and
context windows; memory with context size). They are options with safe defaults. A trace over
one is dead-lettered (stage "segment"), naming the limit, unless `oversize="truncate"`: then it
is audited on its first N sentences (context cut after the last sentence kept) and marked
`partial` on its PreparedTrace.
"""

from __future__ import annotations

from dataclasses import dataclass

from rt4chart.transforms.common.options_spec import Flex, field_option, option

# Field limits (validation).
MAX_TRACE_ID_CHARS = 256
MAX_ROUTE_CHARS = 256
MAX_DOC_ID_CHARS = 256
MAX_LABEL_CHARS = 256  # task, generator
# The question goes into every decomposition prompt (one per answer sentence): a 1 MB question
# cost 1.75 M input tokens for a one-sentence answer. 20,000 characters (about 5,000 tokens)
# is far beyond a user's question, and leaves room for a question that quotes a passage.
MAX_QUESTION_CHARS = 20_000
# The user's earlier turns of a conversation go with the question into every prompt: as much
# again. A span source keeps the latest turns within it (`span_mapping`); a record over it is
# refused.
MAX_CONVERSATION_CHARS = 20_000
MAX_METADATA_ENTRIES = 64
MAX_METADATA_CHARS = 1024  # each key and each value
# A structured context (data-to-text records) nested deeper than this is not a record but a
# depth bomb; it is also far below what the JSON encoders recurse to.
MAX_JSON_DEPTH = 32

OVERSIZE_MODES = ("reject", "truncate")


def _limit(flag: str, default: int, what: str, flex: Flex):
    """A work limit as an option (not given: the config's default)."""
    return option(flag, default=default, parsed_default=None, parse=int, metavar="N", flex=flex,
                  help=f"limit per trace: {what} (default {default:,}); a trace over it is a "
                       "dead letter naming the limit, or see --oversize")


@dataclass(frozen=True)
class LimitsConfig:
    """Work limits per trace; `oversize` says what happens to a trace over one.

    Attributes:
        max_answer_sentences: answer sentences (one decomposition call each).
        max_context_sentences: context sentences over all documents (they make the windows).
        max_context_chars: characters over all context documents.
        max_claims_per_answer: claims decomposed from one answer (checked where claims are
            numbered).
        oversize: "reject" (dead letter naming the limit) or "truncate" (audit the first N
            sentences or claims, mark the trace partial).
    """

    max_answer_sentences: int = _limit(
        "--max-answer-sentences", 250, "answer sentences (one decomposition call each)",
        flex=Flex(
            "Max answer sentences",
            "Limit per trace: answer sentences. A trace over it is a dead letter naming the "
            "limit (or see oversize). Default: 250.",
            regexes=("^[1-9][0-9]*$",)))
    max_context_sentences: int = _limit(
        "--max-context-sentences", 5_000,
        "context sentences over all documents (they make the windows)",
        flex=Flex(
            "Max context sentences",
            "Limit per trace: context sentences over all documents. Default: 5000.",
            regexes=("^[1-9][0-9]*$",)))
    max_context_chars: int = _limit(
        "--max-context-chars", 1_000_000, "characters over all context documents",
        flex=Flex(
            "Max context characters",
            "Limit per trace: characters over all context documents. Default: 1000000.",
            regexes=("^[1-9][0-9]*$",)))
    max_claims_per_answer: int = _limit(
        "--max-claims-per-answer", 1_000, "claims decomposed from one answer",
        flex=Flex(
            "Max claims per answer",
            "Limit per trace: claims decomposed from one answer. Default: 1000.",
            regexes=("^[1-9][0-9]*$",)))
    oversize: str = option(
        "--oversize",
        flex=Flex(
            "Oversize traces",
            "A trace over a limit: reject (a dead letter naming the limit) or truncate (audit "
            "its first N sentences or claims). Default: reject.",
            regexes=("^(reject|truncate)$",)),
        default="reject", parsed_default=None, metavar="|".join(OVERSIZE_MODES),
        help="a trace over a limit: reject (default: a dead letter naming the limit) or "
             "truncate (audit its first N sentences or claims)")

    def __post_init__(self) -> None:
        for name in ("max_answer_sentences", "max_context_sentences", "max_context_chars",
                     "max_claims_per_answer"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                flag = field_option(LimitsConfig, name)[1].flag
                raise ValueError(f"{flag} ({name}) must be an integer >= 1, got {value!r}")
        if self.oversize not in OVERSIZE_MODES:
            raise ValueError(f"--oversize must be one of {', '.join(OVERSIZE_MODES)}, "
                             f"got {self.oversize!r}")

    @property
    def truncate(self) -> bool:
        return self.oversize == "truncate"


def over_limit(name: str, limit: int, what: str) -> str:
    """The reason a trace over a work limit gives: the limit's name, value and what was over."""
    return f"over limit {name}={limit}: {what}"


def claims_over_limit(n_claims: int, limits: LimitsConfig) -> str | None:
    """The reason an answer with `n_claims` claims is over `max_claims_per_answer`, or None.

    Meant for where claims are numbered (transforms/decompose.py `number_claims`): reject ->
    the trace's dead letter; truncate -> keep the first `max_claims_per_answer` claims and mark
    the answer partial.
    """
    if n_claims <= limits.max_claims_per_answer:
        return None
    return over_limit("max_claims_per_answer", limits.max_claims_per_answer,
                      f"the answer has {n_claims} claims")
