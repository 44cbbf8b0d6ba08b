"""The Langfuse write-back: what is written for a run's verdicts, and writing it.

Per audited trace, two scores: a CATEGORICAL `NAME_label` (ENT, CON, NIC, or `incomplete` for
an answer the run could not decide) whose comment lists the non-ENT claims with their answer
spans and evidence (`verdicts.explanation`, bounded), and a NUMERIC `NAME_p_hallucinated` (the
answer's p_hallucinated, when it has one). With `claim_scores`, one CATEGORICAL `NAME_claim` per
claim on the trace's generation observation (its id asked of Langfuse: the run's tables keep no
observation id); a trace without one gets no claim scores (counted).

Each score's `id` is a uuid5 of run-independent keys (trace id, observation id, claim index,
score name): Langfuse upserts a score by id, so a second write-back updates instead of adding.
Up to `max_in_flight` traces are written at a time; a trace whose score Langfuse refuses is
counted as failed with Langfuse's message, and the others go on.
"""

from __future__ import annotations

import logging
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from rt4chart.pipeline.annotate.langfuse import (
    LangfuseClient,
    LangfuseError,
    LangfuseTarget,
    ScoreRejected,
)
from rt4chart.pipeline.annotate.verdicts import (
    TraceVerdict,
    Verdicts,
    annotation,
    claim_explanation,
    explanation,
)
from rt4chart.schemas.records import NO_CLAIM

logger = logging.getLogger(__name__)

INCOMPLETE = "incomplete"
# Fixed, so that a score's id depends only on what it scores (never on the run).
SCORE_NAMESPACE = uuid.UUID("5b0c6f1e-2d7a-5e4b-9c3f-7a1d2e8b4c60")


def score_id(trace_id: str, name: str, observation_id: str = "", claim_index: int = -1) -> str:
    """The deterministic id of the score `name` on a trace (an observation, a claim)."""
    return str(uuid.uuid5(SCORE_NAMESPACE, f"{trace_id}\x1f{observation_id}\x1f{claim_index}"
                                           f"\x1f{name}"))


def _as_reported(verdict: TraceVerdict) -> TraceVerdict:
    """An undecided answer reads as `incomplete` in the scores and their comment."""
    if verdict.answer.get("label") is not None:
        return verdict
    return TraceVerdict({**verdict.answer, "label": INCOMPLETE}, verdict.claims)


def trace_scores(verdict: TraceVerdict, target: LangfuseTarget) -> list[dict]:
    """The trace-level score bodies of one verdict (label, and p_hallucinated if known)."""
    v = _as_reported(verdict)
    a, tid = v.answer, v.trace_id
    metadata = annotation(v, target.prefix)["metadata"]
    label_name, p_name = target.name("label"), target.name("p_hallucinated")
    scores = [{"id": score_id(tid, label_name), "traceId": tid, "name": label_name,
               "value": a["label"], "dataType": "CATEGORICAL", "comment": explanation(v),
               "metadata": metadata}]
    if a.get("p_hallucinated") is not None:
        threshold = a.get("p_threshold")
        scores.append({
            "id": score_id(tid, p_name), "traceId": tid, "name": p_name,
            "value": float(a["p_hallucinated"]), "dataType": "NUMERIC",
            "comment": "calibrated P(the answer is hallucinated)" + (
                f"; hallucinated <=> >= {threshold:g}" if threshold is not None else ""),
            "metadata": metadata})
    return scores


def claim_scores(verdict: TraceVerdict, target: LangfuseTarget,
                 observation_id: str) -> list[dict]:
    """One score per claim, on the generation observation that wrote the answer."""
    name, out = target.name("claim"), []
    for claim in verdict.claims:
        index = claim["claim_index"]
        out.append({
            "id": score_id(verdict.trace_id, name, observation_id, index),
            "traceId": verdict.trace_id, "observationId": observation_id, "name": name,
            "value": claim.get("label") or (NO_CLAIM if claim.get("status") == NO_CLAIM
                                             else INCOMPLETE), "dataType": "CATEGORICAL",
            "comment": claim_explanation(claim),
            "metadata": {"claim_index": index, "p_unsupported": claim.get("p_unsupported"),
                         "judge_model": claim.get("judge_model"),
                         "prompt_hash": claim.get("prompt_hash")}})
    return out


