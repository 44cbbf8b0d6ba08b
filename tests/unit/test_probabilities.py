"""Label probabilities from token log-probabilities (their combination per answer:
test_probability.py)."""

from __future__ import annotations

import math
from types import SimpleNamespace as NS

import pytest

from rt4chart.transforms.judges.openai.logprobs import p_unsupported


def _tok(text: str, logprob: float = 0.0, top=None) -> NS:
    return NS(token=text, logprob=logprob, bytes=list(text.encode()),
              top_logprobs=top if top is not None else [])


def _alt(text: str, p: float) -> NS:
    return NS(token=text, logprob=math.log(p), bytes=list(text.encode()))


def test_label_token_alternatives_give_p_not_entailed():
    content = '{"reasoning": "é ok", "evidence": [], "label": "NIC"}'
    head = content[: content.rindex('"NIC"') + 1]
    tokens = [_tok(head), _tok("NIC", math.log(0.5), [_alt("NIC", 0.5), _alt("ENT", 0.3),
                                                     _alt("CON", 0.1), _alt("Maybe", 0.1)]),
              _tok('"}')]
    # ENT 0.3 of the label mass 0.9 (the off-label alternative is left out).
    assert p_unsupported(content, NS(content=tokens)) == pytest.approx(1 - 0.3 / 0.9)


def test_a_token_holding_the_quote_and_a_label_prefix():
    content = '{"label": "ENT"}'
    tokens = [_tok('{"label": '), _tok('"EN', math.log(0.6), [_alt('"EN', 0.6), _alt('"CO', 0.4)]),
              _tok('T"}')]
    assert p_unsupported(content, NS(content=tokens)) == pytest.approx(0.4)


def test_unreadable_logprobs_give_none():
    assert p_unsupported('{"label": "ENT"}', None) is None
    assert p_unsupported('{"label": "ENT"}', NS(content=[])) is None
    assert p_unsupported('{"verdict": "ENT"}', NS(content=[_tok('{"verdict": "ENT"}')])) is None
    # Tokens that do not cover the label's position (a truncated report).
    assert p_unsupported('{"label": "ENT"}', NS(content=[_tok('{"lab')])) is None
