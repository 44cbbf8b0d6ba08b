"""A span of a traced RAG application, as every span source (OTLP, OpenInference/Phoenix,
Langfuse) is read into it before its trace is assembled (`transforms/assemble.py`).

Attributes are flat: nested values and lists are spelled out as dotted keys, as OpenTelemetry
carries OpenInference attributes (`retrieval.documents.0.document.content`); values are
strings, numbers or booleans. No Beam or vendor imports here.
"""

from __future__ import annotations

from dataclasses import dataclass

Scalar = str | int | float | bool
# The attribute of a stand-in for a span that could not be read (its own dead letter): a trace
# holding one is not assembled, as it is not whole. Its value says why the span was unreadable.
UNREADABLE_SPAN = "rt4chart.unreadable_span"
# The attribute (True) a reader sets on a span its source marks failed (an OTel status of
# ERROR, a Langfuse observation of level ERROR): a failed tool's output is no evidence.
SPAN_FAILED = "rt4chart.span_failed"


@dataclass(frozen=True)
class SourceSpan:
    """One span: its ids, times, and its attributes and its resource's attributes (flat)."""

    trace_id: str  # the source's trace id: OTel's as 32 lowercase hex digits
    span_id: str
    parent_id: str  # "" for a root span
    name: str
    start_ns: int
    end_ns: int
    attributes: tuple[tuple[str, Scalar], ...] = ()
    resource: tuple[tuple[str, Scalar], ...] = ()
    received_us: int | None = None  # streaming: publish time of the message that carried it

    @property
    def is_root(self) -> bool:
        return not self.parent_id

    def attribute_map(self) -> dict[str, Scalar]:
        return dict(self.attributes)
