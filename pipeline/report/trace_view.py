"""One trace, like the paper's Figure 1, as data for the `trace.html` template.

The question; the answer with the words each claim restates marked by its label; the
claims under their sentence with their local (per window), local and global labels; the
evidence marked in the context, linked both ways. Context sentences far from any evidence are
folded into `<details>`. Every piece of trace content is untrusted: the templates escape it.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections import defaultdict

from rt4chart.pipeline.report.templating import macro
from rt4chart.pipeline.results.load import SEVERITY
from rt4chart.schemas.records import NO_CLAIM, PreparedTrace, Sentence
from rt4chart.transforms.checks.spans import label_spans
from rt4chart.transforms.common.fields import tool_of
from rt4chart.transforms.segment import make_windows

# Contexts up to this many sentences are shown whole; longer ones keep the evidence and this
# many neighbours each side visible, the rest folded.
COLLAPSE_ABOVE = 8
NEIGHBOURS = 1


def anchor(trace_id: str) -> str:
    """A stable, id-safe anchor for a trace: readable prefix plus a hash (ids may collide)."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", trace_id)[:40].strip("-")
    digest = hashlib.sha1(trace_id.encode()).hexdigest()[:8]
    return f"trace-{slug}-{digest}" if slug else f"trace-{digest}"


def claim_label(claim: dict) -> str:
    """A claim's final label; NO_CLAIM for a claim that asserts nothing checkable (status
    no_claim: not verified, not part of the answer's label); ERR when the judge failed."""
    if claim.get("status") == NO_CLAIM:
        return "NO_CLAIM"
    return claim["label"] or "ERR"


def worst(labels: list[str]) -> str:
    return min(labels, key=lambda lbl: SEVERITY.get(lbl, 2))


def _claim_spans(claim: dict) -> list[tuple[int, int]]:
    """The answer words a claim restates; its sentence for a run without claim spans."""
    spans = [(s["char_start"], s["char_end"]) for s in claim.get("spans") or []]
    return spans or [(claim["answer_start"], claim["answer_end"])]


def answer_marks(claims: list[dict]) -> list[tuple[int, int, int, str]]:
    """(start, end, sentence index, label) of each marked stretch of the answer: the words its
    claims restate, each character marked by the worst label of the claims covering it."""
    by_sentence: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    for c in claims:
        by_sentence[c["sentence_index"]] += [(s, e, claim_label(c)) for s, e in _claim_spans(c)]
    order = sorted(SEVERITY, key=SEVERITY.get)
    return sorted((s, e, sent, label) for sent, spans in by_sentence.items()
                  for s, e, label in label_spans(spans, order))


def answer_parts(answer: str, claims: list[dict]) -> list[dict]:
    """The answer as plain and marked stretches (`label` None for plain text): the words of
    each claim marked by its label (the worst one where claims overlap)."""
    parts: list[dict] = []
    cursor = 0
    for start, end, sent, label in answer_marks(claims):
        if start < cursor or end > len(answer):
            continue  # overlapping or out of range: leave the text unmarked
        parts.append({"text": answer[cursor:start], "label": None})
        parts.append({"text": answer[start:end], "label": label, "sentence": sent})
        cursor = end
    parts.append({"text": answer[cursor:], "label": None})
    return parts


def answer_html(answer: str, claims: list[dict], a: str) -> str:
    """The answer with its claims' words marked, linked to the claims of their sentence."""
    return str(macro("trace.html", "answer", answer_parts(answer, claims), a))


def rebuilt_answer(claims: list[dict]) -> str:
    """Without the trace, the answer as far as its claims' sentences tell it."""
    if not claims:
        return ""
    chars = [" "] * max(c["answer_end"] for c in claims)
    for c in claims:
        chars[c["answer_start"]:c["answer_end"]] = c["sentence"][: c["answer_end"]
                                                                 - c["answer_start"]]
    return "".join(chars)


