"""A running job's figures, as counted: traces read, done and dead letters, judge calls, tokens
and cost per stage, the expected calls, read from the live tally and Beam's metrics
(`Progress`, `read_progress`), and the two counting steps the graph adds (`ExpectCalls`,
`DeadLetterRows`). How they are shown while the job runs is `progress.py`'s (`Reporter`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields

from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.runner import PipelineResult

from rt4chart.pipeline.results.summary import usd
from rt4chart.schemas.records import DeadLetter, PreparedTrace
from rt4chart.schemas.rows import DeadLetterRow
from rt4chart.transforms.aggregate import REDO_STAGE
from rt4chart.transforms.common import tally
from rt4chart.transforms.estimate import EstimateConfig, expected_calls
from rt4chart.transforms.judge_stage import METRICS, USAGE_COUNTERS
from rt4chart.transforms.judges import runtime
from rt4chart.transforms.spend_cap import TRACES_SKIPPED

# The progress lines' logger (`progress.py`'s): the name users filter them by.
logger = logging.getLogger("rt4chart.pipeline.progress")
BAR_WIDTH = 24
TRACES_DONE = "traces_done"
TRACES_READ = "traces_read"
TRACES_DEAD = "traces_dead"
CALLS_EXPECTED = "calls_expected"  # not `expected_calls`: names ending `_calls` are calls made
TRACES_ESTIMATED = "traces_estimated"
REUSED = "reused"  # `{stage}_reused`: calls answered from --reuse's cache, not made
SAMPLING_COUNTERS = ("seen", "sampled", "always")  # traces_seen, ... (transforms/sampling.py)


def dead_letter_row(letter: DeadLetter, dead: tally.LiveCounter) -> DeadLetterRow:
    """The dead letter as a row, counted on `dead` as a trace that has ended (an incomplete
    answer's redo letter is not: its trace ended as an answer)."""
    if letter.stage != REDO_STAGE:
        dead.inc()
    return DeadLetterRow.of(letter)


class ExpectCalls:
    """For `beam.Map` where traces start (after the spend cap's gate): a trace passes through
    unchanged, the judge calls its audit is expected to make counted (`calls_expected`, by
    `transforms.estimate.expected_calls`, what `--estimate` counts) with the traces counted
    so (`traces_estimated`): the ETA's basis from the run's start."""

    def __init__(self, config: EstimateConfig):
        self._config = config
        self._calls = runtime.counter(METRICS, CALLS_EXPECTED)
        self._traces = runtime.counter(METRICS, TRACES_ESTIMATED)

    def __call__(self, prepared: PreparedTrace) -> PreparedTrace:
        try:
            calls = expected_calls(prepared, self._config)
            self._calls.inc(calls)
            self._traces.inc()
        except Exception as exc:  # noqa: BLE001 - an estimate never fails a trace
            logger.debug("no expected calls for trace %s: %s", prepared.trace.trace_id, exc)
        return prepared


class DeadLetterRows:
    """`dead_letter_row` with the job's `traces_dead` counter (made where the pipeline is
    built, carried to the workers), for `beam.Map`."""

    def __init__(self) -> None:
        self._dead = runtime.counter(METRICS, TRACES_DEAD)

    def __call__(self, letter: DeadLetter) -> DeadLetterRow:
        return dead_letter_row(letter, self._dead)


def clock(seconds: float) -> str:
    """`1:02:03`, `2:03` or `5s`."""
    s = max(0, round(seconds))
    h, m = divmod(s, 3600)
    m, s = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}" if m else f"{s}s"


