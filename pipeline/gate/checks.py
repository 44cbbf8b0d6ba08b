"""The gate's arithmetic (`rt4chart gate`, gate.py): rates per route from answer rows, the
pairing with a baseline, and one check per route and limit. Pure functions over rows as dicts
(the answers and claims tables' columns), tested without a run.

An answer is checked when it is complete (every claim judged) over the whole answer; an
incomplete answer (a judge call failed) or a partial one (audited on its first sentences or
claims only, `--oversize truncate`) is unchecked. The rate a limit is held to counts every
unchecked answer as hallucinated (`RouteRate.bound`): a judge failing on exactly the flagged
answers, or a cut hiding the hallucinated sentence, cannot pass a build; and
`--max-incomplete` (default 0) fails a route with more unchecked answers than allowed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from rt4chart.transforms.common.joins import wilson

HALLUCINATED = ("CON", "NIC")
MAX_CHANGED_CLAIMS = 20  # listed in a failed comparison's JUnit text
# Rates are ratios of counts: a difference of two of them is compared with this slack, so that
# 0.3 - 0.2 is not taken to exceed 0.1.
SLACK = 1e-9


@dataclass(frozen=True)
class RouteRate:
    """A route's checked answers (complete, not partial), the hallucinated among them, and its
    unchecked ones: incomplete (a judge call failed) and partial (complete on a truncated
    answer). `rate` and its 95% Wilson interval are the checked answers'; `bound` counts
    every unchecked answer as hallucinated, the rate the limits are held to."""

    route: str
    answers: int
    hallucinated: int
    incomplete: int
    partial: int = 0

    @property
    def unchecked(self) -> int:
        return self.incomplete + self.partial

    @property
    def rate(self) -> float | None:
        return self.hallucinated / self.answers if self.answers else None

    @property
    def bound(self) -> float | None:
        """The rate at worst, whatever the unchecked answers' verdicts would have been."""
        total = self.answers + self.unchecked
        return (self.hallucinated + self.unchecked) / total if total else None

    @property
    def low(self) -> float | None:
        return wilson(self.hallucinated, self.answers)[0]

    @property
    def high(self) -> float | None:
        return wilson(self.hallucinated, self.answers)[1]

    def unchecked_text(self) -> str:
        """"1 incomplete, 2 partial" (the kinds there are), "" when every answer is checked."""
        parts = [f"{n} {what}" for n, what in ((self.incomplete, "incomplete"),
                                               (self.partial, "partial")) if n]
        return ", ".join(parts)


@dataclass(frozen=True)
class Pair:
    """A route's rate in the run and in the baseline, over `paired` traces the baseline
    checked and the run audited (0: no such trace, both runs' own answers compared)."""

    current: RouteRate
    baseline: RouteRate | None
    paired: int


@dataclass(frozen=True)
class Check:
    """One route and limit: whether it holds, and the figures that say so. A `refused` check
    (route `*`: the run or its baseline cannot be gated, run_state.py) ends the gate with exit
    2 rather than 1."""

    route: str
    # "max-rate 0.05", "min-answers 20", "max-increase 0.02", "max-incomplete 0", "answers",
    # and the run-level "run state", "baseline state", "baseline judge", "run tables"
    limit: str
    ok: bool
    detail: str
    text: str = ""  # longer evidence for a failure (changed claims)
    refused: bool = False


def latest(answers: Iterable[dict]) -> dict[str, dict]:
    """One answer row per trace id: its latest (a redo or a stream may have written more)."""
    out: dict[str, dict] = {}
    for row in answers:
        kept = out.get(row["trace_id"])
        if kept is None or row["audited_at"] >= kept["audited_at"]:
            out[row["trace_id"]] = row
    return out


def _is_complete(row: dict) -> bool:
    return row["status"] == "ok" and row["label"] is not None


def _is_checked(row: dict) -> bool:
    return _is_complete(row) and not row.get("partial")


def rates(answers: Iterable[dict], only: set[str] | None = None) -> dict[str, RouteRate]:
    """Per route, of the answers (latest per trace; those in `only` when given)."""
    counts: dict[str, list[int]] = {}
    for tid, row in latest(answers).items():
        if only is not None and tid not in only:
            continue
        acc = counts.setdefault(row["route"], [0, 0, 0, 0])
        if _is_checked(row):
            acc[0] += 1
            acc[1] += row["label"] in HALLUCINATED
        else:
            acc[2 if not _is_complete(row) else 3] += 1
    return {route: RouteRate(route, *acc) for route, acc in sorted(counts.items())}


def paired_rates(answers: Iterable[dict], baseline: Iterable[dict]) -> dict[str, Pair]:
    """Per route of the run: both rates over the traces the baseline checked and the run
    audited (the run's route; the run's unchecked answers among them count against it, as
    everywhere), or, for a route with none, each run's own rate of the route."""
    now, before = latest(answers), latest(baseline)
    own, theirs = rates(now.values()), rates(before.values())
    out = {}
    for route, current in own.items():
        ids = {tid for tid, row in now.items() if row["route"] == route
               and tid in before and _is_checked(before[tid])}
        if ids:
            # The baseline's rows under the run's route (a trace may have moved route).
            base = rates([{**before[tid], "route": route} for tid in ids])[route]
            out[route] = Pair(rates(now.values(), ids)[route], base, len(ids))
        else:
            out[route] = Pair(current, theirs.get(route), 0)
    return out


