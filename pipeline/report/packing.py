"""Trace views packed: each view's HTML gzip-compressed and base64-encoded in the page, and
unpacked by the page's script when it loads (`DecompressionStream`, in every current browser).

A trace view repeats its answer (marked, then sentence by sentence), its claims and its context
with the anchors that link them: about 24 KB of HTML for a flagged answer, a tenth of that
packed. The view a reader gets is the same HTML, inserted where the packed one stood; only the
file is smaller (a 200-answer report: 2.6 MB before, about 0.5 MB packed;
`tests/bench/bench_report_size.py`). `unpacked()` gives the page as a browser shows it, for
tests and for tools that read the file (a text search, a leak scan).
"""

from __future__ import annotations

import base64
import gzip
import html
import re

# The placeholder a packed view sits in (the page's script replaces it with the view).
PACKED = re.compile(r'<div class="packed" data-gz="([A-Za-z0-9+/=]*)"></div>')


def pack(view: str) -> str:
    """`view`'s HTML, gzip-compressed (no timestamp: the same view packs the same) and
    base64-encoded."""
    return base64.b64encode(gzip.compress(view.encode("utf-8"), compresslevel=9, mtime=0)
                            ).decode("ascii")


def unpack(packed: str) -> str:
    """The HTML `pack` was given."""
    return gzip.decompress(base64.b64decode(packed, validate=True)).decode("utf-8")


def placeholder(view: str) -> str:
    """The element the page holds for `view`."""
    return f'<div class="packed" data-gz="{html.escape(pack(view))}"></div>'


def unpacked(page: str) -> str:
    """`page` with every packed view in place, as the page's script puts it."""
    return PACKED.sub(lambda m: unpack(m.group(1)), page)
