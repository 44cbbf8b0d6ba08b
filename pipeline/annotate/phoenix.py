"""Phoenix's REST API, as the write-back needs it: root spans by trace id, span annotations.

Two calls, both batched: `GET /v1/projects/{project}/spans?trace_id=..&parent_id=null` finds
the root span (the span without a parent) of up to `batch_size` traces at a time, and
`POST /v1/span_annotations?sync=true` writes up to `batch_size` annotations. Phoenix updates an
annotation with the same (span, name, identifier) in place, so a second write-back replaces
the first instead of adding to it. Then the evidence on the documents: the spans of the traces
whose claims cite evidence (`GET .../spans?trace_id=..`) give, by the rule that made the
trace's contexts (`span_attributes.document_sources`), the retriever (or reranker) span and
position of each cited document, and `POST /v1/document_annotations?sync=true` writes one
annotation per such document (name "<name> evidence"; Phoenix keeps one per span, position
and name, so it too is replaced, never added). Transport errors, 429 and 5xx are retried
(tenacity, with exponential back-off); the key (`PHOENIX_API_KEY`) is sent as a bearer token
and redacted from the client's errors (and, a well-known key variable, from every log line), so
that no log line or error shows it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from rt4chart.pipeline.annotate.verdicts import (
    TraceVerdict,
    Verdicts,
    annotation,
    document_annotations,
    otel_trace_id,
)
from rt4chart.pipeline.sources.phoenix_client import PhoenixClient, PhoenixTarget
from rt4chart.transforms.common.span_attributes import document_sources

logger = logging.getLogger(__name__)


@dataclass
class AnnotateResult:
    """What one write-back did: traces annotated, traces whose root span Phoenix does not have
    (`not_found`, ids kept), answers skipped as undecided or pending (claims not all written)."""

    annotated: int = 0
    not_found: list[str] = field(default_factory=list)
    undecided: int = 0
    pending: int = 0
    documents: int = 0  # document annotations: retrieved documents cited as evidence

    def line(self, target: PhoenixTarget) -> str:
        examples = ", ".join(self.not_found[:3]) + (", ..." if len(self.not_found) > 3 else "")
        parts = [f"annotate phoenix: {self.annotated} trace(s) annotated ({target.name!r}) in "
                 f"project {target.project!r} at {target.base_url}",
                 f"{self.documents} evidence document(s) annotated",
                 f"{len(self.not_found)} not found in Phoenix" + (f" ({examples})"
                                                                   if examples else "")]
        if self.undecided:
            parts.append(f"{self.undecided} undecided (incomplete, no label) skipped")
        if self.pending:
            parts.append(f"{self.pending} waiting for their claim rows")
        return "; ".join(parts)


def write_back(verdicts: Verdicts, target: PhoenixTarget,
               client: PhoenixClient) -> tuple[AnnotateResult, list[TraceVerdict]]:
    """Annotate the root span of each ready verdict's trace; the result and the verdicts
    written (those whose trace Phoenix has)."""
    todo = verdicts.ready
    result = AnnotateResult(undecided=len(verdicts.undecided), pending=len(verdicts.pending))
    ids = {v.trace_id: otel_trace_id(v.trace_id) for v in todo}
    roots = client.root_spans(sorted({tid for tid in ids.values() if tid}))
    written: list[TraceVerdict] = []
    bodies: list[dict] = []
    for v in todo:
        span_id = roots.get(ids[v.trace_id] or "")
        if span_id is None:
            result.not_found.append(v.trace_id)
            continue
        bodies.append({**annotation(v, target.name), "span_id": span_id})
        written.append(v)
    result.annotated = client.upsert(bodies) if bodies else 0
    result.documents = _annotate_documents(written, ids, target, client)
    logger.debug("phoenix: %d annotation(s) written, %d document annotation(s), %d trace(s) "
                 "not found", result.annotated, result.documents, len(result.not_found))
    return result, written


def _annotate_documents(verdicts: list[TraceVerdict], ids: dict[str, str | None],
                        target: PhoenixTarget, client: PhoenixClient) -> int:
    """The document annotations of the verdicts whose claims cite evidence; how many."""
    citing = [v for v in verdicts if any(c.get("evidence") for c in v.claims)]
    if not citing:
        return 0
    spans = client.trace_spans(sorted({ids[v.trace_id] for v in citing}))
    bodies = []
    for v in citing:
        places = {d.doc_id: d.places for d in document_sources(spans.get(ids[v.trace_id], ()))}
        bodies.extend(document_annotations(v, places, target.name))
    return client.upsert_documents(bodies) if bodies else 0