def _windows(claim: dict, prepared: PreparedTrace | None, summary: dict) -> list[dict]:
    """A claim's per-window labels, with the context sentences of each window when known."""
    labels = list(claim["window_labels"] or [])
    ranges = [""] * len(labels)
    if labels and prepared is not None and "window_size" in summary:
        wins = make_windows(len(prepared.sentences), summary["window_size"],
                            summary["window_overlap"])
        if len(wins) == len(labels):
            ranges = [f" (s{w.first + 1}–s{w.last + 1})" for w in wins]
    return [{"number": i + 1, "range": rng, "label": lbl,
             "deciding": i == claim["deciding_window"]}
            for i, (lbl, rng) in enumerate(zip(labels, ranges, strict=True))]


def _evidence(claim: dict, sentences: dict[int, Sentence]) -> list[dict]:
    """A claim's quoted evidence; `linked` when its context sentence is on the page."""
    items = []
    for ev in claim["evidence"] or []:
        sent = sentences.get(ev["sentence_index"])
        items.append({"sentence_index": ev["sentence_index"], "doc_id": ev["doc_id"],
                      "text": ev["text"], "tool": tool_of(ev["doc_id"]),
                      "linked": sent is not None and sent.doc_id == ev["doc_id"]})
    return items


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def same_rounding(p: float, threshold: float) -> tuple[str, str]:
    """`p` and `threshold` with as many decimals (2 at least) as it takes for the printed
    numbers to compare as the numbers do: 0.1500 against 0.1508 reads "0.1500" and "0.1508",
    never "0.15" and "0.15" (which would seem to put the label on the wrong side)."""
    for digits in range(2, 18):
        shown = f"{p:.{digits}f}", f"{threshold:.{digits}f}"
        if _sign(float(shown[0]) - float(shown[1])) == _sign(p - threshold):
            return shown
    return repr(p), repr(threshold)  # repr round-trips: the order is kept


def p_with_threshold(p: float | None, threshold: float | None, side: str) -> str:
    """A row's probability with the run's threshold it is read against (older runs, written
    before rows recorded it, show the probability alone), on the same rounding."""
    if p is None:
        return "n/a"
    if threshold is None:
        return f"{p:.2f}"
    shown_p, shown_t = same_rounding(p, threshold)
    return f"{shown_p} ({side} {shown_t})"


def claim_data(claim: dict, prepared: PreparedTrace | None, sentences: dict[int, Sentence],
               summary: dict) -> dict:
    """One claim: label, text, per-window, local and global labels, note, evidence."""
    return {
        "index": claim["claim_index"], "label": claim_label(claim), "claim": claim["claim"],
        "status": claim["status"], "kind": claim.get("kind") or "fact",
        "windows": _windows(claim, prepared, summary), "local_label": claim["local_label"],
        "global_label": claim["label"],
        "p_text": p_with_threshold(claim["p_unsupported"], claim.get("p_threshold"),
                                   "ENT below"),
        "note": claim["note"], "evidence": _evidence(claim, sentences),
    }


def claims_by_sentence(claims: list[dict], prepared: PreparedTrace | None,
                       summary: dict) -> list[dict]:
    """The claims grouped under their answer sentence, each sentence with its worst label."""
    sentences = {s.index: s for s in prepared.sentences} if prepared else {}
    by_sentence: dict[int, list[dict]] = defaultdict(list)
    for c in sorted(claims, key=lambda c: c["claim_index"]):
        by_sentence[c["sentence_index"]].append(c)
    return [{"index": idx, "label": worst([claim_label(c) for c in group]),
             "sentence": group[0]["sentence"],
             "claims": [claim_data(c, prepared, sentences, summary) for c in group]}
            for idx, group in sorted(by_sentence.items())]


def _evidence_by_sentence(claims: list[dict]) -> dict[int, list[tuple[dict, dict]]]:
    found: dict[int, list[tuple[dict, dict]]] = defaultdict(list)
    for c in claims:
        for ev in c["evidence"] or []:
            found[ev["sentence_index"]].append((c, ev))
    return found


