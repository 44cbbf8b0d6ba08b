"""The throughput benchmark's cost and ceiling figures (pure functions over its measurements).

- physical ceiling: min(RPM / calls per trace, TPM / tokens used per trace), tokens used being
  prompt + completion tokens as the provider reports them: what a client that reserved nothing
  could reach (so a reply cut off at its reservation, and retried, counts in neither: that
  client would never have sent it);
- admission ceiling: the same with the tokens admitted (prompt + `max_completion_tokens`), as
  the provider counts them against tokens/min: what the client's reservations allow;
- per task type: calls, input/cached/output tokens and USD per trace, from the answers table
  (rt4chart's own usage records); per stage: from the simulator's timeline;
- cost per 1,000 traces at gpt-4o-mini list prices, from the simulator's token counts.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict

# gpt-4o-mini, USD per 1M tokens: input, cached input, output
PRICES = (0.15, 0.075, 0.60)
# timeline columns (sim_provider.TIMELINE_COLUMNS)
ARRIVAL, DONE, STATUS, PROMPT, CACHED, COMPLETION, ADMITTED = range(7)
STAGE = 10


def usd(prompt: float, cached: float, completion: float) -> float:
    return ((prompt - cached) * PRICES[0] + cached * PRICES[1] + completion * PRICES[2]) / 1e6


def ceilings(ok: list[list], n: int, rpm: float, tpm: float, traces_per_min: float) -> dict:
    """Physical and admission ceilings (traces/min) and the fraction of each reached."""
    whole = [r for r in ok if not cut_off(r)]  # a cut-off attempt is all waste
    calls = len(whole) / n
    used = sum(r[PROMPT] + r[COMPLETION] for r in whole) / n
    admitted = sum(r[ADMITTED] for r in ok) / n
    physical = min(rpm / calls, tpm / used)
    admission = min(rpm / calls, tpm / admitted)
    return {
        "physical_ceiling_traces_per_min": round(physical, 2),
        "physical_bound_by": "requests" if rpm / calls <= tpm / used else "tokens",
        "fraction_of_physical": round(traces_per_min / physical, 3),
        "admission_ceiling_traces_per_min": round(admission, 2),
        "fraction_of_admission": round(traces_per_min / admission, 3),
        "used_tokens_per_trace": round(used, 1),
        "admitted_over_used_tokens": round(admitted / used, 3),
        "cut_off_calls": len(ok) - len(whole),
    }


def cut_off(row: list) -> bool:
    """Whether a 200 reply was cut off at its reservation (finish_reason "length")."""
    return row[COMPLETION] >= row[ADMITTED] - row[PROMPT]


def per_stage(ok: list[list], n: int) -> dict:
    """Per stage (from the prompts): calls, input, cached share, output and reserved output per
    trace."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for r in ok:
        s = sums[r[STAGE] if len(r) > STAGE else "?"]
        s[0] += 1
        s[1] += r[PROMPT]
        s[2] += r[CACHED]
        s[3] += r[COMPLETION]
        s[4] += r[ADMITTED] - r[PROMPT]
    return {stage: {"calls": round(c / n, 2), "input": round(i / n), "cached_share":
                    round(k / i, 3) if i else None, "output": round(o / n, 1),
                    "output_reserved": round(res / n, 1)}
            for stage, (c, i, k, o, res) in sorted(sums.items())}


def per_task(answers: list[dict]) -> dict:
    """Per task type: traces, and per trace calls, tokens, cached share and USD."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for a in answers:
        groups[a.get("task") or "?"].append(a)
    out = {}
    for task, rows in sorted(groups.items()):
        k = len(rows)
        inp = sum(a["input_tokens"] for a in rows)
        cached = sum(a["cached_tokens"] for a in rows)
        out[task] = {"traces": k, "calls": round(sum(a["judge_calls"] for a in rows) / k, 2),
                     "input": round(inp / k), "cached": round(cached / k),
                     "cached_share": round(cached / inp, 3) if inp else None,
                     "output": round(sum(a["output_tokens"] for a in rows) / k, 1),
                     "usd_per_1000": round(sum(a["cost_usd"] for a in rows) / k * 1000, 3)}
    return out


def verdicts_digest(claims: list[dict]) -> str:
    """A digest of every claim's local and final label: equal digests, identical verdicts."""
    rows = sorted((c["trace_id"], c["claim_index"], c.get("local_label") or "", c["label"] or "")
                  for c in claims)
    return hashlib.sha256(repr(rows).encode()).hexdigest()[:16]
