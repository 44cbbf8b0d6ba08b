"""Packed trace views (pipeline/report/packing.py): what the page's script unpacks is the view
the report rendered, byte for byte (issue 48: the 200-answer report from 2.6 MB to 0.5 MB)."""

from __future__ import annotations

import base64
import binascii
import gzip

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rt4chart.pipeline.report import packing

# Views with the characters trace text brings: markup, quotes, entities, any Unicode.
VIEWS = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=300) | st.sampled_from(
    ['<section class="trace" id="trace-x">&lt;script&gt;"q"</section>', "", "é\u200b🙂"])


@given(VIEWS)
def test_a_packed_view_unpacks_to_itself(view):
    assert packing.unpack(packing.pack(view)) == view


@given(VIEWS)
def test_packing_is_deterministic_and_holds_no_text_in_clear(view):
    packed = packing.pack(view)
    assert packing.pack(view) == packed  # no timestamp in the gzip header
    assert set(packed) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")


@given(st.lists(st.tuples(st.text(max_size=40), VIEWS), max_size=4), st.text(max_size=40))
def test_a_page_unpacks_with_every_view_in_its_place(parts, tail):
    frame = "".join(f"<p>{text}</p>{packing.placeholder(view)}" for text, view in parts) + tail
    expected = "".join(f"<p>{text}</p>{view}" for text, view in parts) + tail
    assert packing.unpacked(frame) == expected


def test_a_damaged_view_is_an_error_not_a_blank():
    good = packing.pack("<p>view</p>")
    with pytest.raises(binascii.Error):
        packing.unpack(good[:-3] + "!!!")
    truncated = base64.b64encode(base64.b64decode(good)[:-6]).decode()
    with pytest.raises((EOFError, gzip.BadGzipFile)):
        packing.unpack(truncated)
