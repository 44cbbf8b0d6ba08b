"""Elements that flow between the stages: frozen dataclasses, no Beam or vendor imports.

Every element carries the identity of the trace it came from (trace_id, route, event day), so
that any stage's output can be keyed, joined and accounted for without a lookup.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta

from rt4chart.schemas.usage import Usage

LABELS = ("ENT", "CON", "NIC")

# What a claim is about (given by decomposition, which never sees the context):
# - "fact": a claim about the world, verified against every window and the full context;
# - "source": a claim about what the sources say ("Passage 2 says the museum opened in 1990"),
#   verified the same way (its support is quotable);
# - "absence": a claim that the sources do not say something ("The passages do not say when it
#   opened"), verified once against the full context with its own prompt: ENT when the context
#   indeed lacks it (no quote can show an absence), CON with a grounded quote when it does not.
# A sentence that asserts nothing (a greeting, an offer, a refusal without content, a statement
# about the answer's own form, a heading, a bare citation) has no claims at all.
FACT = "fact"
SOURCE = "source"
ABSENCE = "absence"
CLAIM_KINDS = (FACT, SOURCE, ABSENCE)

# Where a claim's answer spans come from: its verbatim fragments aligned to the sentence, its own
# text found verbatim in the sentence, or (neither aligned) the whole sentence.
SPAN_SOURCES = ("fragments", "claim_text", "sentence")

# The status of a judge's claim whose text asserts nothing checkable ("Passage 1 and Passage
# 2", "Based on the given passages, the lyrics are:"; `transforms.text.assertion.classify`, the
# classifier that decides coverage): it is not verified, has no label, and stays out of its
# answer's label and the rates (`transforms.decompose.number_claims`).
NO_CLAIM = "no_claim"


@dataclass(frozen=True)
class Document:
    """One passage the generator saw: a retrieved document, or a tool's result (`tool` names
    the tool and `call_id` its call, as the agent's trace gave them; its doc_id is then
    `tool:NAME#CALL` unless the record gives one)."""

    doc_id: str
    text: str
    tool: str | None = None
    call_id: str | None = None


@dataclass(frozen=True)
class Trace:
    """A validated RAG trace: question, retrieved passages, answer."""

    trace_id: str
    route: str
    event_time_us: int  # microseconds since the epoch, UTC
    question: str
    contexts: tuple[Document, ...]
    answer: str
    task: str | None = None
    generator: str | None = None
    metadata: tuple[tuple[str, str], ...] = ()
    # Streaming: the trace arrived after its rate window had closed (see
    # transforms/common/windows.py).
    late: bool = False
    # Instruction-like text aimed at an evaluator found in it ("where: snippet", see
    # transforms/checks/injection.py); audited as usual, marked suspicious_input.
    suspicious: tuple[str, ...] = ()
    # Picked by --sample at rate p: 1/p, its weight in route_rates.rate_weighted (1 when it was
    # picked by an --always rule or there is no sampling; see transforms/sampling.py).
    sample_weight: float = 1.0
    # The record as received (its JSON line, message body, or Parquet row as JSON), for the
    # `raw` of a dead letter written after validation (a duplicate, a trace over a limit): never
    # rebuilt from the fields, which would lose what the sender wrote. Not part of equality.
    raw: str | None = field(default=None, compare=False, repr=False)
    # The user's earlier turns of the conversation, oldest first (issue 50): read as the
    # user's setting with the question (`user_text`), never as evidence. The assistant's
    # earlier turns are not kept: what the assistant said is not evidence either.
    conversation: tuple[str, ...] = ()

    @property
    def user_text(self) -> str:
        """What the user said: the earlier user turns, then the question, one per line; what
        the judges read as the question and the premise rule reads the setting from. The
        question alone when there is no conversation."""
        if not self.conversation:
            return self.question
        return "\n".join(t for t in (*self.conversation, self.question) if t)

    @property
    def day(self) -> str:
        """The UTC day (YYYY-MM-DD) of the event time, used to partition rates and costs."""
        return utc_day(self.event_time_us)


_DAY_US = 86_400_000_000
_EPOCH = date(1970, 1, 1)
_FIRST_DAY = (date.min - _EPOCH).days
_LAST_DAY = (date.max - _EPOCH).days


def utc_day(event_time_us: int) -> str:
    """The UTC day (YYYY-MM-DD) of microseconds since the epoch; never raises.

    Validation keeps event times within 0001-01-01..9999-12-31 UTC; a time outside (a trace
    built by hand) is clamped to the nearest representable day rather than failing a run.
    """
    try:
        days = int(event_time_us) // _DAY_US
    except (TypeError, ValueError, OverflowError):  # not a number, NaN, infinity
        days = 0
    days = min(max(days, _FIRST_DAY), _LAST_DAY)
    return (_EPOCH + timedelta(days=days)).isoformat()


@dataclass(frozen=True)
class Sentence:
    """A context sentence: global index over the whole context, offsets within its document."""

    index: int
    doc_id: str
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class AnswerSentence:
    """An answer sentence with its character span in the answer."""

    index: int
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Window:
    """W consecutive context sentences, [first, last] inclusive global sentence indices."""

    index: int
    first: int
    last: int


@dataclass(frozen=True)
class PreparedTrace:
    """A trace with its context and answer segmented and its context windowed."""

    trace: Trace
    sentences: tuple[Sentence, ...]
    answer_sentences: tuple[AnswerSentence, ...]
    windows: tuple[Window, ...]
    # Over a work limit with oversize="truncate": audited on its first sentences only (the trace
    # is cut after the last one kept); the reason names the limit. Later stages carry it.
    partial: bool = False
    partial_reason: str | None = None

    def window_text(self, window: Window) -> str:
        """The text of a window: its sentences in order, one per line."""
        return "\n".join(s.text for s in self.sentences[window.first : window.last + 1])


@dataclass(frozen=True)
class Evidence:
    """A grounded quote: a span of one context document, attributed to one sentence."""

    doc_id: str
    sentence_index: int
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Claim:
    """A self-contained claim decomposed from one answer sentence.

    `answer_start`/`answer_end` are its sentence's span; `spans` are the answer offsets of the
    words the claim restates (see `span_source`; empty means the whole sentence). `kind_note`
    says why the kind is not the decomposer's (an `absence` label on a claim whose text states
    a fact: it is verified as a fact), for the claim row's note.
    """

    trace_id: str
    claim_index: int
    text: str
    sentence_index: int
    answer_start: int
    answer_end: int
    kind: str = FACT
    spans: tuple[tuple[int, int], ...] = ()
    span_source: str = "sentence"
    kind_note: str | None = None

    @property
    def answer_spans(self) -> tuple[tuple[int, int], ...]:
        """The answer spans the claim covers: its own, else its sentence's."""
        return self.spans or ((self.answer_start, self.answer_end),)


