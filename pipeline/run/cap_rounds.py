"""`--max-usd` on the local runner: further rounds over the traces a round's cap skipped.

In batch every judge stage runs to completion before the next starts (a Reshuffle before each:
transforms/judge_stage.py), so the gate at trace start cannot see what the traces it admitted
really cost: it admits by conservative reservations (transforms/spend_cap.py), and a round
spends less than the cap. So after a round the spend is measured from its costs table, and the
traces it skipped are audited in another round with the budget that remains (internally the
path of `--redo` into its own folder: pipeline/run/redo_merge.py), until no skipped trace's
reservation fits in what remains, or none is left, or a round starts none. The run's skipped
table then holds only the traces never audited. Never above the cap; within about one trace's
reservation below it. A remote runner (Dataflow) has no rounds: one pass.

The reservation is far above what most traces cost, so a round admitting by it would leave a
gap of many traces' cost; once a round has audited traces whose reservations are known (the
skipped rows it audited), later rounds scale reservations by SAFETY x the largest ratio
actual / reserved seen (never above 1): a learned bound, not a proof, which is why it keeps a
margin of SAFETY over the worst trace seen.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
from collections.abc import Callable

from apache_beam.options.pipeline_options import PipelineOptions

from rt4chart.pipeline.results.summary import read_rows
from rt4chart.pipeline.run.chunked_audit import move_tables
from rt4chart.pipeline.run.config import AuditConfig
from rt4chart.pipeline.run.redo_merge import _remove_tables, carry_earlier_rows
from rt4chart.schemas.rows import CostRow, SkippedRow
from rt4chart.schemas.tables import TABLES
from rt4chart.transforms.spend_cap import JOB, with_ledger_id

logger = logging.getLogger("rt4chart")
# A record on one line: a CR or LF (each a line break to the reader) outside a JSON string
# is white space, so it becomes a space (JSON strings cannot hold them raw).
ONE_LINE = {ord("\n"): " ", ord("\r"): " "}

SAFETY = 1.5  # learned scale = SAFETY x the largest actual/reserved seen
ROUND_WORK = ".tmp-round"  # inside the staging folder; ".tmp-" files are never a run's files


def spent_by_cap(caps: dict[str, float], costs: list[CostRow]) -> dict[str, float]:
    """The USD spent under each cap's key (a route, or JOB: every route), from cost rows."""
    spent = dict.fromkeys(caps, 0.0)
    for row in costs:
        cost = row.cost_usd or 0.0
        for key in (row.route, JOB):
            if key in spent:
                spent[key] += cost
    return spent


def remaining_budget(caps: dict[str, float], costs: list[CostRow]) -> dict[str, float]:
    """What each cap leaves after the spend in `costs` (never below 0)."""
    spent = spent_by_cap(caps, costs)
    return {key: max(0.0, cap - spent[key]) for key, cap in caps.items()}


def learned_scale(reserved: dict[str, float], answers: list, scale: float) -> float:
    """The reservations' scale for the next round: SAFETY x the largest actual / reserved of
    the traces in `reserved` ({trace_id: unscaled reservation}) now answered, never above 1;
    `scale` when none is known."""
    ratios = [a.cost_usd / reserved[a.trace_id] for a in answers
              if a.trace_id in reserved and a.cost_usd is not None and reserved[a.trace_id] > 0]
    return min(1.0, SAFETY * max(ratios)) if ratios else scale


def fits(reservation: float, route: str, budget: dict[str, float], share: int = 1) -> bool:
    """Whether a reservation fits in the budget of every cap its route falls under."""
    return all(reservation <= budget[key] / share for key in (route, JOB) if key in budget)


def run_rounds(staged: AuditConfig, staging: str, options: PipelineOptions,
               run_pipelines: Callable[[AuditConfig], object]) -> int:
    """Further rounds over the skipped traces in `staging` (see the module's docstring); how
    many rounds the run had in all. `run_pipelines(config)` runs one round's pipelines."""
    caps = staged.stages.caps
    rounds, total, ran_at, tried = 1, caps.caps, 1.0, {}
    while True:
        skipped: list[SkippedRow] = read_rows(staging, "skipped")
        raw = {r.trace_id: r.reservation_usd / ran_at for r in skipped}  # unscaled
        scale = learned_scale(tried, read_rows(staging, "answers"), ran_at)
        budget = remaining_budget(total, read_rows(staging, "costs"))
        if not skipped or not any(fits(raw[r.trace_id] * scale, r.route, budget, caps.share)
                                  for r in skipped):
            return rounds
        tried, ran_at = raw, scale
        rounds += 1
        work = os.path.join(staging, f"{ROUND_WORK}-{rounds}")
        os.makedirs(work, exist_ok=True)
        try:
            source = os.path.join(work, "skipped.jsonl")
            with open(source, "w", encoding="utf-8") as fh:
                fh.writelines(s.raw.translate(ONE_LINE) + "\n" for s in skipped)
            out = os.path.join(work, "out")
            round_caps = with_ledger_id(dataclasses.replace(
                caps, budget=tuple(budget.items()), ledger_id="", scale=scale))
            config = dataclasses.replace(
                staged, inputs=(source,), out=out, redo=None, bigquery=None,
                stages=dataclasses.replace(staged.stages, caps=round_caps))
            logger.info("spend cap: round %d over %d skipped trace(s), $%s left", rounds,
                        len(skipped), ", ".join(f"{k}={v:.6f}" for k, v in budget.items()))
            run_pipelines(config)
            started = len(skipped) - len(read_rows(out, "skipped"))
            carry_earlier_rows(staging, out, config, options, redone=False)
            _remove_tables(staging, TABLES)
            move_tables(out, staging, f"round{rounds}")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if started <= 0:
            return rounds


def cap_record(staged: AuditConfig, staging: str, rounds: int) -> dict | None:
    """summary.json's `spend_cap`: the reason, the caps, the spend, the rounds; None without."""
    caps = staged.stages.caps
    if not caps.enabled:
        return None
    spent = spent_by_cap(caps.caps, read_rows(staging, "costs"))
    return {"reason": caps.reason, "cap_usd": caps.caps, "spent_usd": spent.get(JOB, sum(
        spent.values())), "spent_by_cap": spent, "rounds": rounds, "share": caps.share,
            "reached": bool(read_rows(staging, "skipped"))}