@dataclass
class LangfuseResult:
    """What one write-back did: traces whose scores were all written, scores written, traces
    that failed (id -> Langfuse's reason), traces without a generation observation (no claim
    scores), answers waiting for their claim rows."""

    annotated: int = 0
    scores: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    no_generation: list[str] = field(default_factory=list)
    incomplete: int = 0
    pending: int = 0

    def line(self, target: LangfuseTarget) -> str:
        parts = [f"annotate langfuse: {self.annotated} trace(s) scored ({self.scores} "
                 f"score(s) {target.name('*')!r}) at {target.base_url}",
                 f"{len(self.failed)} failed"]
        if self.incomplete:
            parts.append(f"{self.incomplete} undecided scored {INCOMPLETE!r}")
        if target.claim_scores:
            parts.append(f"{len(self.no_generation)} without a generation observation (no "
                         f"claim scores)")
        if self.pending:
            parts.append(f"{self.pending} waiting for their claim rows")
        return "; ".join(parts)

    def failures(self, limit: int = 5) -> list[str]:
        lines = [f"  {tid}: {reason}" for tid, reason in list(self.failed.items())[:limit]]
        if len(self.failed) > limit:
            lines.append(f"  ... and {len(self.failed) - limit} more")
        return lines


@dataclass
class _Outcome:
    """One trace's write: scores written, whether it has no generation, why it failed."""

    verdict: TraceVerdict
    scores: int = 0
    no_generation: bool = False
    error: str | None = None


def _write_one(verdict: TraceVerdict, target: LangfuseTarget,
               client: LangfuseClient) -> _Outcome:
    out = _Outcome(verdict)
    try:
        bodies = trace_scores(verdict, target)
        if target.claim_scores and verdict.claims:
            observation = client.generation(verdict.trace_id)
            if observation is None:
                out.no_generation = True
            else:
                bodies.extend(claim_scores(verdict, target, observation))
        for body in bodies:
            client.create_score(body)
            out.scores += 1
    except ScoreRejected as exc:
        out.error = str(exc)
        logger.warning("annotate langfuse: trace %s not scored: %s", verdict.trace_id, exc)
    return out


def _write_all(todo: list[TraceVerdict], target: LangfuseTarget,
               client: LangfuseClient) -> list[_Outcome]:
    """Each trace's outcome, in order, up to `max_in_flight` traces at a time; the first
    LangfuseError (bad keys, no host) stops the traces not started and is raised."""
    stop = threading.Event()

    def one(verdict: TraceVerdict) -> _Outcome | None:
        if stop.is_set():
            return None
        try:
            return _write_one(verdict, target, client)
        except LangfuseError:
            stop.set()
            raise

    with ThreadPoolExecutor(max_workers=max(1, min(target.max_in_flight, len(todo))),
                            thread_name_prefix="annotate-langfuse") as pool:
        futures = [pool.submit(one, v) for v in todo]
        return [outcome for f in futures if (outcome := f.result()) is not None]


def write_back(verdicts: Verdicts, target: LangfuseTarget,
               client: LangfuseClient) -> tuple[LangfuseResult, list[TraceVerdict]]:
    """Score each decided (and undecided) verdict's trace; the result and the verdicts whose
    scores were all written. A trace whose score Langfuse refuses is counted in `failed`."""
    result = LangfuseResult(incomplete=len(verdicts.undecided_verdicts),
                            pending=len(verdicts.pending))
    written: list[TraceVerdict] = []
    for out in _write_all([*verdicts.ready, *verdicts.undecided_verdicts], target, client):
        result.scores += out.scores
        if out.no_generation:
            result.no_generation.append(out.verdict.trace_id)
        if out.error is not None:
            result.failed[out.verdict.trace_id] = out.error
        else:
            written.append(out.verdict)
    result.annotated = len(written)
    return result, written
