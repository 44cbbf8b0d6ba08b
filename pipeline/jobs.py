"""The jobs: `run_audit` (batch) and `run_stream` (streaming), from typed configs and Beam options.

The CLI, `eval` and tests call these; they build the pipeline, run it, log its progress (read
from Beam metrics, see progress.py) and return what the run produced. They print nothing.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from dataclasses import dataclass
from importlib import resources

import apache_beam as beam
import orjson
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import (
    DirectOptions,
    PipelineOptions,
    StandardOptions,
)

from rt4chart import prompts
from rt4chart.pipeline import graph
from rt4chart.pipeline.config import AuditConfig, StreamConfig
from rt4chart.pipeline.io import prepare_output
from rt4chart.pipeline.progress import wait_with_progress
from rt4chart.pipeline.summary import Summary, read_table, summarise
from rt4chart.schemas.records import RunInfo
from rt4chart.transforms.aggregate import REDO_STAGE
from rt4chart.transforms.judges.base import JudgeSpec, judge_model

logger = logging.getLogger("rt4chart")

NO_ANSWER_JUDGED = ("run failed: no answer could be judged (every answer is incomplete); see the "
                    "answers' `reason`, check the endpoint, model and key")


def example_traces() -> str:
    """Path of the bundled example traces."""
    return str(resources.files("rt4chart.pipeline").joinpath("examples", "traces.jsonl"))


def beam_options(beam_args: list[str], streaming: bool = False) -> PipelineOptions:
    """Beam's options from its command-line arguments, with a local runner picked by default."""
    options = PipelineOptions(beam_args + (["--streaming"] if streaming else []),
                              save_main_session=False)
    std = options.view_as(StandardOptions)
    if std.runner is None:
        # Local runs pick an in-process runner: the default would first try to download Prism
        # (network traffic beyond loopback; it fails offline). Batch on the portable FnApiRunner,
        # streaming (Pub/Sub, processing-time timers) on the bundle-based direct runner.
        std.runner = "BundleBasedDirectRunner" if std.streaming else "FnApiRunner"
    return options


def share_limits(spec: JudgeSpec, options: PipelineOptions) -> JudgeSpec:
    """Split the openai judge's rpm/tpm over local worker processes, so that the limits hold in
    total: each process of `--direct_running_mode multi_processing --direct_num_workers N` gets
    1/N (unless `rate_share` is given)."""
    direct = options.view_as(DirectOptions)
    processes = direct.direct_num_workers or 1
    if spec.name != "openai" or direct.direct_running_mode != "multi_processing" or (
            processes <= 1 or "rate_share" in dict(spec.options)):
        return spec
    logger.info("rate limits shared by %d worker processes: each budgets 1/%d", processes,
                processes)
    return JudgeSpec.of(spec.name, {**dict(spec.options), "rate_share": str(processes)})


def ensure_bigquery(spec: str) -> None:
    """Create the dataset and the tables (partitioned, clustered) before the job starts: Beam
    creates missing tables but not a missing dataset, nor the partitioning of a table."""
    from google.cloud import bigquery

    from rt4chart.pipeline.bigquery import ensure_tables, parse_dataset

    project, dataset = parse_dataset(spec)
    ensure_tables(bigquery.Client(project=project), project, dataset,
                  os.environ.get("RT4CHART_BIGQUERY_LOCATION"))


def check_reuse_source(run_dir: str, out: str) -> None:
    if os.path.abspath(run_dir.rstrip("/")) == os.path.abspath(out.rstrip("/")):
        raise ValueError("--reuse must name an earlier run's directory, not --out (its tables "
                         "are replaced by this run)")
    cached = FileSystems.match([FileSystems.join(run_dir.rstrip("/"), "judge_cache",
                                                 "*.parquet")])[0].metadata_list
    if not cached:
        raise ValueError(f"{run_dir} has no judge_cache table to reuse")


def redo_input(run_dir: str, out: str) -> str:
    """The traces of an earlier run's incomplete answers, as a JSONL file under OUT/_redo/."""
    rows = read_table(run_dir, "dead_letters").to_pylist()
    latest: dict[str, str] = {}
    for row in rows:
        if row["stage"] == REDO_STAGE:
            latest[row["trace_id"]] = row["raw"]
    if not latest:
        raise ValueError(f"{run_dir} has no incomplete answer to redo")
    path = FileSystems.join(out.rstrip("/"), "_redo", "traces.jsonl")
    with FileSystems.create(path) as fh:
        fh.write("".join(raw.replace("\n", " ") + "\n" for raw in latest.values()).encode())
    logger.info("redoing %d trace(s) of %s", len(latest), run_dir)
    return path


