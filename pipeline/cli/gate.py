"""`rt4chart gate RUN`: fail a CI build when a run hallucinates more than its limits allow.

The run is checked before its numbers (gate/run_state.py): a run, or a baseline, that is still
being written, holds what a failed run completed, or was cut short while being swapped in is
refused, and so is a baseline judged by another judge model or prompt hash (unless
`--across-judges`): exit 2, the reason named.

Then each route of the run is checked against the limits given: its rate (hallucinated answers
over answers, the answers table's latest row per trace, each unchecked answer, incomplete or
partial, counted as hallucinated) at most `--max-rate` or its own `--route ROUTE=R`; at least
`--min-answers` checked answers; at most `--max-incomplete` unchecked answers (default 0); with
`--baseline`, at most `--max-increase` above the baseline's rate. The comparison with a
baseline is made on the traces the baseline checked that the run audited (same trace ids)
wherever a route has any, so that a different sample of traces is not taken for a regression;
a route with none is compared run against run, and the line says which. A limit that cannot be
checked (a route with no complete answer, a route the baseline lacks) fails: a gate never
passes for lack of data.

Exit codes: 0 within every limit, 1 not, 2 refused (see above) or a usage error (no limit
given, a run folder with no tables). `--junit FILE` writes one test case per route and limit,
and one per refusal (gate/junit.py); `--diff FILE` writes the claim-level comparison of the
two runs (`rt4chart report RUN --compare RUN0`).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from rt4chart.pipeline.gate import run_state
from rt4chart.pipeline.gate.checks import Check, RouteRate, check_routes, paired_rates, rates
from rt4chart.pipeline.options.flags import add_options
from rt4chart.transforms.common.options_spec import from_values, option

ALL = run_state.WHOLE  # the run-level checks' route


class Refused(ValueError):
    """The gate cannot check the run (exit 2, as a usage error): `checks` say why."""

    def __init__(self, checks: list[Check]):
        super().__init__("gate refused: " + "; ".join(c.detail for c in checks))
        self.checks = checks


def fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise ValueError(f"must be a fraction in [0, 1], got {text}")
    return value


def route_limit(text: str) -> tuple[str, float]:
    """ROUTE=R (the last `=` splits: a route name may hold one) as (route, rate)."""
    route, sep, rate = text.rpartition("=")
    if not sep or not route:
        raise ValueError(f"--route expects ROUTE=R, got {text!r}")
    try:
        return route, fraction(rate)
    except ValueError as exc:
        raise ValueError(f"--route {text}: the rate {exc}") from None


@dataclass(frozen=True)
class GateConfig:
    """What `rt4chart gate` checks, validated once."""

    run: str
    max_rate: float | None = option(
        "--max-rate", parse=fraction, metavar="R",
        help="each route's hallucination rate (its unchecked answers counted as "
             "hallucinated) must be at most R, a fraction: 0.05 is 5%%")
    route: tuple[str, ...] = option(
        "--route", kind="append", default=(), parsed_default=[], metavar="ROUTE=R",
        help="ROUTE's rate must be at most R (instead of --max-rate; repeatable); a route "
             "named here that the run lacks fails")
    baseline: str | None = option(
        "--baseline", metavar="RUN0",
        help="an earlier run (folder or bq:PROJECT:DATASET) to compare with, on the traces "
             "both runs audited where there are any")
    max_increase: float | None = option(
        "--max-increase", parse=fraction, metavar="D",
        help="with --baseline: each route's rate may exceed the baseline's by at most D "
             "(0.02: two points)")
    min_answers: int | None = option(
        "--min-answers", parse=int, metavar="N",
        help="each route needs at least N complete answers (incomplete and partial ones not "
             "counted)")
    max_incomplete: int = option(
        "--max-incomplete", parse=int, default=0, metavar="N",
        help="each route may have at most N unchecked answers: incomplete (a judge call "
             "failed) or partial (audited on its first sentences only, --oversize truncate); "
             "default 0. Those allowed still count as hallucinated in the rates the limits "
             "are held to")
    across_judges: bool = option(
        "--across-judges", kind="flag", default=False,
        help="with --baseline: compare with a baseline judged by another judge model or "
             "prompt hash (refused otherwise: exit 2, both named)")
    junit: str | None = option(
        "--junit", metavar="FILE",
        help="write JUnit XML there: one test case per route and limit")
    diff: str | None = option(
        "--diff", metavar="FILE",
        help="with --baseline: write the claim-level comparison of the two runs there "
             "(HTML, as `rt4chart report RUN --compare RUN0 --out FILE`)")
    route_limits: dict[str, float] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        limits = dict(route_limit(text) for text in self.route)
        object.__setattr__(self, "route_limits", limits)
        if self.max_rate is None and not limits and self.max_increase is None and (
                self.min_answers is None):
            raise ValueError("give a limit: --max-rate, --route ROUTE=R, --baseline RUN0 "
                             "--max-increase D or --min-answers N")
        if (self.baseline is None) != (self.max_increase is None):
            raise ValueError("--baseline and --max-increase go together")
        if self.diff and not self.baseline:
            raise ValueError("--diff needs --baseline")
        if self.min_answers is not None and self.min_answers < 1:
            raise ValueError(f"--min-answers must be >= 1, got {self.min_answers}")
        if self.max_incomplete < 0:
            raise ValueError(f"--max-incomplete must be >= 0, got {self.max_incomplete}")
        if self.across_judges and not self.baseline:
            raise ValueError("--across-judges needs --baseline")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register the `gate` command."""
    p = sub.add_parser(
        "gate", allow_abbrev=False,
        help="exit 1 when a run's hallucination rates are over their limits (CI)",
        description="Check an audit run against limits on its hallucination rate per route, "
                    "optionally against a baseline run: exit 0 within every limit, 1 when "
                    "not, 2 when refused or on a usage error. Refused: a run or baseline "
                    "still being written, failed or cut short mid-swap, and a baseline judged "
                    "by another judge model or prompt hash. Unchecked answers (incomplete or "
                    "partial) count against the build: each counts as hallucinated in the "
                    "rates, and more than --max-incomplete (default 0) on a route fails it. "
                    "Prints per route the rate, its 95% interval, the baseline's and the "
                    "verdict.")
    p.add_argument("run", metavar="RUN",
                   help="the run to check: an output folder of `rt4chart audit` or "
                        "`stream`, or bq:PROJECT:DATASET")
    add_options(p, GateConfig)
    return p


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def rate_text(r: RouteRate) -> str:
    """"12.5% [5.5%, 26.1%] of 40" (no complete answer: "n/a of 0")."""
    if r.rate is None:
        return f"n/a of {r.answers}"
    return f"{_pct(r.rate)} [{_pct(r.low)}, {_pct(r.high)}] of {r.answers}"


