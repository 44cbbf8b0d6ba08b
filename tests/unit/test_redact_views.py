"""Property tests of the redaction's decoded views (transforms/common/redact_views.py): a
configured key
echoed in any of the general encodings, inside any surrounding text, is removed, exactly where it
was; a text without it keeps every character."""

from __future__ import annotations

import base64
import html

from hypothesis import given, settings
from hypothesis import strategies as st

from rt4chart.transforms.common.redact import REDACTED, redact
from rt4chart.transforms.common.redact_views import merge, plain_view, replace_spans, skeleton

# Keys and surrounding text from disjoint letters, so that text around a key cannot complete it.
KEYS = st.text("abcdefghijkmnopqrstuvwABCDEFGHJKLMNPQRSTUVW0123456789-_", min_size=16,
               max_size=40).filter(lambda k: len(skeleton(k)) >= 14)
# (a key's own leading or trailing dashes are separators: an echo may keep those alone)
EDGED = KEYS.filter(lambda k: k[0].isalnum() and k[-1].isalnum())
FILLER = st.text("xyzXYZ .,;!?()\n\t&\\\u200b\u00e9", max_size=30)

# Encodings whose whole echo is the span removed.
EXACT = {
    "as is": lambda k: k,
    "zero-width": "\u200b".join,
    "soft hyphens and joiners": "\u00ad\u200d".join,
    "reversed": lambda k: k[::-1],
    "decimal entities": lambda k: "".join(f"&#{ord(c)};" for c in k),
    "hex entities": lambda k: "".join(f"&#x{ord(c):x};" for c in k),
    "named entities": lambda k: html.escape(k).replace("-", "&#45;"),
    "commas": ",".join,
    "spaces": " ".join,
    "dots and dashes": ".-".join,
    "unicode escapes": lambda k: "".join(f"\\u{ord(c):04x}" for c in k),
    "upper case": str.upper,
    "full-width": lambda k: "".join(chr(ord(c) + 0xFEE0) for c in k),
    "base32": lambda k: base64.b32encode(k.encode()).decode(),
}
# Encodings inside other data: what encodes the key's bytes goes, a few characters may stay.
INSIDE = {
    "base32 after bytes": lambda k: base64.b32encode(b"usr:" + k.encode()).decode(),
    "base64 after bytes": lambda k: base64.b64encode(b"u:" + k.encode()).decode(),
    "hex": lambda k: k.encode().hex(),
    "quoted characters": lambda k: str(list(k)),  # the outer quotes and brackets stay
}


def _recoverable(text: str, key: str) -> bool:
    view = skeleton(plain_view(text)[0])
    core = skeleton(key)
    return core in view or core[::-1] in view or key in text


@settings(max_examples=60, deadline=None)
@given(key=EDGED, before=FILLER, after=FILLER, name=st.sampled_from(sorted(EXACT)))
def test_an_echoed_key_is_removed_exactly_where_it_was(key, before, after, name):
    echo = EXACT[name](key)
    out = redact(f"{before}<{echo}>{after}", [key])
    assert not _recoverable(out, key)
    assert out == f"{before}<{REDACTED}>{after}"


@settings(max_examples=40, deadline=None)
@given(key=KEYS, before=FILLER, after=FILLER, name=st.sampled_from(sorted(INSIDE)))
def test_a_key_encoded_inside_other_data_is_removed(key, before, after, name):
    encoded = INSIDE[name](key)
    out = redact(f"{before} {encoded} {after}", [key])
    assert REDACTED in out
    assert encoded not in out and not _recoverable(out, key)
    assert out.startswith(before) and out.endswith(after)


@settings(max_examples=80, deadline=None)
@given(key=KEYS, text=st.text("xyzXYZacdefg0123 .,;&#\\u200b\u00e9\u200b\u0301\uff41",
                              max_size=80))
def test_a_text_without_the_key_keeps_every_character(key, text):
    if not _recoverable(text, key):
        assert redact(text, [key]) == text


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 10)), max_size=8))
def test_merged_spans_cover_the_same_characters_without_overlap(pairs):
    spans = [(start, start + size) for start, size in pairs]
    merged = merge(spans)
    covered = {i for start, end in spans for i in range(start, end)}
    assert {i for start, end in merged for i in range(start, end)} == covered
    assert all(a[1] < b[0] for a, b in zip(merged, merged[1:], strict=False))
    text = "".join(chr(97 + i % 26) for i in range(70))
    out = replace_spans(text, spans, "#")
    assert len(out) == len(text) - len(covered) + len(merged)  # one mark per merged span


def test_views_undo_entities_escapes_and_invisible_characters():
    view, where = plain_view("a&#98;\\u0063\u200bd\uff45")
    assert view == "abcde"
    assert where.span(1, 3) == (1, 12)  # b and c: the entity and the escape
    assert plain_view("plain ascii text") == ("plain ascii text", None)
    assert plain_view("東京は日本の首都です") == ("東京は日本の首都です", None)
