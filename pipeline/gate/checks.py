"""The gate's arithmetic (`rt4chart gate`, gate.py): rates per route from answer rows, the
pairing with a baseline, and one check per route and limit. Pure functions over rows as dicts
(the answers and claims tables' columns), tested without a run."""

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
    """A route's complete answers, the hallucinated among them, the incomplete ones (never
    counted either way), the rate and its 95% Wilson interval."""

    route: str
    answers: int
    hallucinated: int
    incomplete: int

    @property
    def rate(self) -> float | None:
        return self.hallucinated / self.answers if self.answers else None

    @property
    def low(self) -> float | None:
        return wilson(self.hallucinated, self.answers)[0]

    @property
    def high(self) -> float | None:
        return wilson(self.hallucinated, self.answers)[1]


@dataclass(frozen=True)
class Pair:
    """A route's rate in the run and in the baseline, over `paired` traces both audited to
    the end (0: no such trace, both runs' own answers compared)."""

    current: RouteRate
    baseline: RouteRate | None
    paired: int


@dataclass(frozen=True)
class Check:
    """One route and limit: whether it holds, and the figures that say so."""

    route: str
    limit: str  # "max-rate 0.05", "min-answers 20", "max-increase 0.02", "answers"
    ok: bool
    detail: str
    text: str = ""  # longer evidence for a failure (changed claims)


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


def rates(answers: Iterable[dict], only: set[str] | None = None) -> dict[str, RouteRate]:
    """Per route, of the answers (latest per trace; those in `only` when given)."""
    counts: dict[str, list[int]] = {}
    for tid, row in latest(answers).items():
        if only is not None and tid not in only:
            continue
        acc = counts.setdefault(row["route"], [0, 0, 0])
        if _is_complete(row):
            acc[0] += 1
            acc[1] += row["label"] in HALLUCINATED
        else:
            acc[2] += 1
    return {route: RouteRate(route, *acc) for route, acc in sorted(counts.items())}


def paired_rates(answers: Iterable[dict], baseline: Iterable[dict]) -> dict[str, Pair]:
    """Per route of the run: both rates over the traces complete in both runs (the run's
    route), or, for a route with none, each run's own rate of the route."""
    now, before = latest(answers), latest(baseline)
    own, theirs = rates(now.values()), rates(before.values())
    out = {}
    for route, current in own.items():
        ids = {tid for tid, row in now.items() if row["route"] == route and _is_complete(row)
               and tid in before and _is_complete(before[tid])}
        if ids:
            # The baseline's rows under the run's route (a trace may have moved route).
            base = rates([{**before[tid], "route": route} for tid in ids])[route]
            out[route] = Pair(rates(now.values(), ids)[route], base, len(ids))
        else:
            out[route] = Pair(current, theirs.get(route), 0)
    return out


def _pct(value: float) -> str:
    return f"{value:.1%}"


def rate_check(route: str, r: RouteRate | None, limit: float) -> Check:
    name = f"max-rate {limit:g}"
    if r is None:
        return Check(route, name, False, "the run has no answer on this route")
    if r.rate is None:
        return Check(route, name, False, "no complete answer to rate")
    ok = r.rate <= limit + SLACK
    return Check(route, name, ok, f"rate {_pct(r.rate)} {'<=' if ok else '>'} {_pct(limit)}")


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
    up = pair.current.rate - pair.baseline.rate
    ok = up <= most + SLACK
    how = f"on {pair.paired} paired traces" if pair.paired else "unpaired"
    return Check(route, name, ok, f"{_pct(pair.baseline.rate)} -> {_pct(pair.current.rate)} "
                 f"({up * 100:+.1f} points {'<=' if ok else '>'} {most * 100:.1f}, {how})")


def check_routes(config, current: dict[str, RouteRate], compared: dict[str, Pair] | None,
                 whole: str) -> list[Check]:
    """One check per route and limit of `config` (gate.GateConfig), in route order, and a
    failing run-level check (route `whole`) when the run has no complete answer at all."""
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
    return checks


def newly_hallucinated(after: tuple[list[dict], list[dict]],
                       before: tuple[list[dict], list[dict]], route: str) -> list[str]:
    """Claims of the route's traces, audited in both runs, whose label became CON or NIC
    (or that only the run has, hallucinated), as readable lines."""
    from rt4chart.pipeline.report.compare import claim_changes
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
