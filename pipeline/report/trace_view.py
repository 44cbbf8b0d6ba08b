"""One trace as HTML, like the paper's Figure 1.

The question; the answer with the words each claim restates marked by its label; the
claims under their sentence with their local (per window), local and global labels; the
evidence marked in the context, linked both ways. Context sentences far from any evidence are
folded into `<details>`. Every piece of trace content goes through `esc` (it is untrusted).
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass
from html import escape

from rt4chart.pipeline.report.data import SEVERITY
from rt4chart.schemas.records import PreparedTrace, Sentence
from rt4chart.transforms.segment import make_windows
from rt4chart.transforms.spans import label_spans

# Contexts up to this many sentences are shown whole; longer ones keep the evidence and this
# many neighbours each side visible, the rest folded.
COLLAPSE_ABOVE = 8
NEIGHBOURS = 1


def esc(value: object) -> str:
    """HTML-escaped text (quotes too, so it is safe in attributes)."""
    return escape("" if value is None else str(value), quote=True)


def anchor(trace_id: str) -> str:
    """A stable, id-safe anchor for a trace: readable prefix plus a hash (ids may collide)."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", trace_id)[:40].strip("-")
    digest = hashlib.sha1(trace_id.encode()).hexdigest()[:8]
    return f"trace-{slug}-{digest}" if slug else f"trace-{digest}"


def claim_label(claim: dict) -> str:
    """A claim's final label; ERR when the judge failed and there is none."""
    return claim["label"] or "ERR"


def worst(labels: list[str]) -> str:
    return min(labels, key=lambda lbl: SEVERITY.get(lbl, 2))


def badge(label: str | None, extra: str = "") -> str:
    """A label as text on its colour: never colour alone."""
    lbl = label or "ERR"
    return f'<span class="badge lab-{esc(lbl)}{extra}">{esc(lbl)}</span>'


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


def answer_html(answer: str, claims: list[dict], a: str) -> str:
    """The answer with the words of each claim marked by its label (the worst one where
    claims overlap), linked to the claims of its sentence."""
    parts: list[str] = []
    cursor = 0
    for start, end, sent, label in answer_marks(claims):
        if start < cursor or end > len(answer):
            continue  # overlapping or out of range: leave the text unmarked
        parts.append(esc(answer[cursor:start]))
        parts.append(
            f'<mark class="span lab-{esc(label)}" data-label="{esc(label)}">'
            f'<a class="tag" href="#{a}-sent{sent}" title="claims of this sentence">'
            f'{esc(label)}</a> {esc(answer[start:end])}</mark>')
        cursor = end
    parts.append(esc(answer[cursor:]))
    return "".join(parts)


def rebuilt_answer(claims: list[dict]) -> str:
    """Without the trace, the answer as far as its claims' sentences tell it."""
    if not claims:
        return ""
    chars = [" "] * max(c["answer_end"] for c in claims)
    for c in claims:
        chars[c["answer_start"]:c["answer_end"]] = c["sentence"][: c["answer_end"]
                                                                 - c["answer_start"]]
    return "".join(chars)


def _windows_text(claim: dict, prepared: PreparedTrace | None, summary: dict) -> str:
    labels = list(claim["window_labels"] or [])
    if not labels:
        return "none"
    ranges = [""] * len(labels)
    if prepared is not None and "window_size" in summary:
        wins = make_windows(len(prepared.sentences), summary["window_size"],
                            summary["window_overlap"])
        if len(wins) == len(labels):
            ranges = [f" (s{w.first + 1}–s{w.last + 1})" for w in wins]
    deciding = claim["deciding_window"]
    items = []
    for i, (lbl, rng) in enumerate(zip(labels, ranges, strict=True)):
        mark = ' class="deciding" title="deciding window"' if i == deciding else ""
        items.append(f"<li{mark}>W{i + 1}{esc(rng)}: {badge(lbl, ' small')}"
                     f"{' (deciding)' if i == deciding else ''}</li>")
    return f'<ul class="windows">{"".join(items)}</ul>'


def _evidence_links(claim: dict, sentences: dict[int, Sentence], a: str) -> str:
    items = []
    for ev in claim["evidence"] or []:
        sent = sentences.get(ev["sentence_index"])
        where = f'context sentence {ev["sentence_index"] + 1} ({esc(ev["doc_id"])})'
        if sent is not None and sent.doc_id == ev["doc_id"]:
            where = (f'<a class="evlink" href="#{a}-s{ev["sentence_index"]}" '
                     f'data-sentence="{ev["sentence_index"]}">{where}</a>')
        items.append(f'<li>{where}: <q>{esc(ev["text"])}</q></li>')
    if not items:
        return '<p class="muted">No evidence quoted.</p>'
    return f'<ul class="evidence">{"".join(items)}</ul>'


