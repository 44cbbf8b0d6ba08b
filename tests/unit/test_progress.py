"""The job runner's progress: totals from Beam counters and the live tally, lines while a job
runs and at its end, a bar on a terminal, the figures of a failed run."""

from __future__ import annotations

import io
import logging
import os
import pickle
import re
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rt4chart.pipeline.run.progress import Reporter, run_with_progress, wait_with_progress
from rt4chart.pipeline.run.progress_figures import DeadLetterRows, Progress, clock
from rt4chart.schemas.records import DeadLetter
from rt4chart.transforms.aggregate import REDO_STAGE
from rt4chart.transforms.common import tally
from rt4chart.transforms.judges import runtime


def _counter(name: str, committed: int | None, attempted: int):
    key = SimpleNamespace(metric=SimpleNamespace(name=name))
    return SimpleNamespace(key=key, committed=committed, attempted=attempted)


class FakeResult:
    """A running job: it ends after its metrics were read `reads_before_end` times, then fails
    if told to; its counters grow with each read."""

    def __init__(self, reads_before_end: int, error: Exception | None = None):
        self._reads = 0
        self._end = reads_before_end
        self._ended = threading.Event()
        if reads_before_end <= 0:
            self._ended.set()
        self._error = error

    def wait_until_finish(self):
        self._ended.wait()
        if self._error:
            raise self._error

    def metrics(self):
        return self

    def query(self, _filter):
        self._reads += 1
        if self._reads >= self._end:
            self._ended.set()
        n = self._reads
        return {"counters": [
            _counter("traces_done", n, n),
            _counter("decompose_calls", 2 * n, 2 * n),
            _counter("verify_local_calls", None, 3 * n),  # a runner without committed values
            _counter("verify_local_errors", 1, 1),
            _counter("decompose_input_tokens", 100, 100),
            _counter("verify_local_input_tokens", 50, 50),
            _counter("verify_local_cached_tokens", 20, 20),
            _counter("verify_local_output_tokens", 7, 7),
            _counter("decompose_cost_micro_usd", 1_500, 1_500),
            _counter("verify_local_cost_micro_usd", 250, 250),
            _counter("decompose_reused", 4, 4), _counter("late_rates", 9, 9),
        ]}


def test_totals_sum_the_judge_stages_and_skip_other_counters():
    progress = Progress.of({"traces_done": 3, "decompose_calls": 4, "verify_global_calls": 5,
                            "verify_local_errors": 1, "decompose_cost_micro_usd": 123_456,
                            "decompose_reused": 7, "alerts": 2})
    assert progress == Progress(traces=3, calls=9, errors=1, cost_micro_usd=123_456, reused=7)
    assert progress.line() == ("progress: 3 traces done, 9 judge calls (1 failed), 0 input / 0 "
                               "cached / 0 output tokens, $0.1235")
    known = Progress.of({"traces_read": 1200, "traces_done": 998, "traces_dead": 2,
                         "decompose_input_tokens": 1_234_567})
    assert known.done == 1000 and known.total == 1200
    assert known.line(", ETA 1s") == (
        "progress: 1,000/1,200 traces done (2 dead letters), 0 judge calls (0 failed), "
        "1,234,567 input / 0 cached / 0 output tokens, $0.0000, ETA 1s")


def test_without_expected_calls_the_eta_goes_by_traces_and_says_when_it_cannot():
    assert Progress(traces=25, total=100).eta(30.0) == "ETA 1:30"
    assert Progress(total=100).eta(30.0) == "ETA unknown until a trace is estimated or done"
    assert Progress(traces=90, dead=10, total=100).eta(30.0) == "ETA 0s"
    assert Progress(traces=3).eta(30.0).startswith("ETA unknown")  # total not known


def test_merging_takes_the_larger_figure():
    assert (clock(5), clock(125), clock(3725)) == ("5s", "2:05", "1:02:05")
    live, metrics = Progress(traces=2, calls=50, total=10), Progress(traces=4, calls=20)
    assert live.merged(metrics) == Progress(traces=4, calls=50, total=10)


def test_lines_while_running_then_a_final_one(caplog):
    result = FakeResult(reads_before_end=3)
    with caplog.at_level(logging.INFO, logger="rt4chart.pipeline.progress"):
        assert wait_with_progress(result, every_s=0) is True
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) >= 3 and lines[-1].endswith("(final)")
    assert not any(line.endswith("(final)") for line in lines[:-1])
    assert lines[0].startswith("progress: 1 traces done, 5 judge calls (1 failed), 150 input / "
                               "20 cached / 7 output tokens, $0.0018, ")


