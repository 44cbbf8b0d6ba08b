"""The worker processes a job's limits are divided by, from Beam's options (no provider): a
judge kind's static share of its rate limits (`JudgeKind.share_limits`) and the spend cap's
share per process. The number of processes:

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
"""

from __future__ import annotations

import os
import re

from apache_beam.options.pipeline_options import (
    DebugOptions,
    DirectOptions,
    PipelineOptions,
    PortableOptions,
    StandardOptions,
    WorkerOptions,
)

from rt4chart.transforms.judges.contract import JudgeSpec

ONE_CONTAINER = "no_use_multiple_sdk_containers"
# vCPUs of the shared-core machine types, whose names carry no count.
SHARED_CORE = {"e2-micro": 2, "e2-small": 2, "e2-medium": 2, "f1-micro": 1, "g1-small": 1}
_CUSTOM = re.compile(r"(?:^|-)custom-(\d+)-\d+")
_SHAPE = re.compile(r"^[a-z][a-z0-9]*-[a-z]+-(\d+)(?:$|-)")
# Dataflow's default machine types: batch n1-standard-1; streaming n1-standard-2 with Streaming
# Engine, n1-standard-4 without (the larger is assumed, so the share never exceeds the total).
DEFAULT_VCPUS = {False: 1, True: 4}


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


def share_limits(spec: JudgeSpec, options: PipelineOptions) -> JudgeSpec:
    """The judge's spec with this worker process's share of the job's limits, as its kind
    shares them (contract.JudgeKind.share_limits); ValueError when the share cannot be
    bounded."""
    return spec.kind().share_limits(spec, options)