def run_info(spec: JudgeSpec) -> RunInfo:
    """What every output row records of the run; builds the judge once, so that a bad judge or
    a missing key fails before Beam starts."""
    return RunInfo(judge_model(spec.build(), spec), prompts.prompt_hash())


def _prepare_audit(config: AuditConfig, options: PipelineOptions) -> AuditConfig:
    """The config as the job runs it (redo input added, rate limits shared), its output ready."""
    if config.redo:
        prepare_output(config.out, config.overwrite)
        config = dataclasses.replace(
            config, inputs=config.inputs + (redo_input(config.redo, config.out),))
    config = dataclasses.replace(config, judge=share_limits(config.judge, options))
    if config.reuse:
        check_reuse_source(config.reuse, config.out)
    prepare_output(config.out, config.overwrite)
    if config.bigquery:
        ensure_bigquery(config.bigquery)
    return config


def run_audit(config: AuditConfig, options: PipelineOptions) -> Summary:
    """Run the batch audit to the end; its summary (also written to OUT/summary.json).

    Raises ValueError or FileExistsError on a usage error, before the job starts, and what the
    runner raises when the job fails.
    """
    run = run_info(config.judge)
    config = _prepare_audit(config, options)
    logger.info("auditing %s with judge %s (model %s), prompts %s, W=%d O=%d -> %s",
                ", ".join(config.inputs), config.judge.name, run.judge_model, run.prompt_hash,
                config.segment.window_size, config.segment.window_overlap, config.out)
    started = time.monotonic()
    pipeline = beam.Pipeline(options=options)
    graph.build(pipeline, config, run)
    wait_with_progress(pipeline.run())
    summary = summarise(config.out, time.monotonic() - started)
    _write_summary(config, run, summary)
    return summary


def _write_summary(config: AuditConfig, run: RunInfo, summary: Summary) -> None:
    record = {"judge": config.judge.name, "judge_model": run.judge_model,
              "prompt_hash": run.prompt_hash, "window_size": config.segment.window_size,
              "window_overlap": config.segment.window_overlap, "inputs": list(config.inputs),
              **summary.__dict__, "traces_per_second": summary.traces_per_second}
    with FileSystems.create(FileSystems.join(config.out, "summary.json")) as fh:
        fh.write(orjson.dumps(record, option=orjson.OPT_INDENT_2))


def no_answer_judged(summary: Summary) -> bool:
    """Whether a run judged none of its answers (every one incomplete): a failed run."""
    return bool(summary.traces) and summary.incomplete == summary.traces


@dataclass(frozen=True)
class StreamRun:
    """How a streaming job ended: `state` is the runner's final state, or SUBMITTED (a remote
    job left running, `job_id`) or STOPPED (cancelled on `stop`)."""

    state: str
    runner: str
    job_id: str | None = None

    @property
    def ok(self) -> bool:
        return self.state in ("SUBMITTED", "STOPPED") or self.state.endswith("DONE")


def run_stream(config: StreamConfig, options: PipelineOptions,
               stop: threading.Event | None = None) -> StreamRun:
    """Run the streaming audit. A remote (Dataflow) job is submitted and left running; a local
    one runs until it ends or `stop` is set (then it is cancelled; results already written are
    kept)."""
    runner = str(options.view_as(StandardOptions).runner)
    remote = "Dataflow" in runner
    if config.id_attribute and not remote:
        raise ValueError("--id-attribute needs the Dataflow runner (the local runner hangs on "
                         "it); the keyed dedupe runs everywhere")
    run = run_info(config.stages.judge)
    if config.bigquery:
        ensure_bigquery(config.bigquery)
    logger.info("streaming audit of %s with judge %s (model %s), prompts %s, windows of %d s "
                "-> %s", config.subscription, config.stages.judge.name, run.judge_model,
                run.prompt_hash, config.stages.windowing.size_s,
                ", ".join(x for x in (config.out, config.bigquery) if x))
    pipeline = beam.Pipeline(options=options)
    graph.build_stream(pipeline, config, run)
    result = pipeline.run()
    if remote:  # the job runs on in the service; a launcher must not wait for it
        return StreamRun("SUBMITTED", runner, getattr(result, "job_id", lambda: None)())
    if not wait_with_progress(result, stop):
        result.cancel()
        return StreamRun("STOPPED", runner)
    return StreamRun(str(result.state), runner)
