"""What the summary says about prompt caching and pruning: from the job's counters and answers.

The cached share of input tokens per judge stage comes from the stages' counters
(`{stage}_cached_tokens` / `{stage}_input_tokens`), per task type from the answers table (each
answer carries its trace's task and the tokens of its calls); the calls `--prune-windows` saved
from `rt4chart:verify_local_pruned`.
"""

from __future__ import annotations

from collections.abc import Iterable

from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.runner import PipelineResult

from rt4chart.transforms.judge_stage import METRICS
from rt4chart.transforms.prune import PRUNED_COUNTER

NO_TASK = "(none)"  # the task group of answers whose trace names no task


def counters(result: PipelineResult) -> dict[str, int]:
    """The job's `rt4chart` counters (committed where the runner commits them)."""
    query = result.metrics().query(MetricsFilter().with_namespace(METRICS))
    out: dict[str, int] = {}
    for counter in query["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        out[counter.key.metric.name] = out.get(counter.key.metric.name, 0) + (value or 0)
    return out


def share(cached: int, total: int) -> float | None:
    return round(cached / total, 4) if total else None


def cached_share_by_stage(values: dict[str, int]) -> dict[str, float | None]:
    """Per judge stage with input tokens: cached / input tokens."""
    stages = sorted(name[: -len("_input_tokens")] for name in values
                    if name.endswith("_input_tokens"))
    return {s: share(values.get(f"{s}_cached_tokens", 0), values[f"{s}_input_tokens"])
            for s in stages if values[f"{s}_input_tokens"]}


def cached_share_by_task(answers: Iterable) -> dict[str, float | None]:
    """Per task type of the answers (rows with task, input and cached tokens)."""
    sums: dict[str, list[int]] = {}
    for a in answers:
        total = sums.setdefault(a.task or NO_TASK, [0, 0])
        total[0] += a.cached_tokens
        total[1] += a.input_tokens
    return {task: share(c, n) for task, (c, n) in sorted(sums.items()) if n}


def counter_total(results: Iterable[PipelineResult], name: str) -> int:
    """A counter of rt4chart's summed over a job's pipeline runs."""
    return sum(counters(result).get(name, 0) for result in results)


def job_figures(results: Iterable[PipelineResult]) -> tuple[dict[str, float | None], int]:
    """(cached share per stage, calls saved by --prune-windows) of a finished job: its one
    pipeline run's counters, or the sum over the runs of a batch in chunks."""
    values: dict[str, int] = {}
    for result in results:
        for name, value in counters(result).items():
            values[name] = values.get(name, 0) + value
    return cached_share_by_stage(values), values.get(PRUNED_COUNTER, 0)
