"""What a job checks and makes ready before it starts: nothing is written while these run.

The judge negotiated with its endpoint (judge_probe.py) and built once (a bad judge or a
missing key fails here), the confirming judge likewise, each judge's share of the job's limits
as its kind shares them, the spend cap's prices and share, the output folder, the inputs,
`--reuse`, `--redo`'s sampling, and BigQuery's dataset and tables. An error a user can fix is
a :class:`UsageError` (the CLI's exit code 2). The jobs themselves are in jobs.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Iterator

import orjson
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from rt4chart import prompts
from rt4chart.pipeline.results.earlier import check_reuse_source, is_bigquery, redo_traces
from rt4chart.pipeline.run.config import AuditConfig
from rt4chart.pipeline.run.judge_probe import negotiate
from rt4chart.pipeline.run.phoenix_fetch import check_source
from rt4chart.pipeline.sinks.options import TablesConfig
from rt4chart.pipeline.sources.traces import check_inputs
from rt4chart.pipeline.storage.folder_scan import SUMMARY
from rt4chart.pipeline.storage.run_folder import RunFolder
from rt4chart.schemas.records import RunInfo
from rt4chart.transforms.judges.contract import JudgeSpec, calibration_of, judge_model
from rt4chart.transforms.judges.limits import workers
from rt4chart.transforms.sampling import NO_SAMPLING, SamplingConfig
from rt4chart.transforms.spend_cap import cap_prices, with_ledger_id

logger = logging.getLogger("rt4chart")


class UsageError(Exception):
    """A usage or configuration error found before a job starts (bad option, missing input,
    an output folder a run cannot go to): the CLI's exit code 2. Nothing has been written."""


def share_limits(spec: JudgeSpec, options: PipelineOptions) -> JudgeSpec:
    """The judge's share of the job's limits per worker process, as its kind shares them
    (the openai judge's rpm/tpm: limits/workers.py)."""
    return workers.share_limits(spec, options)


def prepare_caps(stages, options: PipelineOptions):
    """The stages with their spend cap made ready: its prices (ValueError for a model with no
    price: a cap never runs uncapped), this process's share (the job's worker processes, as
    for --rpm/--tpm: limits/workers.worker_processes) and a ledger id of its own."""
    caps = stages.caps
    if not caps.enabled:
        return stages
    prices = cap_prices(stages.judge.name, dict(stages.judge.options))
    second = stages.confirm.judge_spec()
    try:  # a second judge is capped too: at its own prices, never unpriced
        confirm_prices = None if second is None else cap_prices(second.name,
                                                                dict(second.options))
    except ValueError as exc:
        raise ValueError(f"--confirm-judge: {exc}") from None
    processes, how = workers.worker_processes(options)
    logger.info("spend cap %s %s for the job, 1/%d per process (%s)", caps.reason,
                caps.caps, processes, how)
    return dataclasses.replace(stages, caps=dataclasses.replace(
        with_ledger_id(caps), prices=prices, confirm_prices=confirm_prices, share=processes))


def ensure_bigquery(spec: str, tables: TablesConfig) -> None:
    """Make the dataset and the tables (partitioned, clustered) ready before the job starts:
    Beam creates missing tables but not a missing dataset, nor the partitioning of a table,
    nor new columns of an existing one (see bigquery.ensure_tables)."""
    from google.cloud import bigquery

    from rt4chart.pipeline.storage.bigquery import ensure_tables, parse_dataset

    project, dataset = parse_dataset(spec)
    ensure_tables(bigquery.Client(project=project), project, dataset, tables.bigquery_location,
                  tables.partition_expiration_ms)


def check_dataset(spec: str | None) -> None:
    """ValueError if `spec` is given and is not PROJECT:DATASET (nothing is asked of BigQuery)."""
    if spec:
        from rt4chart.pipeline.storage.bigquery import parse_dataset

        parse_dataset(spec)


