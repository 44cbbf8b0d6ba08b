"""A running job's progress: traces done of the total, judge calls, tokens, cost and an ETA.

The stages count what they do with counters that are Beam metrics and a live tally at once
(`transforms/common/tally.py`): `rt4chart:traces_read` as records are validated (the total, known
once the inputs are read), `traces_done` per assembled answer, `traces_dead` per record that
ended as a dead letter (so that done reaches the total), and per judge stage `{stage}_calls`,
`_errors`, `_input_tokens`, `_cached_tokens`, `_output_tokens`, `_cost_micro_usd`,
`_cost_unknown`.

A :class:`Reporter` thread shows them every `PROGRESS_EVERY_S` from the moment the job starts
(the local FnApiRunner's `run()` blocks until the job is done) and once at the end: a bar
redrawn in place when stderr is a terminal, plain log lines otherwise. Its figures are, per
counter, the larger of the live tally (the local runners, whose DoFns run in this process or
in local worker processes) and Beam's metrics (the runners that report them during a run:
Dataflow, the bundle-based direct runner; every runner at the end). A stream's lines show the
same figures, with the traces done in the last interval instead of an ETA.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, fields
from typing import IO

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

# The progress lines' logger keeps the name users filter them by (the module moved into run/).
logger = logging.getLogger("rt4chart.pipeline.progress")

PROGRESS_EVERY_S = 10.0
TRACES_DONE = "traces_done"
TRACES_READ = "traces_read"
TRACES_DEAD = "traces_dead"
CALLS_EXPECTED = "calls_expected"  # not `expected_calls`: names ending `_calls` are calls made
TRACES_ESTIMATED = "traces_estimated"
REUSED = "reused"  # `{stage}_reused`: calls answered from --reuse's cache, not made
SAMPLING_COUNTERS = ("seen", "sampled", "always")  # traces_seen, ... (transforms/sampling.py)
BAR_WIDTH = 24
FIRST_POLL_S = 0.5  # how often the figures are looked at until the first line



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
        except Exception as exc:  # noqa: BLE001 - an estimate never fails a trace
            logger.debug("no expected calls for trace %s: %s", prepared.trace.trace_id, exc)
            return prepared
        self._calls.inc(calls)
        self._traces.inc()
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


def _is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Reporter:
    """Shows a job's progress every `every_s` from a thread while it runs, and at its end.

    Use as a context around `pipeline.run()`; `watch(result)` once the runner has returned a
    result (its metrics then count too); `finish()` for the final line, or `failed(exc)` when
    the job failed (no final line: the caller prints the error first, then the figures
    attached to the exception as `rt4chart_progress`).
    """

    def __init__(self, every_s: float = PROGRESS_EVERY_S, streaming: bool = False,
                 stream: IO[str] | None = None, temp_dir: str | None = None):
        self._every_s = every_s
        self._temp_dir = temp_dir  # where the tally's folder goes (None: the system's)
        self._streaming = streaming
        self._stream = stream or sys.stderr
        self._tty = _is_tty(self._stream)
        self._result: PipelineResult | None = None
        self._halt = threading.Event()
        self._lock = threading.Lock()
        self._drawn = False
        self._last_done = 0
        self._expected = Progress()
        self._calls_from: float | None = None  # see `_note_calls_start`

    def expect(self, total: int) -> None:
        """About how many records there are to read, when it is known before the runs read
        them (a floor for the total until the end, so that the ETA spans every run)."""
        self._expected = Progress(total=total)

    def __enter__(self) -> Reporter:
        self._folder = tempfile.mkdtemp(prefix="rt4chart-live-", dir=self._temp_dir)
        # This process's tally, held while the job runs: its in-process stages count there.
        self._runtime = runtime.acquire(runtime.runtime_handle())
        self._recording = tally.recording(self._folder, self._runtime.tally)
        self._tally = self._recording.__enter__()
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="rt4chart-progress",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()
        self._recording.__exit__(None, None, None)
        self._runtime.tally.forget(tally.current_run())  # read: its counts are not kept
        self._runtime = None  # as a job's DoFns do when they end
        shutil.rmtree(self._folder, ignore_errors=True)

    def watch(self, result: PipelineResult) -> None:
        self._result = result

    def current(self) -> Progress:
        """The figures now: the live tally, and Beam's metrics when the runner has them."""
        progress = Progress.of(self._tally.snapshot()).merged(self._expected)
        if self._result is not None:
            try:
                progress = progress.merged(read_progress(self._result))
            except Exception as exc:  # noqa: BLE001 - progress never fails a run
                # Mid-run, a runner may not have metrics yet (or be updating them as we read).
                logger.debug("no progress figures from the runner: %s", exc)
        return progress

    def _loop(self) -> None:
        # The first line as soon as it can give an ETA (the expected calls known and a call
        # ended: seconds into a run), at the latest after `every_s`; then every `every_s`.
        due = self._started + self._every_s
        while not self._halt.wait(min(FIRST_POLL_S, max(0.0, due - time.monotonic()))):
            progress = self.current()
            self._note_calls_start(progress)
            ready = not self._streaming and progress.expected and progress.calls_done
            if time.monotonic() < due and not ready:
                continue
            self._show(progress, final=False)
            break
        while not self._halt.wait(self._every_s):
            self._show(self.current(), final=False)

    def _note_calls_start(self, progress: Progress) -> None:
        """When the calls could start: the first moment the expected calls were known (the
        traces are segmented; the judge stages come next). The call rate counts from there;
        from the run's start when calls had already ended by then (when they began is not
        known: the longer time, the later ETA)."""
        if self._calls_from is None and progress.expected:
            self._calls_from = self._started if progress.calls_done else time.monotonic()

    def _stop(self) -> None:
        self._halt.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _tail(self, progress: Progress, final: bool) -> str:
        elapsed = time.monotonic() - self._started
        if self._streaming:
            new, self._last_done = progress.done - self._last_done, progress.done
            return f", +{new:,} in the last {clock(self._every_s)}" + (
                " (final)" if final else "")
        if final:
            return f", {clock(elapsed)} (final)"
        self._note_calls_start(progress)
        since = None if self._calls_from is None else time.monotonic() - self._calls_from
        return f", {clock(elapsed)} elapsed, {progress.eta(elapsed, since)}"

    def _show(self, progress: Progress, final: bool) -> None:
        with self._lock:
            tail = self._tail(progress, final)
            if not self._tty:
                logger.info("%s", progress.line(tail, expected=not (final or self._streaming)))
                return
            text = progress.bar(tail)
            self._stream.write(f"\r{text:<100}" + ("\n" if final else ""))
            self._stream.flush()
            self._drawn = not final

    def finish(self) -> Progress:
        """Stop the periodic lines and show the final one; the final figures."""
        self._stop()
        self._expected = Progress()  # the end: what was read, not what was expected
        progress = self.current()
        self._show(progress, final=True)
        if self._tty:  # the bar was redrawn in place: the logs keep the final line as well
            logger.info("%s", progress.line(self._tail(progress, final=True)))
        return progress

    def failed(self, exc: BaseException) -> Progress:
        """Stop the periodic lines; the figures so far, attached to `exc`."""
        self._stop()
        progress = self.current()
        with self._lock:
            if self._drawn:
                self._stream.write("\n")
                self._drawn = False
        with contextlib.suppress(AttributeError, TypeError):
            exc.rt4chart_progress = progress  # type: ignore[attr-defined]
        return progress