@dataclass(frozen=True)
class PlacedClaim:
    """One claim of an answer sentence as decomposed, with the answer spans it restates."""

    text: str
    kind: str = FACT
    spans: tuple[tuple[int, int], ...] = ()
    span_source: str = "sentence"


@dataclass(frozen=True)
class DecomposeResult:
    """The claims of one answer sentence, or the reason the judge could not give them."""

    trace_id: str
    sentence_index: int
    claims: tuple[PlacedClaim, ...]
    status: str  # "ok" | "judge_error"
    error: str | None = None
    usage: Usage = Usage()


@dataclass(frozen=True)
class LocalVerdict:
    """The verdict of one claim against one window."""

    trace_id: str
    claim_index: int
    window_index: int
    label: str | None
    status: str  # "ok" | "judge_error" | "stage_error" (a step around the call failed)
    evidence: tuple[Evidence, ...] = ()
    note: str | None = None
    usage: Usage = Usage()


@dataclass(frozen=True)
class ClaimVerdict:
    """The final verdict of one claim after local and global verification."""

    claim: Claim
    window_labels: tuple[str | None, ...]
    local_label: str | None
    deciding_window: int | None
    label: str | None
    status: str  # "ok" | "judge_error" | NO_CLAIM
    evidence: tuple[Evidence, ...] = ()
    note: str | None = None
    usage: Usage = Usage()  # of every judge call made for this claim (local and global)
    p_unsupported: float | None = None  # the final verification's P(not ENT); None on error


