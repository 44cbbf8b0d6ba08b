"""Launching on a remote runner (Dataflow): what is refused at start, and `--dry_run`'s plan.

A Dataflow job's workers are other machines: they cannot read this machine's files, cannot
write to its disk, do not have rt4chart installed unless the job ships it, and do not have the
launching shell's environment (so not its ``OPENAI_API_KEY``). Each of these fails late on
Dataflow (a worker error minutes into the job, or tables written nowhere), so `check_remote`
refuses the launch at once (exit 2) with what to use instead.

`--dry_run` (Beam's option; any runner) validates the options, prints the plan (inputs,
stages, workers, limits per worker process, the judge, and a cost estimate when the inputs are
on this machine) and exits 0 without running anything, reading any remote file or calling the
judge. It builds the audit's pipeline graph (as a launch would) without running it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import (
    GoogleCloudOptions,
    PipelineOptions,
    SetupOptions,
    StandardOptions,
    TestOptions,
    WorkerOptions,
)

from rt4chart.pipeline.sources.records import STDIN_NAMES
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.limits.workers import worker_processes

logger = logging.getLogger("rt4chart")

REMOTE_SCHEMES = ("gs",)


def is_remote(options: PipelineOptions) -> bool:
    """Whether the job runs on Dataflow (its workers are other machines)."""
    return "Dataflow" in str(options.view_as(StandardOptions).runner or "")


def is_dry_run(options: PipelineOptions) -> bool:
    value = options.view_as(TestOptions).dry_run
    return value is True or str(value).lower() in ("true", "1", "yes")


def _local(path: str) -> bool:
    return FileSystems.get_scheme(path) is None


def _ships_package(options: PipelineOptions) -> bool:
    setup = options.view_as(SetupOptions)
    return bool(setup.extra_packages or setup.setup_file or setup.requirements_file
                or options.view_as(WorkerOptions).sdk_container_image)


def key_problem(spec: JudgeSpec, options: PipelineOptions) -> str | None:
    """Why the job's workers would have no API key for the judge (None: they will have one, or
    the judge needs none)."""
    key = spec.kind().worker_key(spec)
    if key is None:
        return None
    key_env, from_secret = key
    if from_secret or options.view_as(WorkerOptions).sdk_container_image:
        return None  # read from Secret Manager by every worker (the option or the image)
    return (f"the workers would have no {key_env}: Dataflow workers do not get this shell's "
            "environment. Give --judge-option api_key_secret=projects/PROJECT/secrets/SECRET "
            "(each worker reads it from Secret Manager; the workers' service account needs "
            "roles/secretmanager.secretAccessor), or run with the rt4chart image "
            "(infra/dataflow_backfill.sh passes --sdk_container_image: its entrypoint reads "
            "the secret)")


def remote_problems(inputs: Iterable[str], out: str | None, spec: JudgeSpec,
                    options: PipelineOptions) -> list[str]:
    """Every reason a remote launch would fail on its workers (empty when there is none or the
    runner is local)."""
    if not is_remote(options):
        return []
    problems = []
    local_inputs = [p for p in inputs if p in STDIN_NAMES or _local(p)]
    if local_inputs:
        problems.append(
            f"input {', '.join(local_inputs)} is on this machine, which Dataflow workers cannot "
            "read: copy it to GCS (gsutil cp) and give gs://BUCKET/PATH/*.jsonl or *.parquet")
    if out is not None and _local(out):
        problems.append(
            f"--out {out} is on this machine, where Dataflow workers cannot write: give "
            "gs://BUCKET/audits/RUN (add --bigquery bq:PROJECT:DATASET for BigQuery tables)")
    temp = options.view_as(GoogleCloudOptions).temp_location
    if not temp or _local(temp):
        problems.append("Dataflow needs --temp_location gs://BUCKET/tmp")
    if not _ships_package(options):
        problems.append(
            "the workers would not have rt4chart installed: build it with "
            "`pip wheel --no-deps . -w dist` and pass --extra_package "
            "dist/rt4chart-VERSION-py3-none-any.whl, or run with the rt4chart image "
            "(infra/dataflow_backfill.sh)")
    key = key_problem(spec, options)
    if key:
        problems.append(key)
    return problems


def check_remote(inputs: Iterable[str], out: str | None, spec: JudgeSpec,
                 options: PipelineOptions) -> None:
    """ValueError (a usage error: exit 2) naming every problem of a remote launch."""
    problems = remote_problems(inputs, out, spec, options)
    if problems:
        raise ValueError("DataflowRunner: " + "; ".join(problems))


def plan_lines(what: str, inputs: Iterable[str], out: str | None, stages,
               options: PipelineOptions, extra: Iterable[str] = ()) -> list[str]:
    """The dry run's plan, one fact a line."""
    spec = stages.judge
    standard = options.view_as(StandardOptions)
    runner = str(standard.runner or "the default local runner")
    lines = [f"dry run of `rt4chart {what}`: nothing is read, called or written",
             f"runner: {runner}"]
    if is_remote(options):
        cloud = options.view_as(GoogleCloudOptions)
        lines.append(f"project {cloud.project or '(not set)'}, region "
                     f"{cloud.region or '(not set)'}, temp {cloud.temp_location}")
    inputs = list(inputs)
    if inputs:
        lines.append("inputs: " + ", ".join(inputs))
    if out:
        lines.append(f"out: {out}")
    seg = stages.segment
    lines.append(f"stages: segment (windows of {seg.window_size} sentences, overlap "
                 f"{seg.window_overlap}) -> decompose -> verify_local -> verify_global"
                 + _confirm_step(stages.confirm)
                 + " -> AND-join")
    from rt4chart.pipeline.run.jobs import run_info

    lines.append(f"judge: {spec.name}, model {run_info(spec).judge_model}")
    processes, how = worker_processes(options)  # ValueError: an unbounded job
    lines.append(f"worker processes: {processes} ({how})")
    lines.extend(spec.kind().limit_lines(spec))
    lines.extend(extra)
    return lines