def test_a_stop_returns_before_the_end_and_a_failure_is_raised(caplog):
    stop = threading.Event()
    stop.set()
    running = FakeResult(reads_before_end=10**9)
    assert wait_with_progress(running, stop, every_s=3600) is False
    failed = FakeResult(reads_before_end=0, error=RuntimeError("worker lost"))
    with pytest.raises(RuntimeError, match="worker lost") as raised:
        wait_with_progress(failed, every_s=3600)
    assert raised.value.rt4chart_progress.calls == 5  # the figures when it failed


class _Done:
    """A finished job whose runner reports no metrics (the live tally has the figures)."""

    def wait_until_finish(self):
        return "DONE"

    def metrics(self):
        return self

    def query(self, _filter):
        return {"counters": []}


class _BlockingPipeline:
    """A local batch job: `run()` blocks until the end, its DoFns count in this process."""

    def __init__(self, lines: list[str]):
        self._lines = lines

    def run(self):
        runtime.process_tally().add("traces_read", 4)
        runtime.process_tally().add("decompose_calls", 2)
        deadline = time.monotonic() + 30
        while not any("0/4 traces done" in line for line in self._lines):
            assert time.monotonic() < deadline, "no progress line while the job ran"
            time.sleep(0.01)
        runtime.process_tally().add("traces_done", 3)
        runtime.process_tally().add("traces_dead", 1)
        return _Done()


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_lines_come_while_a_blocking_run_runs_from_the_live_tally():
    handler = _Lines()
    log = logging.getLogger("rt4chart.pipeline.progress")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        # An earlier job in this process: not this job's.
        runtime.process_tally().add("traces_read", 7)
        _, ended = run_with_progress(_BlockingPipeline(handler.lines), every_s=0.05)
    finally:
        log.removeHandler(handler)
    assert ended is True
    mid = next(line for line in handler.lines if "0/4 traces done" in line)
    assert mid.startswith("progress: 0/4 traces done, 2 judge calls (0 failed)")
    # no trace done, no trace estimated: no rate to go by, and the line says so
    assert "elapsed, ETA unknown until a trace is estimated or done" in mid
    assert handler.lines[-1].startswith("progress: 4/4 traces done (1 dead letters), 2 judge "
                                        "calls") and handler.lines[-1].endswith("(final)")


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_terminal_gets_a_bar_redrawn_in_place_and_logs_keep_the_final_line(caplog):
    screen = _Terminal()
    with caplog.at_level(logging.INFO, logger="rt4chart.pipeline.progress"):
        with Reporter(every_s=3600, stream=screen) as reporter:
            runtime.process_tally().add("traces_read", 8)
            runtime.process_tally().add("traces_done", 2)
            reporter._show(reporter.current(), final=False)
            runtime.process_tally().add("traces_done", 6)
            reporter.finish()
    drawn = screen.getvalue()
    assert drawn.startswith("\r[######..................] 2/8 traces, 0 calls, 0 tokens")
    assert "\r[########################] 8/8 traces" in drawn and drawn.endswith("\n")
    assert [r.getMessage() for r in caplog.records][-1].startswith("progress: 8/8 traces done")


def test_local_worker_processes_write_their_tally_for_the_launcher(tmp_path):
    own = runtime.process_tally()  # the launcher's process's tally
    with tally.recording(str(tmp_path), own) as live:
        # A counter pickled while the launcher records, as a job's DoFns are when it starts.
        counter = pickle.dumps(runtime.counter("rt4chart", "traces_read"))
        code = ("from rt4chart.transforms.common import tally; import pickle, time; "
                f"c = pickle.loads({counter!r}); "
                "c.inc(3); c.inc(2); time.sleep(3 * tally.FLUSH_EVERY_S)")
        subprocess.run([sys.executable, "-c", code], env=dict(os.environ), check=True,
                       timeout=120)
        own.add("traces_done", 1)  # the launcher's own process counts too
        assert live.snapshot() == {"traces_read": 5, "traces_done": 1}
    assert tally.ENV_DIR not in os.environ


def test_a_dead_letter_counts_as_a_trace_done_unless_it_is_an_answers_redo():
    tally = runtime.process_tally()  # this process's, which the counter counts in
    dead_letter_row = DeadLetterRows()
    before = tally.local().get("traces_dead", 0)
    row = dead_letter_row(DeadLetter("validate", "bad", "{}", "t1", "r"))
    dead_letter_row(DeadLetter(REDO_STAGE, "incomplete", "{}", "t2", "r"))
    assert row.trace_id == "t1" and row.stage == "validate"
    assert tally.local().get("traces_dead", 0) - before == 1