@dataclass(frozen=True)
class Progress:
    """Totals of a job's counters, over all judge stages; `traces`: answers assembled."""

    traces: int = 0
    calls: int = 0
    errors: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    cost_micro_usd: int = 0
    cost_unknown: int = 0  # elements whose calls have no price: the cost is unknown
    total: int = 0  # records read (0: not known yet)
    dead: int = 0  # records that ended as dead letters
    skipped: int = 0  # traces a spend cap did not let start (the skipped table)
    seen: int = 0  # valid traces that reached the sampling decision (transforms/sampling.py)
    sampled: int = 0  # picked by the rate
    always: int = 0  # picked by an always-audit rule
    expected_calls: int = 0  # judge calls the traces estimated so far are expected to make
    estimated: int = 0  # traces whose calls are in `expected_calls`
    reused: int = 0  # calls answered from an earlier run's judge_cache (--reuse), not made

    @classmethod
    def of(cls, counters: dict[str, int]) -> Progress:
        """From counter names (`rt4chart` namespace) to values."""
        totals = dict.fromkeys(USAGE_COUNTERS, 0)
        for name, value in counters.items():
            for suffix in USAGE_COUNTERS:
                if name.endswith(f"_{suffix}"):
                    totals[suffix] += value
        return cls(counters.get(TRACES_DONE, 0), **totals, total=counters.get(TRACES_READ, 0),
                   dead=counters.get(TRACES_DEAD, 0), skipped=counters.get(TRACES_SKIPPED, 0),
                   **{k: counters.get(f"traces_{k}", 0) for k in SAMPLING_COUNTERS},
                   expected_calls=counters.get(CALLS_EXPECTED, 0),
                   estimated=counters.get(TRACES_ESTIMATED, 0),
                   reused=sum(v for k, v in counters.items() if k.endswith(f"_{REUSED}")))

    def merged(self, other: Progress) -> Progress:
        """Per figure, the larger: each source may lag, neither counts what did not happen."""
        return Progress(**{f.name: max(getattr(self, f.name), getattr(other, f.name))
                           for f in fields(self)})

    @property
    def unsampled(self) -> int:
        """Traces left out by sampling: they end at the decision (never less than 0 while the
        counters of one decision are read between their increments)."""
        return max(0, self.seen - self.sampled - self.always)

    @property
    def done(self) -> int:
        return self.traces + self.dead + self.skipped + self.unsampled

    def sampling(self) -> str:
        """`, sampling: seen S, sampled N, always A, audited D` once a trace was left out or
        picked by a rule; empty otherwise."""
        if not (self.unsampled or self.always):
            return ""
        return (f", sampling: seen {self.seen:,}, sampled {self.sampled:,}, always "
                f"{self.always:,}, audited {self.traces:,}")

    @property
    def expected(self) -> int:
        """The judge calls the whole run is expected to make (0: not known yet): those of the
        traces estimated so far, and while traces are still to start (the next chunk of a run
        in chunks), as many per trace for each of them."""
        if not self.estimated:
            return 0
        to_start = self.total - self.dead - self.unsampled - self.skipped - self.estimated
        if to_start <= 0:
            return self.expected_calls
        return self.expected_calls + round(self.expected_calls * to_start / self.estimated)

    @property
    def calls_done(self) -> int:
        """Calls ended toward the expected: made (retries included) or answered from reuse."""
        return self.calls + self.reused

    def eta(self, elapsed_s: float, calls_s: float | None = None) -> str:
        """`ETA 1:05`, or why it is not known yet. From the expected calls at the rate calls
        have ended over `calls_s` (the seconds since the calls could start); without expected
        calls, at the rate traces have been done over `elapsed_s`."""
        if self.expected:
            return self._eta_by_calls(elapsed_s if calls_s is None else calls_s)
        if self.total and self.done >= self.total:
            return "ETA 0s"
        if 0 < self.done < self.total:
            return f"ETA {clock(elapsed_s * (self.total - self.done) / self.done)}"
        return "ETA unknown until a trace is estimated or done"

    def _eta_by_calls(self, calls_s: float) -> str:
        done, expected = self.calls_done, self.expected
        if not done:
            return "ETA unknown until a judge call ends"
        if done == expected:
            return "ETA unknown: the calls expected have ended, the run is finishing"
        if done > expected:  # the model's claims are not the estimate's: more calls
            return f"ETA unknown: {done - expected:,} calls past the {expected:,} expected"
        return f"ETA {clock(calls_s * (expected - done) / done)}"

    @property
    def cost(self) -> str:
        """As the summary says it (`summary.usd`): "cost unknown" once a call has no price."""
        return usd(None if self.cost_unknown else self.cost_micro_usd / 1e6)

    def figures(self, expected: bool = False) -> str:
        """Calls, tokens and cost; `expected`: the calls ended of those expected."""
        calls = f"{self.calls:,} judge calls"
        if expected and self.expected:
            reused = f" + {self.reused:,} reused" if self.reused else ""
            calls = f"{self.calls:,}{reused} of {self.expected:,} expected judge calls"
        return (f"{calls} ({self.errors:,} failed), {self.input_tokens:,} "
                f"input / {self.cached_tokens:,} cached / {self.output_tokens:,} output tokens, "
                f"{self.cost}")

    def line(self, tail: str = "", expected: bool = False) -> str:
        """The log line; `expected`: with the calls expected (a batch run's, while it runs)."""
        traces = f"{self.done:,}/{self.total:,}" if self.total else f"{self.done:,}"
        dead = f" ({self.dead:,} dead letters)" if self.dead else ""
        if self.skipped:
            dead += f" (spend cap reached: {self.skipped:,} skipped)"
        return (f"progress: {traces} traces done{dead}{self.sampling()}, "
                f"{self.figures(expected)}{tail}")

    def bar(self, tail: str) -> str:
        """The terminal's bar, filled by traces done or, when further, by calls expected
        (the local runner ends every trace at once, in its last stage)."""
        share = min(1.0, self.done / self.total) if self.total else 0.0
        if self.expected:
            share = max(share, min(1.0, self.calls_done / self.expected))
        filled = round(share * BAR_WIDTH)
        calls = f"{self.calls_done:,}/{self.expected:,}" if self.expected else f"{self.calls:,}"
        return (f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done:,}/{self.total:,} "
                f"traces, {calls} calls, "
                f"{self.input_tokens + self.output_tokens:,} tokens, {self.cost}{tail}")


def read_progress(result: PipelineResult) -> Progress:
    """The job's progress so far from Beam's metrics (committed values where the runner has
    them)."""
    query = result.metrics().query(MetricsFilter().with_namespace(METRICS))
    counters: dict[str, int] = {}
    for counter in query["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        name = counter.key.metric.name
        counters[name] = counters.get(name, 0) + (value or 0)
    return Progress.of(counters)
