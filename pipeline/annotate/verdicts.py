"""A run's verdicts per trace, and the span annotation that carries one (no network here).

The answers and claims tables are read back (a run folder or `bq:PROJECT:DATASET`, as the
report reads them); each answer with all its claim rows is a :class:`TraceVerdict`, turned into
the body of one Phoenix span annotation by :func:`annotation`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from rt4chart import __version__
from rt4chart.pipeline.sources.phoenix_client import DEFAULT_NAME
from rt4chart.schemas.records import NO_CLAIM

ANNOTATOR_KIND = "LLM"  # the verdicts are a judge model's
MAX_QUOTE_CHARS = 300  # one evidence quote or answer span in the explanation
MAX_EXPLANATION_CHARS = 8_000
_OTEL_TRACE_ID = re.compile(r"[0-9a-f]{32}")


def otel_trace_id(trace_id: str) -> str | None:
    """The OpenTelemetry trace id (32 lowercase hex) an audited trace_id stands for, or None:
    the readers of OTLP, OpenInference and Phoenix exports keep the OTel trace id as the
    trace_id; any other id cannot name a span in Phoenix."""
    tid = trace_id.strip().lower()
    return tid if _OTEL_TRACE_ID.fullmatch(tid) and tid != "0" * 32 else None


@dataclass(frozen=True)
class TraceVerdict:
    """One audited answer (an answers-table row) with its claim rows, by claim index."""

    answer: dict
    claims: tuple[dict, ...]

    @property
    def trace_id(self) -> str:
        return self.answer["trace_id"]

    @property
    def flagged(self) -> list[dict]:
        """The claims that are not ENT (CON, NIC, or without a verdict); a claim that asserts
        nothing checkable (status no_claim) is not flagged."""
        return [c for c in self.claims
                if c.get("label") != "ENT" and c.get("status") != NO_CLAIM]


@dataclass
class Verdicts:
    """What a run holds to annotate: `ready` verdicts, and the trace ids of answers with no
    label (`undecided`: incomplete, nothing decided) or whose claim rows are not all there yet
    (`pending`: a stream writes the two tables apart). `undecided_verdicts` holds the undecided
    answers with their claim rows, for a sink that records them as incomplete (Langfuse)."""

    ready: list[TraceVerdict] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    undecided_verdicts: list[TraceVerdict] = field(default_factory=list)


def _latest_answers(answers: Iterable[dict]) -> dict[str, dict]:
    """One answer per trace: the latest verdict (a stream or redo may hold several)."""
    latest: dict[str, dict] = {}
    for row in answers:
        seen = latest.get(row["trace_id"])
        if seen is None or not (row.get("audited_at") and seen.get("audited_at")) or (
                row["audited_at"] >= seen["audited_at"]):
            latest[row["trace_id"]] = row
    return latest


def group_verdicts(answers: Iterable[dict], claims: Iterable[dict]) -> Verdicts:
    """Answer rows and claim rows (as the tables are read) -> verdicts per trace."""
    by_trace: dict[str, dict[int, dict]] = {}
    for row in claims:
        by_trace.setdefault(row["trace_id"], {})[row["claim_index"]] = row
    out = Verdicts()
    for trace_id, answer in sorted(_latest_answers(answers).items()):
        claim_rows = by_trace.get(trace_id, {})
        if answer.get("label") is None:
            out.undecided.append(trace_id)
            out.undecided_verdicts.append(
                TraceVerdict(answer, tuple(v for _, v in sorted(claim_rows.items()))))
        elif len(claim_rows) < answer["n_claims"]:
            out.pending.append(trace_id)
        else:
            out.ready.append(TraceVerdict(answer, tuple(v for _, v in sorted(claim_rows.items()))))
    return out


def load_verdicts(read_table: Callable[[str], list[dict]]) -> Verdicts:
    """The verdicts of a run, from a table reader (`report.data.table_reader`)."""
    return group_verdicts(read_table("answers"), read_table("claims"))


def _quote(text: str) -> str:
    text = " ".join((text or "").split())
    return '"' + (text if len(text) <= MAX_QUOTE_CHARS else text[:MAX_QUOTE_CHARS] + "…") + '"'


def _answer_spans(claim: dict) -> str:
    """The answer words a claim restates, with their offsets in the answer."""
    sentence, start = claim.get("sentence") or "", claim.get("answer_start") or 0
    spans = claim.get("spans") or [{"char_start": start, "char_end": claim.get("answer_end")}]
    parts = []
    for span in spans:
        s, e = span["char_start"], span["char_end"]
        text = sentence[s - start:e - start] if start <= s <= e <= start + len(sentence) else ""
        parts.append(f"[{s}:{e}] {_quote(text)}" if text else f"[{s}:{e}]")
    return "; ".join(parts)


def _claim_lines(n: int, claim: dict) -> list[str]:
    label = claim.get("label") or "no verdict"
    lines = [f"{n}. [{label}] {_quote(claim['claim'])}", f"   answer: {_answer_spans(claim)}"]
    for ev in claim.get("evidence") or ():
        lines.append(f"   evidence: {ev['doc_id']} sentence {ev['sentence_index']} "
                     f"[{ev['char_start']}:{ev['char_end']}] {_quote(ev['text'])}")
    if not claim.get("evidence"):
        lines.append("   evidence: none (nothing in the context supports or contradicts it)"
                     if label == "NIC" else "   evidence: none")
    if claim.get("note"):
        lines.append(f"   note: {claim['note']}")
    return lines


def claim_explanation(claim: dict) -> str:
    """One claim in words: its label and text, the answer spans, the evidence, its note."""
    return "\n".join(_claim_lines(claim["claim_index"] + 1, claim))


def explanation(verdict: TraceVerdict) -> str:
    """The verdict in words: the label, then each non-ENT claim with its label, the answer
    spans it restates and the evidence (document, sentence, offsets, quote)."""
    a, flagged = verdict.answer, verdict.flagged
    n = len(verdict.claims)
    if not flagged:
        head = (f"{a['label']}: the answer makes no claim." if not n else
                f"{a['label']}: all {n} claim(s) are supported by the retrieved context.")
    else:
        counts = ", ".join(f"{lbl} {sum(1 for c in flagged if c.get('label') == lbl)}"
                           for lbl in ("CON", "NIC") if any(c.get("label") == lbl
                                                            for c in flagged))
        head = (f"{a['label']}: {len(flagged)} of {n} claim(s) not supported by the retrieved "
                f"context ({counts or 'no verdict'}).")
    lines = [head]
    if a.get("status") != "ok":
        lines.append(f"Incomplete: {a.get('reason') or 'a judge call failed'}.")
    for i, claim in enumerate(flagged, 1):
        lines.extend(_claim_lines(i, claim))
    text = "\n".join(lines)
    return text if len(text) <= MAX_EXPLANATION_CHARS else (
        text[:MAX_EXPLANATION_CHARS - 40] + "\n… (truncated; see the claims table)")


def annotation(verdict: TraceVerdict, name: str = DEFAULT_NAME) -> dict:
    """The body of the span annotation for one verdict (without its span_id).

    Its `identifier` is the annotation name: Phoenix updates the annotation with the same
    (span, name, identifier) instead of adding one, so writing it again does not duplicate."""
    a = verdict.answer
    metadata = {
        "judge_model": a["judge_model"], "prompt_hash": a["prompt_hash"],
        "trace_id": a["trace_id"], "route": a["route"], "status": a["status"],
        "n_claims": a["n_claims"], "con_claims": sum(c.get("label") == "CON"
                                                     for c in verdict.claims),
        "nic_claims": sum(c.get("label") == "NIC" for c in verdict.claims),
        "audited_at": str(a.get("audited_at") or ""), "rt4chart_version": __version__,
        # What the score means: hallucinated <=> score >= score_threshold (a claim is ENT <=>
        # its p_unsupported < claim_threshold); null for a run written before rows had them.
        "score_threshold": a.get("p_threshold"),
        "claim_threshold": next((c["p_threshold"] for c in verdict.claims
                                 if c.get("p_threshold") is not None), None),
    }
    return {
        "name": name, "annotator_kind": ANNOTATOR_KIND, "identifier": name,
        "result": {"label": a["label"], "score": a.get("p_hallucinated"),
                   "explanation": explanation(verdict)},
        "metadata": metadata,
    }


EVIDENCE_SUFFIX = " evidence"  # the document annotations' name: "<annotation name> evidence"


def document_role(labels: Iterable[str]) -> str:
    """A document's label from the labels of the claims it served as evidence for."""
    kinds = set(labels)
    if "CON" in kinds and "ENT" in kinds:
        return "supports and contradicts"
    return "contradicts" if "CON" in kinds else "supports"


