"""The jobs: `run_audit` (batch) and `run_stream` (streaming), from typed configs and Beam options.

The CLI, `eval` and tests call these; they build the pipeline, run it, show its progress (see
progress.py) and return what the run produced. They print nothing else. What they check and
make ready before a job starts (the judge, its limits and caps, inputs, folders) is in
preflight.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources

import apache_beam as beam
import orjson
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import (
    PipelineOptions,
    StandardOptions,
)
from apache_beam.runners.runner import PipelineResult

from rt4chart.pipeline.results.judge_figures import counter_total, job_figures
from rt4chart.pipeline.results.summary import Summary, summarise
from rt4chart.pipeline.results.trace_lookup import mapping_record
from rt4chart.pipeline.run import dofn_specs, graph
from rt4chart.pipeline.run.cap_rounds import cap_record, run_rounds
from rt4chart.pipeline.run.chunked_audit import audit_runs, record_count
from rt4chart.pipeline.run.config import AuditConfig, StreamConfig
from rt4chart.pipeline.run.judge_probe import negotiate
from rt4chart.pipeline.run.phoenix_fetch import stage_input
from rt4chart.pipeline.run.preflight import (  # UsageError: raised as jobs.UsageError
    UsageError,  # noqa: F401
    check_dataset,
    ensure_bigquery,
    preflight,
    prepare_caps,
    run_info,
    share_limits,
    usage_errors,
    with_confirm_judge,
)
from rt4chart.pipeline.run.progress import PROGRESS_EVERY_S, Reporter, run_with_progress
from rt4chart.pipeline.run.redo_merge import carry_earlier_rows, redoes_into_itself
from rt4chart.pipeline.sources.detect import SPAN_FORMATS
from rt4chart.pipeline.sources.inputs import resolve_inputs
from rt4chart.pipeline.storage.folder_scan import REDO_INPUT, SUMMARY
from rt4chart.pipeline.storage.run_folder import RunFolder
from rt4chart.pipeline.storage.run_lock import FolderLock, new_pipeline, run_temp, run_temp_folder
from rt4chart.pipeline.stream.pubsub_frontend import local_subscription
from rt4chart.schemas.records import RunInfo
from rt4chart.transforms.assemble import NOT_QUERIES
from rt4chart.transforms.common import probability, tally
from rt4chart.transforms.judges.prices import run_warnings

logger = logging.getLogger("rt4chart")
# A record on one line: a CR or LF (each a line break to the reader) outside a JSON string
# is white space, so it becomes a space (JSON strings cannot hold them raw).
ONE_LINE = {ord("\n"): " ", ord("\r"): " "}

NO_ANSWER_JUDGED = ("run failed: no answer could be judged (every answer is incomplete); see the "
                    "answers' `reason`, check the endpoint, model and key")
NOTHING_VALID = ("nothing valid to audit: every record was dead-lettered ({dead} dead "
                 "letters); see the summary's reasons and the dead_letters table")


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


def write_redo_input(traces: list[str], folder: str) -> str:
    """The traces to redo as a JSONL file under FOLDER/_redo/ (one trace a line); its path."""
    path = FileSystems.join(folder.rstrip("/"), *REDO_INPUT.split("/"))
    with FileSystems.create(path) as fh:
        fh.write("".join(raw.translate(ONE_LINE) + "\n" for raw in traces).encode())
    return path


def run_audit(config: AuditConfig, options: PipelineOptions) -> Summary:
    """Run the batch audit to the end; its summary (also written to OUT/summary.json).

    No run destroys data: the run writes to a staging folder inside OUT, swapped in (the
    earlier run's files set aside, then removed) only when the pipeline has succeeded; a run
    refused before it starts leaves OUT as it was, and a run that fails keeps the tables it
    completed (`RunFolder.keep_failed`, see runfolder.py). The Batch API's state stays
    in OUT/_batch_state, outside the staging folder, so that a run cut short can resume. One
    run at a time per local OUT (a lock on the folder), and the process's temporary folders
    live under the staging folder while it runs (runlock.py).

    Raises UsageError before the job starts (nothing written), and what the runner raises when
    the job fails.
    """
    # A run of its own: its progress counts apart from any other audit of the process (the
    # Python API's audits in threads each read their own figures, tally.py).
    with tally.run_scope():
        return _run_in_folder(config, options)


def _run_in_folder(config: AuditConfig, options: PipelineOptions) -> Summary:
    folder = RunFolder(config.out, config.overwrite)
    lock = FolderLock(folder.out)  # one run at a time per OUT, until its files are in
    with usage_errors():
        lock.acquire()
    try:
        try:  # abort after a refusal too: it removes the folder the lock made
            config, run, redo, endpoint = preflight(config, folder, options)
        except BaseException:
            folder.abort()
            raise
        try:
            with run_temp_folder(folder.staging):
                summary = _run_staged(config, run, redo, folder, options, endpoint)
        except BaseException:
            folder.keep_failed()  # what the run completed stays readable and --redo-able
            raise
        folder.commit()  # if OUT changed so that the run cannot go there, it stays in staging
    finally:
        lock.release()
    return summary


@contextlib.contextmanager
def _heap_set_aside() -> Iterator[None]:
    """The objects that exist before a pipeline is built and run (Beam and all else imported:
    some 200,000) kept out of Python's cyclic collector meanwhile, and given back after.

    A full collection walks the oldest generation whole, and the collector starts one each time
    the run's own objects grow that generation by a quarter: in the per-call benchmark
    (tests/bench/bench_call_overhead.py) these walks took about a tenth of the run's CPU. Set
    aside (`gc.freeze`), those objects are still freed by reference counting; only a cycle among
    them waits for `gc.unfreeze` and the next collection. A process that freezes objects of its
    own (a pre-fork server does) keeps its policy: with a frozen heap already, nothing is done,
    since `gc.unfreeze` would give back its objects with the run's.
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextlib.contextmanager
def cli_process_tuning() -> Iterator[None]:
    """What the `rt4chart` command changes in its own process while a command runs, given back
    after, whether it ends or fails: the heap set aside, and Beam's DoFn specs remembered
    (dofn_specs.py). Only the command line enters it (cli/main.py): the process is then
    rt4chart's own. The Python API (api.py) never does, so a host process keeps its collector
    state and Beam's functions as it set them (its other pipelines, its own `gc.freeze`)."""
    with _heap_set_aside(), dofn_specs.memoized():
        yield


def _run_pipelines(staged: AuditConfig, run: RunInfo, options: PipelineOptions,
                   every_s: float, temp: str | None = None) -> list[PipelineResult]:
    """The audit's pipeline run, or one per chunk of a large local input (chunks.py), with one
    progress line over them all (the total counted up front when there are chunks); their
    results. `temp`: the run's temporary folder (runlock.run_temp_folder)."""
    with contextlib.closing(audit_runs(staged, options, temp)) as runs:
        part, chunk = next(runs)
        if chunk is None:  # one run over the whole input
            pipeline = new_pipeline(options, temp)
            graph.build(pipeline, part, run)
            return [run_with_progress(pipeline, every_s=every_s, temp_dir=temp)[0]]
        results = []
        with Reporter(every_s, temp_dir=temp) as reporter:
            if staged.input_format not in SPAN_FORMATS:  # spans: lines are not traces
                reporter.expect(record_count(staged))
            while chunk is not None:
                pipeline = new_pipeline(options, temp)
                graph.build(pipeline, part, run, chunk=chunk)
                try:
                    results.append(pipeline.run())
                    results[-1].wait_until_finish()
                except BaseException as exc:
                    reporter.failed(exc)
                    raise
                part, chunk = next(runs, (None, None))
            reporter.finish()
        return results


def _run_staged(config: AuditConfig, run: RunInfo, redo: list[str], folder: RunFolder,
                options: PipelineOptions, endpoint: dict | None = None) -> Summary:
    """The pipeline, writing its tables and summary.json under the staging folder."""
    config = stage_input(config, folder.staging)  # phoenix-api: its spans fetched here
    inputs = config.inputs
    # streams read once into the staging folder, globs into files (not the output's own)
    files = resolve_inputs(inputs, folder.staging, (folder.out,))
    if redo:
        inputs += (write_redo_input(redo, folder.staging),)
        files += inputs[-1:]
        logger.info("redoing %d trace(s) of %s", len(redo), config.redo)
    staged = dataclasses.replace(config, inputs=files, out=folder.staging)
    logger.info("auditing %s with judge %s (model %s), prompts %s, W=%d O=%d -> %s",
                ", ".join(config.inputs + (("--redo " + config.redo,) if redo else ()) + (
                    () if config.records is None else (f"{len(config.records)} records",))),
                config.judge.name, run.judge_model, run.prompt_hash,
                config.segment.window_size, config.segment.window_overlap, folder.out)
    started = time.monotonic()
    temp = run_temp(folder.staging)
    results = _run_pipelines(staged, run, options, config.progress_every_s, temp)
    rounds = 1
    if staged.stages.caps.max_usd and "Dataflow" not in str(
            options.view_as(StandardOptions).runner):
        rounds = run_rounds(staged, folder.staging, options, lambda part: results.extend(
            _run_pipelines(part, run, options, config.progress_every_s, temp)))
    if redoes_into_itself(config):  # keep the rows of OUT the redo does not replace
        carry_earlier_rows(folder.out, folder.staging, staged, options)
    summary = summarise(folder.staging, time.monotonic() - started, graph.run_keys(config.stages))
    summary.cached_share_by_stage, summary.pruned_calls = job_figures(results)
    summary.not_queries = counter_total(results, NOT_QUERIES)
    summary.spend_cap = cap_record(staged, folder.staging, rounds)
    if summary.skipped:
        logger.warning("spend cap %s reached: %d trace(s) not audited, in the skipped table "
                       "(audit --redo %s audits them)", staged.stages.caps.reason,
                       summary.skipped, folder.out)
    final_inputs = [_final_path(p, folder) for p in inputs]
    _write_summary(dataclasses.replace(config, inputs=tuple(final_inputs)), run, summary,
                   folder.staging, endpoint)
    return summary


def _final_path(path: str, folder: RunFolder) -> str:
    """Where a file written under the staging folder is once the run is swapped in."""
    prefix = folder.staging + "/"
    return folder.out + "/" + path[len(prefix):] if path.startswith(prefix) else path


def _write_summary(config: AuditConfig, run: RunInfo, summary: Summary, folder: str,
                   endpoint: dict | None = None) -> None:
    """summary.json; `endpoint`: what the judge's endpoint was found to accept (probe.py)."""
    record = {"judge": config.judge.name, "judge_model": run.judge_model,
              "judge_endpoint": endpoint, **confirm_record(config.stages.confirm, run),
              "prompt_hash": run.prompt_hash, "window_size": config.segment.window_size,
              "window_overlap": config.segment.window_overlap, "inputs": list(config.inputs),
              "input_format": config.input_format, "spans": mapping_record(config.spans),
              "warnings": run_warnings(config.judge.name, dict(config.judge.options)),
              "probability": probability.record(run.calibration or probability.identity(
                  run.judge_model)),
              "sampling": config.stages.sampling.summary(),
              **summary.__dict__, "unsampled": summary.unsampled,
              "traces_per_second": summary.traces_per_second}
    # Cleaned whole, as the tables are (a custom judge's model name may hold its key).
    record = graph.run_keys(config.stages).redact_document(record)
    with FileSystems.create(FileSystems.join(folder, SUMMARY)) as fh:
        fh.write(orjson.dumps(record, option=orjson.OPT_INDENT_2))


def confirm_record(confirm, run: RunInfo) -> dict:
    """summary.json's record of the confirmation: which judge confirmed, under which model."""
    second = confirm.judge_spec()
    return {"confirm_ent": confirm.enabled,
            "confirm_judge": second.name if second else None,
            "confirm_judge_model": run.confirm.judge_model if run.confirm else None}


def nothing_valid(summary: Summary) -> bool:
    """Whether a run had no valid trace to audit (every record dead-lettered, or none); a run
    that audited nothing because sampling left its traces out, or a spend cap skipped them, is
    not that (they were valid, seen and counted)."""
    return summary.traces == 0 and summary.unsampled == 0 and not summary.skipped


def no_answer_judged_message(summary: Summary) -> str:
    """NO_ANSWER_JUDGED, with the reason most answers give (the server's own, redacted)."""
    if not summary.incomplete_reason:
        return NO_ANSWER_JUDGED
    return f"{NO_ANSWER_JUDGED}; most answers say: {summary.incomplete_reason}"


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
               stop: threading.Event | None = None,
               every_s: float = PROGRESS_EVERY_S) -> StreamRun:
    """Run the streaming audit. A remote (Dataflow) job is submitted and left running; a local
    one runs until it ends or `stop` is set (then it is cancelled; results already written are
    kept), with a progress line every `every_s` (`--progress-every`). `--out` is checked (a
    folder of foreign files is refused, see runfolder.py) but not staged: a stream writes its
    files as it goes, adding to what the folder holds.

    Raises UsageError before the job starts."""
    with tally.run_scope():  # its progress counts apart, as an audit's
        return _stream(config, options, stop, every_s)