@given(calls=st.integers(1, 10_000), reused=st.integers(0, 1_000),
       more=st.integers(1, 10_000), seconds=st.floats(0.5, 1e5))
def test_the_eta_is_the_calls_left_at_the_rate_calls_have_ended(calls, reused, more, seconds):
    expected = calls + reused + more
    p = Progress(calls=calls, reused=reused, expected_calls=expected, estimated=3, total=3)
    assert p.expected == expected
    # no trace done: the ETA is the expected calls' (a trace-based one would be unknown)
    assert p.eta(10 * seconds, seconds) == f"ETA {clock(seconds * more / (calls + reused))}"


def test_the_calls_eta_says_why_it_is_not_known_rather_than_zero():
    start = Progress(expected_calls=40, estimated=4, total=4)
    assert start.eta(5.0, 1.0) == "ETA unknown until a judge call ends"
    ended = Progress(calls=40, expected_calls=40, estimated=4, total=4)
    assert ended.eta(5.0, 1.0) == ("ETA unknown: the calls expected have ended, the run is "
                                   "finishing")
    past = Progress(calls=45, expected_calls=40, estimated=4, total=4)
    assert past.eta(5.0, 1.0) == "ETA unknown: 5 calls past the 40 expected"


def test_traces_not_yet_started_are_expected_at_the_estimated_calls_per_trace():
    # a run in chunks: 4 of 10 traces estimated (1 dead letter, 1 left out by sampling)
    chunked = Progress(expected_calls=40, estimated=4, total=10, dead=1, seen=9, sampled=8)
    assert chunked.expected == 40 + 10 * (10 - 1 - 1 - 4)
    assert Progress(expected_calls=40, total=10).expected == 0  # no trace estimated: unknown
    line = Progress(calls=8, expected_calls=40, estimated=4, total=4).line(expected=True)
    assert "8 of 40 expected judge calls (0 failed)" in line
    assert "8 judge calls (0 failed)" in Progress(calls=8, expected_calls=40).line()


class _EstimatedPipeline:
    """A local batch job whose traces are estimated and whose first call has ended, then it
    waits (as long calls would) for a progress line."""

    def __init__(self, lines: list[str]):
        self._lines = lines

    def run(self):
        tally = runtime.process_tally()
        for name, n in (("traces_read", 4), ("calls_expected", 40), ("traces_estimated", 4),
                        ("decompose_calls", 10)):
            tally.add(name, n)
        deadline = time.monotonic() + 60  # a guard for a failing run, far below every_s
        while not self._lines:
            assert time.monotonic() < deadline, "no progress line before --progress-every"
            time.sleep(0.01)
        tally.add("traces_done", 4)
        return _Done()


def test_a_logs_first_line_comes_once_an_eta_is_known_and_gives_it_from_the_expected_calls():
    handler = _Lines()
    log = logging.getLogger("rt4chart.pipeline.progress")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:  # every_s an hour: the first line cannot be the periodic one
        _, ended = run_with_progress(_EstimatedPipeline(handler.lines), every_s=3600)
    finally:
        log.removeHandler(handler)
    assert ended is True
    first = handler.lines[0]
    assert first.startswith("progress: 0/4 traces done, 10 of 40 expected judge calls"), first
    assert re.search(r"elapsed, ETA \d", first), first  # no trace done: by the calls
    assert handler.lines[-1].endswith("(final)") and len(handler.lines) == 2


def test_a_terminal_bar_fills_by_the_calls_and_shows_their_eta():
    screen = _Terminal()
    with Reporter(every_s=3600, stream=screen) as reporter:
        for name, n in (("traces_read", 8), ("calls_expected", 80), ("traces_estimated", 8),
                        ("decompose_calls", 20)):
            runtime.process_tally().add(name, n)
        reporter._show(reporter.current(), final=False)
    drawn = screen.getvalue()
    assert drawn.startswith("\r[######..................] 0/8 traces, 20/80 calls"), drawn
    assert re.search(r"elapsed, ETA \d", drawn), drawn


def test_expecting_calls_never_fails_a_trace():
    """ExpectCalls (the graph's step before decomposition) passes every trace on unchanged,
    also one its estimate cannot read: the every-stage test lists it as a step no data makes
    raise."""
    from types import SimpleNamespace

    from rt4chart.pipeline.run.progress_figures import ExpectCalls
    from rt4chart.transforms.estimate import EstimateConfig

    unreadable = SimpleNamespace(trace=SimpleNamespace(trace_id="t"))  # no sentences at all
    assert ExpectCalls(EstimateConfig())(unreadable) is unreadable
