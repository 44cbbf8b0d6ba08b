"""The header line rt4chart puts above each document of the full context, and its removal.

`segment.render_context` shows a judge each document under "[Document N: doc_id]". That line
is rt4chart's text, not the documents': its number and doc id must never be evidence. The
pipeline grounds quotes in the documents' sentences only (`evidence.align`); a judge that reads
the rendered context as one string (the offline judge) blanks these lines first. Standard
library only, so that the offline judge stays free of Beam.
"""

from __future__ import annotations

import functools
import re

# The line rt4chart puts above each document of the full context. It is rt4chart's text, not
# the documents': never evidence (quotes are grounded in `RenderedText.segments` only, and the
# offline judge blanks these lines with `blank_headers`). A doc_id's line breaks are shown as
# spaces so that the header stays one line.
HEADER_RE = re.compile(r"^\[Document \d+: [^\n]*\]$", re.M)


def document_header(n: int, doc_id: str) -> str:
    """The header line of the n-th document (1-based), newline included."""
    shown = re.sub(r"[\r\n]", " ", doc_id)
    return f"[Document {n}: {shown}]\n"


@functools.lru_cache(maxsize=64)  # the offline judge asks once per claim of a trace
def blank_headers(context: str) -> str:
    """`context` with every document header line replaced by spaces of the same length: what a
    judge that reads the rendered context as a string must take as the documents' text only
    (offsets, and so quotes, stay those of `context`). A document line shaped like a header
    is blanked too: it is the fake delimiter `injection.py` flags, not evidence of anything."""
    return HEADER_RE.sub(lambda m: " " * len(m.group()), context)