def _marked_segments(sent: Sentence, refs: list[tuple[dict, dict]]) -> list[tuple[str, bool]]:
    """The sentence text in (text, marked) stretches: the union of its evidence ranges."""
    ranges = sorted(
        (max(ev["char_start"], sent.start) - sent.start, min(ev["char_end"], sent.end) - sent.start)
        for _, ev in refs if ev["doc_id"] == sent.doc_id
    )
    merged: list[list[int]] = []
    for s, e in ranges:
        if e <= s:
            continue
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    out, cursor = [], 0
    for s, e in merged:
        out += [(sent.text[cursor:s], False), (sent.text[s:e], True)]
        cursor = e
    out.append((sent.text[cursor:], False))
    return out


def sentence_data(sent: Sentence, refs: list[tuple[dict, dict]]) -> dict:
    """One context sentence; an evidence sentence carries back-links to its claims."""
    if not refs:
        return {"index": sent.index, "text": sent.text, "backlinks": []}
    seen: dict[int, dict] = {c["claim_index"]: c for c, _ in refs}
    return {"index": sent.index, "label": worst([claim_label(c) for c, _ in refs]),
            "segments": _marked_segments(sent, refs),
            "backlinks": [{"index": ci, "label": claim_label(c)}
                          for ci, c in sorted(seen.items())]}


def _visible(n: int, evidence: set[int]) -> set[int]:
    if n <= COLLAPSE_ABOVE:
        return set(range(n))
    return {i + d for i in evidence for d in range(-NEIGHBOURS, NEIGHBOURS + 1)}


def _blocks(sents: list[Sentence], refs: dict[int, list[tuple[dict, dict]]]) -> list[dict]:
    """A document's sentences in runs, shown or folded (far from any evidence)."""
    visible = _visible(len(sents), {i for i, s in enumerate(sents) if s.index in refs})
    runs = itertools.groupby(enumerate(sents), key=lambda item: item[0] not in visible)
    return [{"folded": folded,
             "sentences": [sentence_data(s, [] if folded else refs.get(s.index, []))
                           for _, s in run]}
            for folded, run in runs]


def documents(prepared: PreparedTrace, claims: list[dict]) -> list[dict]:
    """The context by document, evidence marked, long stretches without evidence folded."""
    refs = _evidence_by_sentence(claims)
    docs: dict[str, list[Sentence]] = defaultdict(list)
    for s in prepared.sentences:
        docs[s.doc_id].append(s)
    return [{"doc_id": doc_id, "tool": tool_of(doc_id), "n": len(sents),
             "blocks": _blocks(sents, refs)} for doc_id, sents in docs.items()]


def context_html(prepared: PreparedTrace, claims: list[dict], a: str) -> str:
    """The context part of a trace view, on its own."""
    return str(macro("context.html", "context", documents(prepared, claims), a))


def trace_data(answer: dict, claims: list[dict], prepared: PreparedTrace | None,
               summary: dict) -> dict:
    """The whole view of one trace, for `trace.html` (its `<section id="trace-...">`)."""
    text = prepared.trace.answer if prepared is not None else rebuilt_answer(claims)
    return {
        "anchor": anchor(answer["trace_id"]), "label": answer["label"],
        "trace_id": answer["trace_id"], "route": answer["route"],
        "event_time": answer["event_time"].strftime("%Y-%m-%d %H:%M:%S"),
        "n_claims": answer["n_claims"], "status": answer["status"], "reason": answer["reason"],
        "p_text": p_with_threshold(answer["p_hallucinated"], answer.get("p_threshold"),
                                   "hallucinated at"),
        "question": (prepared.trace.question or "(none)") if prepared is not None else None,
        "answer": answer_parts(text, claims),
        "sentences": claims_by_sentence(claims, prepared, summary),
        "documents": documents(prepared, claims) if prepared is not None else None,
    }
