"""`redact_document`: a JSON document (summary.json, a report's data) cleaned whole, object keys
too (issue 47, defect 6)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from rt4chart.transforms.common.redact import Redactor, redact_document

OWN_KEY = "custom-key-value-0123456789"  # not key-shaped: known only as a configured value
PLAIN = st.text(alphabet="abcdefghij .:/-_", max_size=12)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | PLAIN


def _with_key(text: str) -> str:
    return f"{text}{OWN_KEY}{text}"


DOCS = st.recursive(
    SCALARS | PLAIN.map(_with_key),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        PLAIN | PLAIN.map(_with_key), children, max_size=4),
    max_leaves=20)


@given(DOCS)
def test_no_configured_key_survives_anywhere_in_a_document(doc):
    clean = redact_document(doc, (OWN_KEY,))
    assert OWN_KEY not in json.dumps(clean)


@given(st.recursive(SCALARS, lambda c: st.lists(c, max_size=4) | st.dictionaries(
    PLAIN, c, max_size=4), max_leaves=20))
def test_a_document_without_a_key_comes_back_equal(doc):
    assert redact_document(doc, (OWN_KEY,)) == doc


def test_a_redactor_cleans_a_summary_of_its_variables_keys():
    summary = {"judge_model": f"custom-{OWN_KEY}", "traces": 3, "ratio": 0.5, "inputs": [
        f"/data/{OWN_KEY}/t.jsonl"], "dead_letter_reasons": {f"read: {OWN_KEY}": 2},
        "sampling": None, "confirm_ent": False}
    clean = Redactor(("MY_JUDGE_KEY",)).redact_document(summary, {"MY_JUDGE_KEY": OWN_KEY})
    assert clean == {"judge_model": "custom-[REDACTED]", "traces": 3, "ratio": 0.5,
                     "inputs": ["/data/[REDACTED]/t.jsonl"],
                     "dead_letter_reasons": {"read: [REDACTED]": 2}, "sampling": None,
                     "confirm_ent": False}