def wait_with_progress(result: PipelineResult, stop: threading.Event | None = None,
                       every_s: float = PROGRESS_EVERY_S, reporter: Reporter | None = None) -> bool:
    """Wait for the job, showing its progress every `every_s` while it runs, then a final line.

    Returns False if `stop` was set before the job ended (the caller cancels it), True when it
    ended; raises what `wait_until_finish` raised (a failed job, its figures attached).
    """
    if reporter is None:
        own = Reporter(every_s)
        own.watch(result)  # before its first line: a line never misses the job's figures
        with own:
            return wait_with_progress(result, stop, reporter=own)
    reporter.watch(result)
    stop = stop or threading.Event()
    failure: list[BaseException] = []

    def wait() -> None:
        try:
            result.wait_until_finish()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            failure.append(exc)

    waiter = threading.Thread(target=wait, name="rt4chart-wait", daemon=True)
    waiter.start()
    while waiter.is_alive() and not stop.wait(0.2):
        pass
    if failure:
        reporter.failed(failure[0])
        raise failure[0]
    reporter.finish()
    return not waiter.is_alive()


def run_with_progress(pipeline, stop: threading.Event | None = None,
                      every_s: float = PROGRESS_EVERY_S, streaming: bool = False,
                      detach: bool = False, temp_dir: str | None = None
                      ) -> tuple[PipelineResult, bool]:
    """Run `pipeline` with its progress shown from the start; (result, whether it ended).

    `detach`: return once the runner has the job (a remote stream), without waiting.
    `temp_dir`: where the progress tally's folder goes (a run's temporary folder).
    Raises what the run raised, its figures so far attached as `rt4chart_progress`.
    """
    with Reporter(every_s, streaming, temp_dir=temp_dir) as reporter:
        try:
            result = pipeline.run()
        except BaseException as exc:
            reporter.failed(exc)
            raise
        if detach:
            return result, False
        return result, wait_with_progress(result, stop, reporter=reporter)
