"""Spans built by hand for the span-mapping tests: a span with OpenInference attributes (dotted
keys written with `__`), a document list, a retriever span."""

from __future__ import annotations

from rt4chart.schemas.spans import SourceSpan

TRACE = "0af7651916cd43dd8448eb211c80319c"


def span(span_id: str, parent: str = "", kind: str = "", start: int = 0, end: int = 0,
         resource: dict | None = None, **attributes) -> SourceSpan:
    attrs = {k.replace("__", "."): v for k, v in attributes.items()}
    if kind:
        attrs["openinference.span.kind"] = kind
    return SourceSpan(TRACE, span_id, parent, span_id, start, end, tuple(sorted(attrs.items())),
                      tuple(sorted((resource or {}).items())))


def docs(prefix: str, *items: tuple[str | None, str]) -> dict:
    out = {}
    for i, (doc_id, text) in enumerate(items):
        out[f"{prefix}.{i}.document.content"] = text
        if doc_id is not None:
            out[f"{prefix}.{i}.document.id"] = doc_id
    return out


def retriever(span_id: str, *items, start: int = 10) -> SourceSpan:
    return span(span_id, "root", "RETRIEVER", start, start + 5,
                **{k.replace(".", "__"): v for k, v in docs("retrieval.documents",
                                                            *items).items()})