@dataclass(frozen=True)
class DeadLetter:
    """A record that could not be processed: kept whole, with the reason and the stage."""

    stage: str
    reason: str
    raw: str
    trace_id: str | None = None
    route: str | None = None


NO_ROUTE = "(no route)"  # route_rates' route of the dead letters that name none
TRAFFIC_KINDS = ("seen", "sampled", "always", "skipped_cap", "dead_lettered")


@dataclass(frozen=True)
class Traffic:
    """One trace counted in route_rates' traffic columns (`kind`, one of TRAFFIC_KINDS): seen
    by the sampling decision, picked by the rate or by an always rule, skipped by a spend cap,
    or dead-lettered. `event_time_us` None (a dead letter): counted in the window of the
    element's own timestamp."""

    route: str
    event_time_us: int | None
    kind: str
    count: int = 1  # an earlier run's route_rates counts, carried whole (redo_merge.py)

    def __post_init__(self) -> None:
        if self.kind not in TRAFFIC_KINDS:
            raise ValueError(f"traffic kind must be one of {', '.join(TRAFFIC_KINDS)}, got "
                             f"{self.kind!r}")


@dataclass(frozen=True)
class Message:
    """A Pub/Sub message as received: body, attributes and publish time."""

    data: bytes
    attributes: tuple[tuple[str, str], ...] = ()
    publish_time_us: int | None = None
    message_id: str | None = None


@dataclass(frozen=True)
class Calibration:
    """How a judge's raw score becomes the probabilities of the rows (see
    :mod:`rt4chart.transforms.common.probability`, which holds the rule; this is its data).

    ``decision`` is the judge's own threshold on its raw score (the judge says ENT below it).
    ``claim_map`` maps the raw score to P(claim unsupported) and ``answer_map`` the largest
    claim probability of an answer to P(answer hallucinated); each is a tuple of (x, y)
    breakpoints, non-decreasing in both, interpolated linearly and flat outside; empty means
    the identity. ``source`` says where the maps come from ("identity" or a file) and ``fit``
    what they were fitted on (JSON text, recorded in summary.json).
    """

    judge_model: str
    decision: float = 0.5
    claim_map: tuple[tuple[float, float], ...] = ()
    answer_map: tuple[tuple[float, float], ...] = ()
    source: str = "identity"
    fit: str = "{}"


@dataclass(frozen=True)
class RunInfo:
    """Identity of a run's judging configuration, recorded on every verdict row.

    ``calibration`` (None: the identity with threshold 0.5) sets the thresholds the rows'
    probabilities are on the right side of."""

    judge_model: str
    prompt_hash: str
    calibration: Calibration | None = None
    # The confirming judge's identity (`--confirm-judge`): its model and prompt hash key its
    # judge_cache rows and name it in the costs table; None: no second judge.
    confirm: RunInfo | None = None


@dataclass(frozen=True)
class RenderedText:
    """Text shown to a judge, and where each context sentence sits in it.

    ``segments`` holds (offset in ``text``, sentence): a quote found in the rendered text maps
    back to sentence indices and offsets within the sentence's document.
    """

    text: str
    segments: tuple[tuple[int, Sentence], ...]


@dataclass(frozen=True)
class TraceKey:
    """The identity every request carries, for keying and cost attribution."""

    trace_id: str
    route: str
    day: str
    event_time_us: int = 0
    late: bool = False


@dataclass(frozen=True)
class FailedClaim:
    """A claim (or an answer sentence that could not be decomposed) that has no verdict."""

    claim: Claim
    stage: str
    reason: str
    usage: Usage = Usage()


@dataclass(frozen=True)
class ClaimSet:
    """A prepared trace with its numbered claims, and the sentences that failed to decompose.

    `no_claims` are the judge's claims whose text asserts nothing checkable (status NO_CLAIM):
    numbered with the others, never verified, kept for the claims table."""

    prepared: PreparedTrace
    claims: tuple[Claim, ...]
    failed: tuple[FailedClaim, ...] = ()
    usage: Usage = Usage()  # of the decomposition calls
    no_claims: tuple[Claim, ...] = ()

    @property
    def key(self) -> TraceKey:
        t = self.prepared.trace
        return TraceKey(t.trace_id, t.route, t.day, t.event_time_us, t.late)