def _limits(config_stages, options: PipelineOptions):
    """The stages with the judge's static share of --rpm/--tpm, as the launch would set it."""
    import dataclasses

    from rt4chart.transforms.judges.limits.workers import share_limits

    return dataclasses.replace(config_stages, judge=share_limits(config_stages.judge, options))


def audit_plan(config, options: PipelineOptions) -> list[str]:
    """The dry-run plan of a batch audit (an AuditConfig)."""
    stages = _limits(config.stages, options)
    extra = []
    if config.bigquery:
        extra.append(f"BigQuery: {config.bigquery}")
    extra.extend(estimate_lines(config, stages))
    extra.append(graph_check(config, options))
    return plan_lines("audit", config.inputs, config.out, stages, options, extra)


def stream_plan(config, options: PipelineOptions) -> list[str]:
    """The dry-run plan of a stream (a StreamConfig)."""
    stages = _limits(config.stages, options)
    extra = [f"subscription: {config.subscription}"]
    if config.bigquery:
        extra.append(f"BigQuery: {config.bigquery}")
    return plan_lines("stream", (), config.out, stages, options, extra)


def estimate_lines(config, stages) -> list[str]:
    """The cost estimate (estimate_run.py, no judge call) when every input is on this machine;
    else how to get one."""
    if any(not _local(p) for p in config.inputs):
        return ["cost estimate: the inputs are remote (a dry run reads nothing): run "
                "`rt4chart audit --estimate` on a local sample of them"]
    from rt4chart.pipeline.run import estimate as estimate_run

    data = estimate_run.estimate(
        config.inputs, stages, batch_api=stages.judge.kind().traits.batch_api,
        alternatives=False, input_format=config.input_format, spans=config.spans,
        max_record_bytes=config.max_record_bytes)
    model, dead, seen = data["model"], data["dead_letters"], data["seen"]
    run = data["runs"]["configured"]
    total = run["total"]
    usd = run["usd"]["configured"]
    return [f"cost estimate: {run['traces']} of {seen} valid traces audited, {dead} dead "
            f"letters; {total['calls']} judge calls, {total['input_tokens']} input / "
            f"{total['output_tokens']} output tokens, "
            + ("USD unknown (no price for " + model + ")" if usd is None
               else f"${usd:.4f} at {model}'s price")
            + " (`--estimate` for the stages and alternatives)"]


def _confirm_step(confirm) -> str:
    """The confirmation step of the dry run's stage line ('' without one)."""
    if not confirm.enabled:
        return ""
    second = confirm.judge_spec()
    return " -> confirm_ent" + (f" (confirming judge {second.name})" if second else "")


def graph_check(config, options: PipelineOptions) -> str:
    """Build the audit's graph, from its records to its sinks, without running it. The input
    step is left out (it lists its files when built, and remote files are not read in a dry
    run), and the graph is built for a local runner: Beam's checks for DataflowRunner reach
    GCS and Google's credentials, which a dry run must not need."""
    import apache_beam as beam

    from rt4chart.pipeline.run import graph
    from rt4chart.pipeline.run.jobs import run_info

    pipeline = beam.Pipeline(runner="DirectRunner", options=options)
    records = pipeline | "Records" >> beam.Create([])
    tables = records | "Audit" >> graph.Audit(config.stages, run_info(config.judge),
                                              write_traces=config.tables.write_traces)
    graph.write_tables(tables.written(), config)
    steps = len(pipeline.to_runner_api().components.transforms)
    name = options.view_as(GoogleCloudOptions).job_name or "(a generated name)"
    return f"job {name}: the audit's graph builds ({steps} transforms); not submitted"
