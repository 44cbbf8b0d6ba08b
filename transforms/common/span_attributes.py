"""What a trace's spans say, read off their OpenInference attributes: a span's kind, each span
once, indexed attribute lists (`retrieval.documents.0.document.content`, ...) and the
documents the retrieval and reranker spans list, with the span each came from and its id.
The trace record built from them is `span_mapping.py`'s, an agent's tool results
`agent_spans.py`'s; the write-back (`pipeline/annotate/phoenix.py`) annotates a document on the
span that retrieved it (`document_sources`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from openinference.semconv.trace import (
    DocumentAttributes,
    OpenInferenceSpanKindValues,
    RerankerAttributes,
    SpanAttributes,
)

from rt4chart.schemas.spans import Scalar, SourceSpan

_KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
_RETRIEVER = OpenInferenceSpanKindValues.RETRIEVER.value
_RERANKER = OpenInferenceSpanKindValues.RERANKER.value


def kind(span: SourceSpan) -> str:
    """The span's OpenInference kind, upper case ("" when it has none)."""
    value = span.attribute_map().get(_KIND)
    return str(value).upper() if value is not None else ""


def unique_spans(spans: Iterable[SourceSpan]) -> list[SourceSpan]:
    """Each span once (a redelivered message repeats its spans), ordered by start, then id."""
    seen: dict[str, SourceSpan] = {}
    for span in spans:
        seen.setdefault(span.span_id, span)
    return sorted(seen.values(), key=lambda s: (s.start_ns, s.span_id))


def indexed(attributes: dict[str, Scalar], prefix: str) -> list[dict[str, Scalar]]:
    """The items of a flattened list attribute (`prefix.N.rest`), in index order, each as a
    dict of its `rest` keys."""
    items: dict[int, dict[str, Scalar]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix + "."):
            continue
        index, _, rest = key[len(prefix) + 1:].partition(".")
        if index.isdigit() and rest:
            items.setdefault(int(index), {})[rest] = value
    return [items[i] for i in sorted(items)]


def _documents(span: SourceSpan, prefix: str) -> list[tuple[int, str | None, str]]:
    """A span's documents with content, as (position in the span's list, id, text)."""
    docs = []
    for position, item in enumerate(indexed(span.attribute_map(), prefix)):
        content = item.get(DocumentAttributes.DOCUMENT_CONTENT)
        if content is not None:
            doc_id = item.get(DocumentAttributes.DOCUMENT_ID)
            docs.append((position, None if doc_id is None else str(doc_id), str(content)))
    return docs


@dataclass(frozen=True)
class DocumentSource:
    """A context document of the assembled trace and where its spans hold it: (span id,
    position in that span's document list) of every span it came from, the reranker's output
    list or each retriever's `retrieval.documents` (Phoenix's document annotations name a
    document so)."""

    doc_id: str
    text: str
    places: tuple[tuple[str, int], ...]


def document_sources(spans: Iterable[SourceSpan], problems: list[str] | None = None,
                     ) -> list[DocumentSource]:
    """The documents passed to the generator (see the module's rule), in context order, each
    with the spans and positions it came from; what is missing is added to `problems`. The
    spans may come in any order, and more than once."""
    spans = unique_spans(spans)
    problems = [] if problems is None else problems
    rerankers = [s for s in spans if kind(s) == _RERANKER
                 and _documents(s, RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS)]
    # (id, text, places) in context order; a reranker's list is kept as it is (a document it
    # lists twice is two contexts), the retrievers' lists are merged, the same document once.
    entries: list[tuple[str | None, str, list[tuple[str, int]]]] = []
    if rerankers:
        last = max(rerankers, key=lambda s: (s.end_ns, s.span_id))
        entries = [(doc_id, text, [(last.span_id, position)]) for position, doc_id, text
                   in _documents(last, RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS)]
    else:
        retrievers = [s for s in spans if kind(s) == _RETRIEVER]
        if not retrievers:
            problems.append("no retriever span: nothing says which documents the answer was "
                            "generated from")
            return []
        seen: dict[tuple[str | None, str], list[tuple[str, int]]] = {}
        for span in retrievers:
            for position, doc_id, text in _documents(span, SpanAttributes.RETRIEVAL_DOCUMENTS):
                if (doc_id, text) not in seen:
                    entries.append((doc_id, text, seen.setdefault((doc_id, text), [])))
                seen[(doc_id, text)].append((span.span_id, position))
        listed = sum(len(indexed(s.attribute_map(), SpanAttributes.RETRIEVAL_DOCUMENTS))
                     for s in retrievers)
        if not entries and listed:  # documents returned but their content not recorded
            problems.append(f"no documents: the {len(retrievers)} retriever span(s) hold no "
                            "retrieval.documents with content")
        # A retriever that listed no document returned nothing: an empty retrieval, audited
        # (contexts: [], every checkable claim NIC), not a trace to throw away.
    ids = _with_ids([doc_id for doc_id, _, _ in entries])
    return [DocumentSource(i, text, tuple(where))
            for i, (_, text, where) in zip(ids, entries, strict=True)]


def document_contexts(spans: list[SourceSpan], problems: list[str]) -> list[dict]:
    """The documents passed to the generator (see the module's rule), as {doc_id, text}; what
    is missing is added to `problems`."""
    return [{"doc_id": d.doc_id, "text": d.text} for d in document_sources(spans, problems)]


def _with_ids(doc_ids: list[str | None]) -> list[str]:
    """The documents' ids: `document.id`, else `doc<N>` by position; an id taken twice gets
    `~2`, `~3`, ..."""
    taken: dict[str, int] = {}
    out = []
    for i, doc_id in enumerate(doc_ids):
        base = doc_id if doc_id is not None else f"doc{i}"
        taken[base] = taken.get(base, 0) + 1
        out.append(base if taken[base] == 1 else f"{base}~{taken[base]}")
    return out