def check_redo_sampling(source: str, sampling: SamplingConfig) -> None:
    """A redo re-decides each trace's sample and weight: it must sample as the earlier run did
    (its summary.json's `sampling`; a run without one sampled nothing), or it would leave out,
    or weigh otherwise, traces the earlier run picked. A BigQuery source has no summary: not
    checked. ValueError naming the options when they differ."""
    if is_bigquery(source):
        return
    path = FileSystems.join(source.rstrip("/"), SUMMARY)
    earlier = NO_SAMPLING.summary()
    if FileSystems.exists(path):
        with FileSystems.open(path) as fh:
            earlier = orjson.loads(fh.read()).get("sampling") or earlier
    if earlier != sampling.summary():
        raise ValueError(
            f"--redo {source}: give the --sample, --sample-salt and --always of the earlier "
            f"run (it sampled {earlier['rates'] or 'nothing'}, always {earlier['always']}); "
            f"this run has {sampling.summary()['rates'] or 'none'}, always "
            f"{list(sampling.always)}")


def run_info(spec: JudgeSpec) -> RunInfo:
    """What every output row records of the run; builds the judge once, so that a bad judge or
    a missing key fails before Beam starts."""
    judge = spec.build()
    return RunInfo(judge_model(judge, spec), prompts.prompt_hash(judge.request_mode),
                   calibration_of(judge, spec))


def with_confirm_judge(stages, run: RunInfo, options: PipelineOptions):
    """(stages, run) with the confirming judge (`--confirm-judge`) made ready as the first
    judge is: negotiated with its endpoint, built once (a bad judge or a missing key fails
    here), its rate share, and its model and prompt hash as `run.confirm`. Unchanged without a
    second judge. JudgeUnusable, ValueError as for the first judge."""
    spec = stages.confirm.judge_spec()
    if spec is None:
        return stages, run
    spec, found = negotiate(spec)
    if found:
        logger.info("confirming judge endpoint: %s", orjson.dumps(found["request"]).decode())
    own = run_info(spec)
    confirm = dataclasses.replace(stages.confirm, resolved=share_limits(spec, options))
    logger.info("confirming judge %s (model %s), prompts %s", spec.name, own.judge_model,
                own.prompt_hash)
    return (dataclasses.replace(stages, confirm=confirm),
            dataclasses.replace(run, confirm=RunInfo(own.judge_model, own.prompt_hash)))


@contextlib.contextmanager
def usage_errors() -> Iterator[None]:
    """Report what is raised inside as a UsageError (a bad option, input or output folder)."""
    try:
        yield
    except (ValueError, FileExistsError, FileNotFoundError) as exc:
        raise UsageError(str(exc)) from exc


def preflight(config: AuditConfig, folder: RunFolder,
               options: PipelineOptions
               ) -> tuple[AuditConfig, RunInfo, list[str], dict | None]:
    """Everything checked before anything is written: the output folder, the inputs, the
    judge, --reuse, BigQuery and the traces to redo (read from the earlier run, still intact).
    Changes nothing on disk but BigQuery's dataset and tables."""
    with usage_errors():
        folder.check()
        check_inputs(config.inputs)
        config = check_source(config, folder.out)  # phoenix-api: reachable, its watermark
        spec, endpoint = negotiate(config.judge)  # JudgeUnusable: the run stops here
        config = dataclasses.replace(config, stages=dataclasses.replace(config.stages,
                                                                        judge=spec))
        run = run_info(config.judge)
        stages, run = with_confirm_judge(config.stages, run, options)
        config = dataclasses.replace(config, stages=prepare_caps(dataclasses.replace(
            stages, judge=share_limits(config.judge, options)), options))
        if config.reuse:
            check_reuse_source(config.reuse, config.out)
        redo = redo_traces(config.redo) if config.redo else []
        if config.redo:
            check_redo_sampling(config.redo, config.stages.sampling)
        check_dataset(config.bigquery)
    if config.bigquery:  # an error of BigQuery's (access, quota) fails the run
        with usage_errors():  # a missing dataset without --bigquery-location: a usage error
            ensure_bigquery(config.bigquery, config.tables)
    return config, run, redo, endpoint
