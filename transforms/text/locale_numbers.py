"""Numbers as a decimal-comma language writes them ("30.000", "1 250 000", "12,5"), rewritten
as the quantity reader (`quantities.py`) reads them. A text rule of its own: it knows nothing
of units or ranges, only of how a locale groups digits."""

from __future__ import annotations

import re

# Most languages but English write a decimal comma and group thousands with a dot or a space:
# in a text not confidently English (`language.detect`), "30.000" is 30000, "1 250 000"
# 1250000, "12,5" 12.5 (a short claim whose language cannot be told reads as its quote does).
# A group of thousands never starts with 0: "0.100" is a decimal in every locale.
# A dot after the last group ends the sentence unless a digit follows it.
_DOT_GROUPS_RE = re.compile(r"(?<![\d.,])([1-9]\d{0,2}(?:\.\d{3})+)(?!\d|\.\d|,\d{3})")
_SPACE_GROUPS_RE = re.compile(r"(?<![\d.,])([1-9]\d{0,2}(?:[ \u00a0\u202f]\d{3})+)(?![\d.,]\d)")
# A comma before one, two or four and more digits: three would be English thousands.
_DECIMAL_COMMA_RE = re.compile(r"(?<![\d.,])(\d+),(\d{1,2}|\d{4,})(?![\d,])")


def locale_numbers(text: str) -> str:
    """`text` with the numbers of a decimal-comma language written as the reader reads them:
    "30.000" -> "30000", "1 250 000" -> "1250000", "12,5" -> "12.5", "200,00" -> "200.00".
    The text's length changes; call it only on a text that is not English."""
    text = _DOT_GROUPS_RE.sub(lambda m: m.group(1).replace(".", ""), text)
    text = _SPACE_GROUPS_RE.sub(lambda m: re.sub(r"\s", "", m.group(1)), text)
    return _DECIMAL_COMMA_RE.sub(r"\1.\2", text)