def _stream(config: StreamConfig, options: PipelineOptions, stop: threading.Event | None,
            every_s: float) -> StreamRun:
    runner = str(options.view_as(StandardOptions).runner)
    remote = "Dataflow" in runner
    with usage_errors():
        if config.id_attribute and not remote:
            raise ValueError("--id-attribute needs the Dataflow runner (the local runner hangs "
                             "on it); the keyed dedupe runs everywhere")
        if config.out:  # a stream adds its files to a run folder: refuse only foreign files
            RunFolder(config.out, overwrite=True).check()
        check_dataset(config.bigquery)
        spec, endpoint = negotiate(config.stages.judge)  # JudgeUnusable: it stops here
        config = dataclasses.replace(config, stages=dataclasses.replace(config.stages,
                                                                        judge=spec))
        if endpoint:
            logger.info("judge endpoint: %s", orjson.dumps(endpoint["request"]).decode())
        run = run_info(config.stages.judge)
        stages, run = with_confirm_judge(config.stages, run, options)
        config = dataclasses.replace(config, stages=prepare_caps(dataclasses.replace(
            stages, judge=share_limits(config.stages.judge, options)), options))
    if config.bigquery:
        with usage_errors():
            ensure_bigquery(config.bigquery, config.tables)
    logger.info("streaming audit of %s with judge %s (model %s), prompts %s, windows of %d s "
                "-> %s", config.subscription, config.stages.judge.name, run.judge_model,
                run.prompt_hash, config.stages.windowing.size_s,
                ", ".join(x for x in (config.out, config.bigquery) if x))
    if remote:  # Dataflow's ReadFromPubSub acknowledges once its checkpoint is durable
        pipeline = beam.Pipeline(options=options)
        graph.build_stream(pipeline, config, run)
        # A remote job runs on in the service: a launcher must not wait for it.
        result, _ = run_with_progress(pipeline, stop, every_s, streaming=True, detach=True)
        return StreamRun("SUBMITTED", runner, getattr(result, "job_id", lambda: None)())
    return _run_local_stream(config, run, options, stop, runner, every_s)


def _run_local_stream(config: StreamConfig, run: RunInfo, options: PipelineOptions,
                      stop: threading.Event | None, runner: str,
                      every_s: float = PROGRESS_EVERY_S) -> StreamRun:
    """The local runner's stream: messages stay unacknowledged until their rows are written
    (pubsub_frontend.py, pubsub_leases.py)."""
    with local_subscription(config) as local:
        pipeline = beam.Pipeline(options=options)
        graph.build_stream(pipeline, config, run, local=local)
        result, ended = run_with_progress(pipeline, stop, every_s, streaming=True)
        if not ended:
            result.cancel()
            return StreamRun("STOPPED", runner)
        return StreamRun(str(result.state), runner)
