"""A trace's reservation for the spend caps (`reserve_usd`): a conservative, upper-ish estimate
of its whole judge cost, so that admitting traces by their reservations never goes over a cap
(`transforms/spend_cap.py`, which holds the ledger and the gate). Conservative figures: more
tokens than a tokenizer counts on prose, more claims and longer replies than the judge usually
gives. The run's `--estimate` is a finer estimator (`transforms/estimate.py`)."""

from __future__ import annotations

import math
from typing import Any

from rt4chart.schemas.records import PreparedTrace

# Conservative figures of the reservation (see reserve_usd): more tokens than a tokenizer
# counts on prose, more claims and longer replies than the judge usually gives.
CHARS_PER_TOKEN = 3.0
CLAIMS_PER_SENTENCE = 4
REPLY_TOKENS_PER_CLAIM = 150
CALL_OVERHEAD_TOKENS = 20  # chat framing per call
EVIDENCE_TOKENS = 300  # a confirm call's quoted evidence


def _tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN) + CALL_OVERHEAD_TOKENS


def _template_chars(*names: str) -> int:
    from rt4chart import prompts

    return sum(len(prompts.load(n)) for n in names)


def reserve_usd(prepared: PreparedTrace, stages: Any, prices: Any,
                confirm_prices: Any = None) -> float:
    """A conservative estimate of one trace's whole judge cost, in USD: the decomposition, one
    local call per window and group of `--claims-per-call` claims (every window, as if none
    were pruned), one global call per claim over the whole context, and with `--confirm-ent`
    or `--confirm-judge` one confirm call per claim (at `confirm_prices`, the second judge's,
    when given); `CLAIMS_PER_SENTENCE` claims per answer sentence. `prices`: the judge's (the
    Batch API's when it is used). One small function, to be swapped for a finer estimator
    (transforms/estimate.py)."""
    trace = prepared.trace
    claims = CLAIMS_PER_SENTENCE * max(1, len(prepared.answer_sentences))
    reply = claims * REPLY_TOKENS_PER_CLAIM
    system = _template_chars("verify_system.txt", "verify_absence_system.txt")
    calls_in, calls_out = [], []
    # decompose
    calls_in.append(_tokens(_template_chars("decompose_system.txt", "decompose_user.txt")
                            + len(trace.user_text) + len(trace.answer)))
    calls_out.append(reply)
    # verify_local: windows x groups of claims
    per_call = max(1, getattr(stages.verify_local, "claims_per_call", 1))
    groups = math.ceil(claims / per_call)
    local = _template_chars("verify_local_many_user.txt") + system
    for window in prepared.windows or ():
        text = len(prepared.window_text(window)) + len(trace.user_text)
        for g in range(groups):
            in_group = min(per_call, claims - g * per_call)
            calls_in.append(_tokens(local + text + in_group * 100))
            calls_out.append(in_group * REPLY_TOKENS_PER_CLAIM)
    # verify_global: each claim over the whole context
    context = sum(len(s.text) + 1 for s in prepared.sentences)
    glob = _template_chars("verify_global_hint_user.txt") + system + context + len(
        trace.user_text)
    calls_in.extend([_tokens(glob + 100)] * claims)
    calls_out.extend([REPLY_TOKENS_PER_CLAIM] * claims)
    usd = 0.0
    if getattr(stages.confirm, "enabled", False):  # --confirm-ent or --confirm-judge
        confirm_in = (_tokens(system + 100) + EVIDENCE_TOKENS) * claims
        confirm_out = REPLY_TOKENS_PER_CLAIM * claims
        if confirm_prices is None:
            calls_in.append(confirm_in)
            calls_out.append(confirm_out)
        else:
            usd += confirm_prices.cost(confirm_in, 0, confirm_out)
    return usd + prices.cost(sum(calls_in), 0, sum(calls_out))
