"""A running job's progress, read from its Beam metrics.

The stages count what they do (`rt4chart:traces_done` in AggregateAnswers, and per judge stage
`{stage}_calls`, `_errors`, `_input_tokens`, `_cached_tokens`, `_output_tokens`,
`_cost_micro_usd`); the job runner queries them from the `PipelineResult`. Which runners give
figures during a run:

- FnApiRunner (local batch): none. Its `run()` returns when the job is done, with the metrics
  of every stage; only the final line is logged.
- BundleBasedDirectRunner (local streaming, or batch on request): yes, as bundles commit (a
  stream's bundles are small; in batch one bundle may hold the whole input), so a line is
  logged every `PROGRESS_EVERY_S`. Seen with Beam 2.77: the judge stages' counters arrive, but
  `traces_done`, counted inside the streaming join (a stateful DoFn with a timer), never
  reaches this runner's metrics, so a local stream reports 0 traces done.
- DataflowRunner: yes, through the service's job metrics (`run()` returns once submitted); the
  batch audit waits and logs a line every `PROGRESS_EVERY_S`. A streaming job is not waited for:
  its counters are in the Dataflow console.

Every run logs a final line from the result's committed metrics (attempted where a runner
does not commit them).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.runner import PipelineResult

from rt4chart.transforms.judge_stage import METRICS, USAGE_COUNTERS

logger = logging.getLogger(__name__)

PROGRESS_EVERY_S = 10.0
TRACES_DONE = "traces_done"


@dataclass(frozen=True)
class Progress:
    """Totals of a job's counters, over all judge stages."""

    traces: int = 0
    calls: int = 0
    errors: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    cost_micro_usd: int = 0

    @classmethod
    def of(cls, counters: dict[str, int]) -> Progress:
        """From counter names (`rt4chart` namespace) to values."""
        totals = dict.fromkeys(USAGE_COUNTERS, 0)
        for name, value in counters.items():
            for suffix in USAGE_COUNTERS:
                if name.endswith(f"_{suffix}"):
                    totals[suffix] += value
        return cls(counters.get(TRACES_DONE, 0), **totals)

    def line(self) -> str:
        return (f"progress: {self.traces} traces done, {self.calls} judge calls ({self.errors} "
                f"failed), {self.input_tokens} input / {self.cached_tokens} cached / "
                f"{self.output_tokens} output tokens, ${self.cost_micro_usd / 1e6:.4f}")


def read_progress(result: PipelineResult) -> Progress:
    """The job's progress so far (committed values where the runner has them)."""
    query = result.metrics().query(MetricsFilter().with_namespace(METRICS))
    counters: dict[str, int] = {}
    for counter in query["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        name = counter.key.metric.name
        counters[name] = counters.get(name, 0) + (value or 0)
    return Progress.of(counters)


def _log_progress(result: PipelineResult, final: bool) -> None:
    try:
        progress = read_progress(result)
    except Exception as exc:  # noqa: BLE001 - progress is informative; it never fails a run
        # Mid-run, a runner may not have metrics yet (or be updating them as we read).
        (logger.warning if final else logger.debug)("no progress figures: %s", exc)
        return
    logger.info("%s%s", progress.line(), " (final)" if final else "")


def wait_with_progress(result: PipelineResult, stop: threading.Event | None = None,
                       every_s: float = PROGRESS_EVERY_S) -> bool:
    """Wait for the job, logging its progress every `every_s` while it runs, then a final line.

    Returns False if `stop` was set before the job ended (the caller cancels it), True when it
    ended; raises what `wait_until_finish` raised (a failed job).
    """
    stop = stop or threading.Event()
    failure: list[BaseException] = []

    def wait() -> None:
        try:
            result.wait_until_finish()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            failure.append(exc)

    waiter = threading.Thread(target=wait, name="rt4chart-wait", daemon=True)
    waiter.start()
    last = time.monotonic()
    while waiter.is_alive() and not stop.wait(0.5):
        if time.monotonic() - last >= every_s:
            last = time.monotonic()
            _log_progress(result, final=False)
    _log_progress(result, final=True)
    if failure:
        raise failure[0]
    return not waiter.is_alive()