def document_annotations(verdict: TraceVerdict, places: dict[str, tuple[tuple[str, int], ...]],
                         name: str = DEFAULT_NAME) -> list[dict]:
    """The bodies of the document annotations of one verdict: one per (retriever or reranker
    span, document position) whose document served as evidence for a claim (`places`: doc_id ->
    where its spans hold it, `span_attributes.document_sources`). The label says whether it
    supported or contradicted, the score is how many claims cite it, the explanation which
    claims and sentences. Phoenix keeps one document annotation per (span, position, name), so
    writing it again replaces it. A document the trace's spans do not hold is left out."""
    cited: dict[str, list[tuple[int, dict, dict]]] = {}
    for claim in verdict.claims:
        for ev in claim.get("evidence") or ():
            cited.setdefault(ev["doc_id"], []).append((claim["claim_index"], claim, ev))
    bodies = []
    for doc_id, uses in sorted(cited.items()):
        claims = sorted({i: c for i, c, _ in uses}.items())
        lines = [f"claim {i} [{c.get('label') or 'no verdict'}] {_quote(c['claim'])}: sentence "
                 f"{ev['sentence_index']} {_quote(ev['text'])}" for i, c, ev in uses]
        text = "\n".join(lines)
        if len(text) > MAX_EXPLANATION_CHARS:
            text = text[:MAX_EXPLANATION_CHARS - 40] + "\n… (truncated; see the claims table)"
        result = {"label": document_role(c.get("label") or "" for _, c in claims),
                  "score": float(len(claims)), "explanation": text}
        metadata = {"trace_id": verdict.trace_id, "doc_id": doc_id,
                    "claims": [i for i, _ in claims],
                    "labels": [c.get("label") for _, c in claims],
                    "judge_model": verdict.answer["judge_model"],
                    "prompt_hash": verdict.answer["prompt_hash"],
                    "rt4chart_version": __version__}
        for span_id, position in places.get(doc_id, ()):
            bodies.append({"name": name + EVIDENCE_SUFFIX, "annotator_kind": ANNOTATOR_KIND,
                           "identifier": "", "span_id": span_id, "document_position": position,
                           "result": result, "metadata": metadata})
    return bodies