def route_line(route: str, current: RouteRate | None, base: RouteRate | None,
               paired: int | None, checks: list[Check]) -> str:
    """One route's line: its rate and interval, the baseline's, and the verdict."""
    text = f"{route}: rate {rate_text(current) if current else 'absent'}"
    if current is not None and current.unchecked:
        text += (f" ({current.unchecked_text()}: counted as hallucinated, "
                 f"{_pct(current.bound)} at worst)")
    if paired is not None:
        how = f"on {paired} paired traces" if paired else "unpaired: no trace in both runs"
        text += f"; baseline {rate_text(base) if base else 'absent'} ({how})"
    failed = [c for c in checks if not c.ok]
    verdict = "FAIL " + "; ".join(c.detail for c in failed) if failed else "ok"
    return f"{text}: {verdict}"


def _read(source: str, role: str) -> tuple[list[dict], list[dict]]:
    """The answers and claims rows of the run or baseline (`role`); Refused without them."""
    from rt4chart.pipeline.results.runs import read_run_tables

    try:
        tables = read_run_tables(source)
    except FileNotFoundError as exc:
        raise Refused([run_state.refusal(f"{role} tables", str(exc))]) from None
    return tables["answers"].to_pylist(), tables["claims"].to_pylist()


def _check_states(config: GateConfig) -> None:
    """Refused when the run or the baseline is not a finished run (before reading either)."""
    found = [run_state.state_check(config.run, "run")]
    if config.baseline:
        found.append(run_state.state_check(config.baseline, "baseline"))
    refused = [c for c in found if c is not None]
    if refused:
        raise Refused(refused)


