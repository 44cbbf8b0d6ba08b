"""One meaning for `--rpm`/`--tpm`: the whole job's limits, held in one of two ways.

`--rate-limiter static` (the default) gives every worker process a fixed share: the totals
divided by the number of worker processes the job can ever have, so that all of them together
can never exceed the totals. The number of processes:

- locally: 1, or `--direct_num_workers` with `--direct_running_mode multi_processing` (threads
  of one process share one limiter);
- on Dataflow: workers x SDK processes per worker, where workers is `--max_num_workers` (or
  `--num_workers` with `--autoscaling_algorithm NONE`; without either the job could grow to any
  size, and the share is refused), and the SDK processes per worker are 1 with
  `--experiments=no_use_multiple_sdk_containers`, else the machine type's vCPUs (Dataflow starts
  one SDK process per vCPU; `--sdk_worker_parallelism` if larger). Without `--machine_type`,
  Dataflow's default: 1 vCPU in batch (n1-standard-1), 4 in streaming (n1-standard-4, the
  larger of its two streaming defaults). `--number_of_worker_harness_threads` sets threads per
  process, which share their process's limiter: it does not change the count.
- an explicit `--judge-option rate_share=N` wins (N = the job's worker processes).

`--rate-limiter envoy` asks one Envoy rate-limit service (`--rate-limit-service HOST:PORT`,
deployed by `infra/ratelimit/`) before each call, so the totals hold however many workers run;
see :mod:`.envoy_limiter`. Either way the limits are logged when the job starts.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Callable
from typing import Any

from apache_beam.options.pipeline_options import (
    DebugOptions,
    DirectOptions,
    PipelineOptions,
    PortableOptions,
    StandardOptions,
    WorkerOptions,
)

from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.openai.config import judge_options
from rt4chart.transforms.judges.openai.ratelimit import RateLimiter

logger = logging.getLogger("rt4chart")

LIMITERS = ("static", "envoy")
ONE_CONTAINER = "no_use_multiple_sdk_containers"
# vCPUs of the shared-core machine types, whose names carry no count.
SHARED_CORE = {"e2-micro": 2, "e2-small": 2, "e2-medium": 2, "f1-micro": 1, "g1-small": 1}
_CUSTOM = re.compile(r"(?:^|-)custom-(\d+)-\d+")
_SHAPE = re.compile(r"^[a-z][a-z0-9]*-[a-z]+-(\d+)(?:$|-)")
# Dataflow's default machine types: batch n1-standard-1; streaming n1-standard-2 with Streaming
# Engine, n1-standard-4 without (the larger is assumed, so the share never exceeds the total).
DEFAULT_VCPUS = {False: 1, True: 4}


def limiter_factory(config: Any) -> Callable[[], RateLimiter]:
    """What builds the openai judge's limiter for its config (validated now, built in the
    worker's event loop): the process's share of the totals, or the job-wide Envoy limiter.
    ValueError on a bad setting."""
    if config.rate_limiter not in LIMITERS:
        raise ValueError(f"rate_limiter must be {' or '.join(LIMITERS)}, "
                         f"got {config.rate_limiter!r}")
    if config.rate_limiter == "static":
        return functools.partial(RateLimiter, config.rpm / config.rate_share,
                                 config.tpm / config.rate_share)
    if not config.rate_limit_service:
        raise ValueError("--rate-limiter envoy needs --rate-limit-service HOST:PORT")
    from rt4chart.transforms.judges.openai.envoy_limiter import EnvoyLimiter, EnvoySettings

    settings = EnvoySettings(config.rate_limit_service, config.rate_limit_domain)
    return functools.partial(EnvoyLimiter, config.rpm, config.tpm, settings,
                             config.max_concurrency)


def machine_vcpus(machine_type: str) -> int:
    """vCPUs of a Compute Engine machine type (n2-standard-2: 2, custom-4-16384: 4)."""
    name = machine_type.rsplit("/", 1)[-1]
    if name in SHARED_CORE:
        return SHARED_CORE[name]
    match = _CUSTOM.search(name) or _SHAPE.match(name)
    if not match:
        raise ValueError(f"cannot tell the vCPUs of machine type {machine_type!r}: give "
                         "--judge-option rate_share=N (the job's worker processes in all) or "
                         "use --rate-limiter envoy")
    return int(match.group(1))


def dataflow_processes(options: PipelineOptions) -> tuple[int, str]:
    """The most SDK processes a Dataflow job can run, and how that was worked out."""
    workers = options.view_as(WorkerOptions)
    count = workers.max_num_workers or (
        workers.num_workers if workers.autoscaling_algorithm == "NONE" else None)
    if not count:
        raise ValueError("--rate-limiter static on Dataflow needs --max_num_workers (each "
                         "worker process budgets its share of --rpm/--tpm, so the job's size "
                         "must be bounded), or use --rate-limiter envoy")
    if ONE_CONTAINER in (options.view_as(DebugOptions).experiments or []):
        return count, f"{count} workers x 1 SDK process ({ONE_CONTAINER})"
    streaming = bool(options.view_as(StandardOptions).streaming)
    vcpus = (machine_vcpus(workers.machine_type) if workers.machine_type
             else DEFAULT_VCPUS[streaming])
    parallelism = int(options.view_as(PortableOptions).sdk_worker_parallelism or 1)
    per_worker = max(vcpus, parallelism)
    machine = workers.machine_type or "Dataflow's default machine type"
    return count * per_worker, (f"{count} workers x {per_worker} SDK processes, one per vCPU "
                                f"of {machine}")


def worker_processes(options: PipelineOptions) -> tuple[int, str]:
    """The worker processes a job's limits are shared by, and how that was worked out."""
    if "Dataflow" in str(options.view_as(StandardOptions).runner or ""):
        return dataflow_processes(options)
    direct = options.view_as(DirectOptions)
    if direct.direct_running_mode == "multi_processing":
        count = direct.direct_num_workers or os.cpu_count() or 1
        return count, f"--direct_num_workers {count}, multi_processing"
    return 1, "one local process"


def _num(value: float) -> str:
    return f"{round(value, 1):.12g}"


def share_limits(spec: JudgeSpec, options: PipelineOptions) -> JudgeSpec:
    """The judge's spec with this worker process's share of the job's limits, as its kind
    shares them (contract.JudgeKind.share_limits); ValueError when the share cannot be
    bounded."""
    return spec.kind().share_limits(spec, options)


def share_rate_limits(spec: JudgeSpec, options: PipelineOptions) -> JudgeSpec:
    """An openai judge's spec with its static share of `--rpm`/`--tpm` (`rate_share`: the
    job's worker processes), and the limits logged; with the envoy limiter, as it is.
    ValueError when the share cannot be bounded."""
    given = dict(spec.options)
    config, _ = judge_options(given)
    job = f"{_num(config.rpm)} rpm / {_num(config.tpm)} tpm for the job"
    if config.rate_limiter == "envoy":
        logger.info("rate limits: %s, held by the Envoy rate-limit service at %s (domain %s)",
                    job, config.rate_limit_service, config.rate_limit_domain)
        return spec
    if "rate_share" in given:
        processes, how = config.rate_share, "rate_share as given"
    else:
        processes, how = worker_processes(options)
    logger.info("rate limits: %s, %s rpm / %s tpm per process (%d processes: %s)", job,
                _num(config.rpm / processes), _num(config.tpm / processes), processes, how)
    if processes <= 1 or "rate_share" in given:
        return spec
    return JudgeSpec.of(spec.name, {**given, "rate_share": str(processes)})