def _pct(value: float) -> str:
    return f"{value:.1%}"


def _bound_text(r: RouteRate) -> str:
    """The rate a limit is held to: "rate 20.0%", or, with unchecked answers, "rate 0.0%,
    20.0% counting 1 incomplete as hallucinated"."""
    if not r.unchecked:
        return f"rate {_pct(r.bound)}"
    return f"rate {_pct(r.rate)}, {_pct(r.bound)} counting {r.unchecked_text()} as hallucinated"


def rate_check(route: str, r: RouteRate | None, limit: float) -> Check:
    name = f"max-rate {limit:g}"
    if r is None:
        return Check(route, name, False, "the run has no answer on this route")
    if r.rate is None:
        return Check(route, name, False, "no complete answer to rate")
    ok = r.bound <= limit + SLACK
    return Check(route, name, ok, f"{_bound_text(r)} {'<=' if ok else '>'} {_pct(limit)}")


def incomplete_check(route: str, r: RouteRate | None, most: int) -> Check:
    """At most `most` unchecked (incomplete or partial) answers on the route."""
    n = r.unchecked if r else 0
    ok = n <= most
    what = r.unchecked_text() if n else "0 incomplete or partial"
    why = "" if ok else (" (judge calls failed on them, or they were cut: nothing says they "
                         "are grounded)")
    return Check(route, f"max-incomplete {most}", ok,
                 f"{what} answer{'' if n == 1 else 's'} {'<=' if ok else '>'} {most}{why}")


def answers_check(route: str, r: RouteRate | None, least: int) -> Check:
    n = r.answers if r else 0
    ok = n >= least
    return Check(route, f"min-answers {least}", ok,
                 f"{n} complete answers {'>=' if ok else '<'} {least}")


def increase_check(route: str, pair: Pair | None, most: float) -> Check:
    name = f"max-increase {most:g}"
    if pair is None or pair.current.rate is None:
        return Check(route, name, False, "no complete answer to compare")
    if pair.baseline is None or pair.baseline.rate is None:
        return Check(route, name, False, "the baseline has no complete answer on this route")
    up = pair.current.bound - pair.baseline.rate
    ok = up <= most + SLACK
    how = f"on {pair.paired} paired traces" if pair.paired else "unpaired"
    worst = (f" counting {pair.current.unchecked_text()} as hallucinated"
             if pair.current.unchecked else "")
    return Check(route, name, ok, f"{_pct(pair.baseline.rate)} -> {_pct(pair.current.bound)}"
                 f"{worst} ({up * 100:+.1f} points {'<=' if ok else '>'} {most * 100:.1f}, "
                 f"{how})")


def check_routes(config, current: dict[str, RouteRate], compared: dict[str, Pair] | None,
                 whole: str) -> list[Check]:
    """One check per route and limit of `config` (gate.GateConfig; `--max-incomplete` is
    always checked, 0 by default), in route order, and a failing run-level check (route
    `whole`) when the run has no complete answer at all."""
    checks = []
    if not any(r.answers for r in current.values()):
        checks.append(Check(whole, "answers", False, "the run has no complete answer"))
    for route in sorted(set(current) | set(config.route_limits)):
        r = current.get(route)
        if config.min_answers is not None:
            checks.append(answers_check(route, r, config.min_answers))
        limit = config.route_limits.get(route, config.max_rate)
        if limit is not None:
            checks.append(rate_check(route, r, limit))
        if config.max_increase is not None and compared is not None:
            checks.append(increase_check(route, compared.get(route), config.max_increase))
        checks.append(incomplete_check(route, r, config.max_incomplete))
    return checks


def newly_hallucinated(after: tuple[list[dict], list[dict]],
                       before: tuple[list[dict], list[dict]], route: str) -> list[str]:
    """Claims of the route's traces, audited in both runs, whose label became CON or NIC
    (or that only the run has, hallucinated), as readable lines."""
    from rt4chart.pipeline.report.side_by_side import claim_changes
    from rt4chart.pipeline.results.load import Run

    def run(tables: tuple[list[dict], list[dict]]) -> Run:
        return Run("", list(latest(tables[0]).values()), tables[1], [], [], [], {})

    now = run(after)
    routes = {a["trace_id"]: a["route"] for a in now.answers}
    return [f"{c.trace_id}: {c.before} -> {c.after}: {c.claim}"
            for c in claim_changes(run(before), now)
            if routes.get(c.trace_id) == route and c.after in HALLUCINATED]


def with_claim_changes(checks: list[Check], after, before) -> list[Check]:
    """The failed max-increase checks with the claims that turned hallucinated as their text."""
    out = []
    for check in checks:
        if not check.ok and check.limit.startswith("max-increase"):
            lines = newly_hallucinated(after, before, check.route)
            shown = lines[:MAX_CHANGED_CLAIMS]
            more = len(lines) - len(shown)
            text = "\n".join(["claims newly hallucinated on traces both runs audited:",
                              *shown] + ([f"... and {more} more"] if more else []))
            check = replace(check, text=text if lines else "")
        out.append(check)
    return out
