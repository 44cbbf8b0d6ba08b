"""The job runner's progress: totals from Beam counters, lines while a job runs and at its end."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace

import pytest

from rt4chart.pipeline.progress import Progress, wait_with_progress


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
    assert progress == Progress(traces=3, calls=9, errors=1, cost_micro_usd=123_456)
    assert progress.line() == ("progress: 3 traces done, 9 judge calls (1 failed), 0 input / 0 "
                               "cached / 0 output tokens, $0.1235")


def test_lines_while_running_then_a_final_one(caplog):
    result = FakeResult(reads_before_end=3)
    with caplog.at_level(logging.INFO, logger="rt4chart.pipeline.progress"):
        assert wait_with_progress(result, every_s=0) is True
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) >= 3 and lines[-1].endswith("(final)")
    assert not any(line.endswith("(final)") for line in lines[:-1])
    assert lines[0] == ("progress: 1 traces done, 5 judge calls (1 failed), 150 input / 20 "
                        "cached / 7 output tokens, $0.0018")


def test_a_stop_returns_before_the_end_and_a_failure_is_raised(caplog):
    stop = threading.Event()
    stop.set()
    running = FakeResult(reads_before_end=10**9)
    assert wait_with_progress(running, stop, every_s=3600) is False
    failed = FakeResult(reads_before_end=0, error=RuntimeError("worker lost"))
    with pytest.raises(RuntimeError, match="worker lost"):
        wait_with_progress(failed, every_s=3600)