def p_with_threshold(p: float | None, threshold: float | None, side: str) -> str:
    """A row's probability with the run's threshold it is read against (older runs, written
    before rows recorded it, show the probability alone)."""
    if p is None:
        return "n/a"
    return f"{p:.2f}" + ("" if threshold is None else f" ({side} {threshold:.2f})")


def claim_html(claim: dict, ctx: _Ctx) -> str:
    """One claim: label, text, per-window, local and global labels, note, evidence links."""
    ci = claim["claim_index"]
    p_text = p_with_threshold(claim["p_unsupported"], claim.get("p_threshold"), "ENT below")
    note = f'<p class="note">Note: {esc(claim["note"])}</p>' if claim["note"] else ""
    status = ("" if claim["status"] == "ok"
              else f' <span class="err">({esc(claim["status"])})</span>')
    kind = claim.get("kind") or "fact"
    if kind != "fact":
        status += f' <span class="muted">({esc(kind)} claim)</span>'
    local = (badge(claim["local_label"], " small") if kind != "absence" else
             '<span class="muted">none: an absence is checked on the full context</span>')
    return (
        f'<li class="claim" id="{ctx.a}-c{ci}" data-label="{esc(claim_label(claim))}" '
        f'tabindex="-1">'
        f'<p>{badge(claim_label(claim))} <strong>Claim {ci + 1}:</strong> '
        f'{esc(claim["claim"])}{status}</p>'
        f'<dl class="labels"><dt>Per window</dt><dd>'
        f'{_windows_text(claim, ctx.prepared, ctx.summary)}</dd>'
        f'<dt>Local (OR over windows)</dt><dd>{local}</dd>'
        f'<dt>Global (full context)</dt><dd>{badge(claim["label"], " small")}</dd>'
        f'<dt>P(unsupported)</dt><dd>{p_text}</dd></dl>{note}'
        f'<div class="evidence-block"><span class="muted">Evidence:</span>'
        f'{_evidence_links(claim, ctx.sentences, ctx.a)}</div></li>'
    )


@dataclass(frozen=True)
class _Ctx:
    a: str
    prepared: PreparedTrace | None
    sentences: dict[int, Sentence]
    summary: dict


def claims_html(claims: list[dict], ctx: _Ctx) -> str:
    """The claims listed under their answer sentence."""
    by_sentence: dict[int, list[dict]] = defaultdict(list)
    for c in sorted(claims, key=lambda c: c["claim_index"]):
        by_sentence[c["sentence_index"]].append(c)
    items = []
    for idx, group in sorted(by_sentence.items()):
        label = worst([claim_label(c) for c in group])
        items.append(
            f'<li class="sentence" id="{ctx.a}-sent{idx}" tabindex="-1">'
            f'<p class="sentence-text">{badge(label)} <strong>Sentence {idx + 1}:</strong> '
            f'<q>{esc(group[0]["sentence"])}</q></p>'
            f'<ol class="claims">{"".join(claim_html(c, ctx) for c in group)}</ol></li>')
    return f'<ol class="sentences">{"".join(items)}</ol>'


def _evidence_by_sentence(claims: list[dict]) -> dict[int, list[tuple[dict, dict]]]:
    found: dict[int, list[tuple[dict, dict]]] = defaultdict(list)
    for c in claims:
        for ev in c["evidence"] or []:
            found[ev["sentence_index"]].append((c, ev))
    return found


def _marked_sentence(sent: Sentence, refs: list[tuple[dict, dict]]) -> str:
    """The sentence text with the union of its evidence ranges marked."""
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
        out.append(esc(sent.text[cursor:s]))
        out.append(f'<mark class="evmark">{esc(sent.text[s:e])}</mark>')
        cursor = e
    out.append(esc(sent.text[cursor:]))
    return "".join(out)