def _lines(config: GateConfig, checks: list[Check], current: dict[str, RouteRate],
           compared: dict | None) -> list[str]:
    routes = sorted({c.route for c in checks if c.route != ALL})
    lines = [f"gate {config.run}" + (f" against {config.baseline} (rates compared on the "
                                     "traces both runs audited, per route, where there are "
                                     "any)" if config.baseline else "")]
    for route in routes:
        pair = compared.get(route) if compared is not None else None
        lines.append(route_line(
            route, pair.current if pair else current.get(route),
            pair.baseline if pair else None,
            (pair.paired if pair else 0) if compared is not None else None,
            [c for c in checks if c.route == route]))
    lines += [f"{ALL}: {'note' if c.ok else 'FAIL'} {c.detail}" for c in checks
              if c.route == ALL]
    return lines


def evaluate(config: GateConfig) -> tuple[list[Check], list[str]]:
    """Every check and the lines to print (reads the runs). Raises Refused when the run or the
    baseline cannot be gated (run_state.py)."""
    _check_states(config)
    answers, claims = _read(config.run, "run")
    current = rates(answers)
    compared = base_runs = None
    checks: list[Check] = []
    if config.baseline:
        base_runs = _read(config.baseline, "baseline")
        same = run_state.judge_check(answers, base_runs[0], config.across_judges)
        if same is not None and same.refused:
            raise Refused([same])
        checks += [same] if same is not None else []
        compared = paired_rates(answers, base_runs[0])
    checks += check_routes(config, current, compared, ALL)
    if base_runs is not None:
        from rt4chart.pipeline.gate.checks import with_claim_changes

        checks = with_claim_changes(checks, (answers, claims), base_runs)
    return checks, _lines(config, checks, current, compared)


def _write_diff(config: GateConfig) -> None:
    if config.diff:
        from rt4chart.pipeline.cli import report as report_cli

        report_cli.run(argparse.Namespace(
            out_dir=config.run, traces=None, compare=config.baseline, compare_traces=None,
            out=config.diff, max_traces=200, title="rt4chart gate: claim-level comparison"))
        print(f"claim-level diff: {config.diff}")
    elif config.baseline:
        print(f"claim-level diff: rt4chart report {config.run} --compare {config.baseline} "
              "--out diff.html")


def run(args: argparse.Namespace) -> int:
    """0 within every limit, 1 not (ValueError, FileNotFoundError: usage errors; Refused, a
    ValueError, after writing the JUnit file that names the refusal)."""
    from rt4chart.pipeline.gate.junit import write_junit

    config = from_values(GateConfig, args, run=args.run)
    try:
        checks, lines = evaluate(config)
    except Refused as exc:
        if config.junit:
            write_junit(config.junit, exc.checks)
        print(f"gate: REFUSED ({', '.join(c.limit for c in exc.checks)}: see the error)")
        raise
    for line in lines:
        print(line)
    _write_diff(config)
    if config.junit:
        write_junit(config.junit, checks, diff=config.diff)
    failed = sum(not c.ok for c in checks)
    print(f"gate: {'FAIL' if failed else 'PASS'} ({failed} of {len(checks)} checks failed)")
    return 1 if failed else 0
