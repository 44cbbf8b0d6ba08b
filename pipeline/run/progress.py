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
The figures themselves and the graph's counting steps are `progress_figures.py`'s.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sys
import tempfile
import threading
import time
from typing import IO

from apache_beam.runners.runner import PipelineResult

from rt4chart.pipeline.run.progress_figures import Progress, clock, read_progress
from rt4chart.transforms.common import tally
from rt4chart.transforms.judges import runtime

# The progress lines' logger keeps the name users filter them by (the module moved into run/).
logger = logging.getLogger("rt4chart.pipeline.progress")

PROGRESS_EVERY_S = 10.0
FIRST_POLL_S = 0.5  # how often the figures are looked at until the first line


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