def sentence_html(sent: Sentence, refs: list[tuple[dict, dict]], a: str) -> str:
    """One context sentence; an evidence sentence carries back-links to its claims."""
    num = f'<span class="sno">s{sent.index + 1}</span> '
    if not refs:
        return f'<span class="sent" id="{a}-s{sent.index}">{num}{esc(sent.text)}</span>'
    label = worst([claim_label(c) for c, _ in refs])
    seen: dict[int, dict] = {c["claim_index"]: c for c, _ in refs}
    back = " ".join(
        f'<a class="backlink" href="#{a}-c{ci}" data-claim="{ci}">'
        f'↩ claim {ci + 1} {badge(claim_label(c), " small")}</a>'
        for ci, c in sorted(seen.items()))
    return (f'<span class="sent ev lab-{esc(label)}" id="{a}-s{sent.index}" tabindex="-1" '
            f'data-label="{esc(label)}">{num}{_marked_sentence(sent, refs)} '
            f'<span class="backlinks">evidence for {back}</span></span>')


def _visible(n: int, evidence: set[int]) -> set[int]:
    if n <= COLLAPSE_ABOVE:
        return set(range(n))
    return {i + d for i in evidence for d in range(-NEIGHBOURS, NEIGHBOURS + 1)}


def context_html(prepared: PreparedTrace, claims: list[dict], a: str) -> str:
    """The context by document, evidence marked, long stretches without evidence folded."""
    refs = _evidence_by_sentence(claims)
    docs: dict[str, list[Sentence]] = defaultdict(list)
    for s in prepared.sentences:
        docs[s.doc_id].append(s)
    out = []
    for doc_id, sents in docs.items():
        local_ev = {i for i, s in enumerate(sents) if s.index in refs}
        visible = _visible(len(sents), local_ev)
        body, hidden = [], []
        for i, s in enumerate(sents):
            if i in visible:
                body.append(_fold(hidden))
                hidden = []
                body.append(sentence_html(s, refs.get(s.index, []), a))
            else:
                hidden.append(sentence_html(s, [], a))
        body.append(_fold(hidden))
        out.append(f'<section class="doc"><h5>Document {esc(doc_id)} '
                   f'<span class="muted">({len(sents)} sentences)</span></h5>'
                   f'<div class="context">{"".join(body)}</div></section>')
    return "".join(out)


def _fold(hidden: list[str]) -> str:
    if not hidden:
        return ""
    n = len(hidden)
    return (f'<details class="fold"><summary>{n} sentence{"s" if n > 1 else ""} without '
            f'evidence (show)</summary>{"".join(hidden)}</details>')


def _header(answer: dict, a: str) -> str:
    p = answer["p_hallucinated"]
    facts = [
        f"route <strong>{esc(answer['route'])}</strong>",
        f"event time {esc(answer['event_time'].strftime('%Y-%m-%d %H:%M:%S'))} UTC",
        f"{answer['n_claims']} claims",
        "P(hallucinated) " + p_with_threshold(p, answer.get("p_threshold"), "hallucinated at"),
        f"status {esc(answer['status'])}",
    ]
    reason = (f'<p class="err">Incomplete: {esc(answer["reason"])}</p>'
              if answer["reason"] else "")
    return (f'<h3 id="{a}-title">{badge(answer["label"])} Trace '
            f'<code>{esc(answer["trace_id"])}</code></h3>'
            f'<p class="facts">{" · ".join(facts)}</p>{reason}')


def trace_section(answer: dict, claims: list[dict], prepared: PreparedTrace | None,
                  summary: dict) -> str:
    """The whole view of one trace, as a `<section id="trace-...">`."""
    a = anchor(answer["trace_id"])
    sentences = {s.index: s for s in prepared.sentences} if prepared else {}
    ctx = _Ctx(a, prepared, sentences, summary)
    if prepared is not None:
        question = f'<p class="question">{esc(prepared.trace.question) or "(none)"}</p>'
        answer_text = prepared.trace.answer
        context = context_html(prepared, claims, a)
    else:
        question = ('<p class="muted">The question and the context are not in the tables; '
                    'pass the run\'s trace files with <code>--traces</code> to see them.</p>')
        answer_text = rebuilt_answer(claims)
        context = '<p class="muted">Context not available.</p>'
    return (
        f'<section class="trace" id="{a}" aria-labelledby="{a}-title">{_header(answer, a)}'
        f'<h4>Question</h4>{question}'
        f'<h4>Answer</h4><p class="answer">{answer_html(answer_text, claims, a)}</p>'
        f'<div class="cols"><div class="col"><h4>Claims by answer sentence</h4>'
        f'{claims_html(claims, ctx)}</div>'
        f'<div class="col"><h4>Context (evidence marked)</h4>{context}</div></div>'
        f'<p><a href="#flagged">Back to the flagged traces</a></p></section>'
    )
