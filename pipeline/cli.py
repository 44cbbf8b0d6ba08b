"""The `rt4chart` command line.

`rt4chart audit INPUT... --out DIR` runs the batch audit; `rt4chart stream --subscription S`
audits a Pub/Sub subscription continuously. Any option they do not know is passed to Beam
(`--runner`, `--direct_num_workers`, Dataflow options, ...).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from importlib import resources

import apache_beam as beam
import orjson
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import (
    PipelineOptions,
    StandardOptions,
    _BeamArgumentParser,
)

from rt4chart import __version__, prompts
from rt4chart.pipeline import graph
from rt4chart.pipeline.config import AuditConfig, StagesConfig, StreamConfig
from rt4chart.pipeline.eval import cli as eval_cli
from rt4chart.pipeline.io import prepare_output
from rt4chart.pipeline.report import cli as report_cli
from rt4chart.pipeline.summary import read_table, summarise
from rt4chart.schemas.records import RunInfo
from rt4chart.transforms.aggregate import REDO_STAGE
from rt4chart.transforms.alerts import AlertConfig
from rt4chart.transforms.judges.base import JudgeSpec, judge_model
from rt4chart.transforms.segment import SegmentConfig
from rt4chart.transforms.windows import WindowingConfig

logger = logging.getLogger("rt4chart")

OFFLINE_NOTICE = (
    "no judge endpoint configured (OPENAI_API_KEY / OPENAI_BASE_URL / --base-url): using the "
    "offline judge. Its verdicts are a lexical baseline, not a model's judgement."
)
# Shorthand flags for the openai judge's options.
OPENAI_FLAGS = ("model", "base_url", "rpm", "tpm", "max_concurrency")


def example_traces() -> str:
    """Path of the bundled example traces."""
    return str(resources.files("rt4chart.pipeline").joinpath("examples", "traces.jsonl"))


def _audit_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", allow_abbrev=False, help="audit trace files (batch)",
                       description="Audit RAG traces; unknown options go to Beam.")
    p.add_argument("inputs", nargs="*", help="JSONL or Parquet trace files or globs")
    p.add_argument("--example", action="store_true", help="audit the bundled example traces")
    p.add_argument("--redo", metavar="RUN_DIR",
                   help="audit again the traces whose answers were incomplete in an earlier "
                        "run (batch or stream output directory), e.g. after a judge outage")
    p.add_argument("--reuse", metavar="RUN_DIR",
                   help="reuse the judge results of an earlier run (its judge_cache table) "
                        "wherever a call's inputs, model and prompts are unchanged")
    p.add_argument("--input-format", default="auto", choices=("auto", "jsonl", "parquet"),
                   help="input format (default: by suffix, .parquet/.pq else JSON lines)")
    p.add_argument("--out", default="rt4chart-out", help="output directory (default: %(default)s)")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier run's tables")
    p.add_argument("--bigquery", metavar="PROJECT:DATASET",
                   help="also write the tables to this BigQuery dataset (file loads)")
    p.add_argument("--batch-api", action="store_true",
                   help="openai judge through the Batch API: half the price, a separate rate "
                        "limit, results within 24 h; resumable (state in OUT/_batch_state)")
    _judge_args(p)


def _stream_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "stream", allow_abbrev=False, help="audit a Pub/Sub subscription (streaming)",
        description="Audit RAG traces published to Pub/Sub, continuously, with windowed "
                    "per-route rates and alerts. Stop with Ctrl-C or SIGTERM. Unknown options "
                    "go to Beam (e.g. --runner DataflowRunner --project P --region R).")
    p.add_argument("--subscription", required=True,
                   help="projects/PROJECT/subscriptions/NAME; a message body is one JSON trace")
    p.add_argument("--out", help="write the tables as Parquet files under this directory")
    p.add_argument("--bigquery", metavar="PROJECT:DATASET",
                   help="write the tables to this BigQuery dataset (streaming inserts)")
    p.add_argument("--dead-letter-topic", "--dead_letter_topic", dest="dead_letter_topic",
                   help="projects/P/topics/T: malformed messages, payload kept, reason and "
                        "stage as attributes")
    p.add_argument("--alerts-topic", "--alerts_topic", dest="alerts_topic",
                   help="projects/P/topics/T: one JSON message per alert")
    p.add_argument("--rate-window", "--rate_window", "--window", dest="window", type=int,
                   default=300,
                   help="rate window in seconds of event time (default 300)")
    p.add_argument("--sliding-period", "--sliding_period", dest="sliding_period", type=int,
                   help="sliding windows: start a window every N seconds (default: fixed)")
    p.add_argument("--early-firing", "--early_firing", dest="early_firing", type=float,
                   default=30.0, help="seconds between early firings of an open window "
                                      "(default 30; 0 for none)")
    p.add_argument("--allowed-lateness", "--allowed_lateness", dest="allowed_lateness",
                   type=int, default=3600,
                   help="seconds after a window's end during which late traces still update "
                        "it (default 3600); later ones are audited and marked late")
    p.add_argument("--alert-rate", "--alert_rate", dest="alert_rate", type=float,
                   help="alert when a window's rate exceeds this (default: off)")
    p.add_argument("--alert-relative", "--alert_relative", dest="alert_relative", type=float,
                   default=2.0, help="alert when a window's rate is N times the route's "
                                     "trailing baseline and significantly above it (default 2; "
                                     "0 for off)")
    p.add_argument("--alert-min-traces", "--alert_min_traces", dest="alert_min_traces",
                   type=int, default=20, help="traces a window needs to alert (default 20)")
    p.add_argument("--alert-baseline-windows", "--alert_baseline_windows",
                   dest="alert_baseline_windows", type=int, default=12,
                   help="windows in the trailing baseline (default 12)")
    p.add_argument("--dedupe-horizon", "--dedupe_horizon", dest="dedupe_horizon", type=float,
                   default=86_400.0, help="seconds a trace_id is remembered (default 86400)")
    p.add_argument("--join-timeout", "--join_timeout", dest="join_timeout", type=float,
                   default=900.0, help="seconds a trace waits for its judge results before "
                                       "the missing ones are recorded as failures "
                                       "(default 900)")
    p.add_argument("--id-attribute", "--id_attribute", dest="id_attribute",
                   help="message attribute with a unique id for Pub/Sub's own dedupe "
                        "(Dataflow only; the local runner hangs with it)")
    _judge_args(p)


def _judge_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--judge", default="auto",
                   help="offline | openai | package.module:factory (default: openai when an "
                        "endpoint is configured, else offline)")
    p.add_argument("--judge-option", action="append", default=[], metavar="KEY=VALUE",
                   help="option passed to the judge factory (repeatable)")
    p.add_argument("--model", help="openai judge: model (default gpt-4o-mini)")
    p.add_argument("--base-url", dest="base_url", help="openai judge: endpoint base URL")
    p.add_argument("--rpm", help="openai judge: requests per minute in all (default 500; "
                                 "split over local worker processes, see rate_share)")
    p.add_argument("--tpm", help="openai judge: tokens per minute in all (default 200000)")
    p.add_argument("--max-concurrency", dest="max_concurrency",
                   help="openai judge: calls in flight per worker (default 32)")
    p.add_argument("--claims-per-call", type=int, default=1, metavar="N",
                   help="local verification: check up to N claims of an answer against a "
                        "window in one judge call (default 1, the paper's schedule)")
    p.add_argument("--window-size", type=int, default=25, help="W, sentences (default 25)")
    p.add_argument("--window-overlap", type=int, default=10, help="O, sentences (default 10)")
    p.add_argument("-v", "--verbose", action="store_true")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="rt4chart", allow_abbrev=False,
                                   description="Claim-level hallucination audit of RAG traces.")
    root.add_argument("--version", action="version", version=f"rt4chart {__version__}")
    sub = root.add_subparsers(dest="command", required=True)
    _audit_parser(sub)
    _stream_parser(sub)
    eval_cli.add_parsers(sub)
    report_cli.add_parser(sub)
    return root


def judge_spec(args: argparse.Namespace) -> JudgeSpec:
    options: dict[str, str] = {}
    for item in args.judge_option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--judge-option expects KEY=VALUE, got {item!r}")
        options[key.strip()] = value
    shorthand = {k: getattr(args, k) for k in OPENAI_FLAGS if getattr(args, k) is not None}
    name = args.judge
    if name == "auto":
        configured = args.base_url or os.environ.get("OPENAI_BASE_URL") or os.environ.get(
            "OPENAI_API_KEY")
        name = "openai" if configured else "offline"
        if name == "offline":
            logger.warning(OFFLINE_NOTICE)
    if getattr(args, "batch_api", False):
        if name not in ("openai", "openai-batch"):
            raise ValueError(f"--batch-api needs the openai judge, not {name!r}")
        name = "openai-batch"
        options.setdefault("batch_state_dir", os.path.join(args.out, "_batch_state"))
    if shorthand and name not in ("openai", "openai-batch"):
        raise ValueError(f"--{', --'.join(shorthand)} apply to the openai judge, not {name!r}")
    return JudgeSpec.of(name, {**options, **{k: str(v) for k, v in shorthand.items()}})


def _option_classes(cls: type = PipelineOptions):
    for sub in cls.__subclasses__():
        yield sub
        yield from _option_classes(sub)


def _beam_actions() -> dict[str, argparse.Action]:
    parser = _BeamArgumentParser(allow_abbrev=False)
    for cls in set(_option_classes()):
        try:
            cls._add_argparse_args(parser)
        except argparse.ArgumentError:  # an option registered twice by two classes
            continue
    return parser._option_string_actions


def split_beam_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """Separate Beam's pipeline options (`--runner X`, `--direct_num_workers=2`, `--streaming`)
    from rt4chart's own arguments, so that a Beam option's value is not taken for an input."""
    actions = _beam_actions()
    ours: list[str] = []
    beams: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        name, has_value, _ = token.partition("=")
        action = actions.get(name) if token.startswith("--") else None
        if action is None:
            ours.append(token)
        else:
            beams.append(token)
            takes_value = action.nargs != 0 and not has_value
            if takes_value and i + 1 < len(argv):
                i += 1
                beams.append(argv[i])
        i += 1
    return ours, beams


def beam_options(beam_args: list[str]) -> PipelineOptions:
    options = PipelineOptions(beam_args, save_main_session=False)
    std = options.view_as(StandardOptions)
    if std.runner is None:
        # Local runs pick an in-process runner: the default would first try to download Prism
        # (network traffic beyond loopback; it fails offline). Batch on the portable FnApiRunner,
        # streaming (Pub/Sub, processing-time timers) on the bundle-based direct runner.
        std.runner = "BundleBasedDirectRunner" if std.streaming else "FnApiRunner"
    return options


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


def share_limits(spec: JudgeSpec, options: PipelineOptions) -> JudgeSpec:
    """Split the openai judge's rpm/tpm over local worker processes, so that the limits hold in
    total: each process of `--direct_running_mode multi_processing --direct_num_workers N` gets
    1/N (unless `rate_share` is given)."""
    from apache_beam.options.pipeline_options import DirectOptions

    direct = options.view_as(DirectOptions)
    processes = direct.direct_num_workers or 1
    if spec.name != "openai" or direct.direct_running_mode != "multi_processing" or (
            processes <= 1 or "rate_share" in dict(spec.options)):
        return spec
    logger.info("rate limits shared by %d worker processes: each budgets 1/%d", processes,
                processes)
    return JudgeSpec.of(spec.name, {**dict(spec.options), "rate_share": str(processes)})


def run_audit(args: argparse.Namespace, beam_args: list[str]) -> int:
    inputs = tuple(args.inputs) + ((example_traces(),) if args.example else ())
    if args.redo:
        prepare_output(args.out, args.overwrite)
        inputs += (redo_input(args.redo, args.out),)
    options = beam_options(beam_args)
    spec = share_limits(judge_spec(args), options)
    config = AuditConfig(
        inputs=inputs, out=args.out, judge=spec, overwrite=args.overwrite,
        input_format=args.input_format,
        segment=SegmentConfig(args.window_size, args.window_overlap),
        bigquery=args.bigquery, claims_per_call=args.claims_per_call, reuse=args.reuse,
    )
    judge = spec.build()  # fail fast on a bad judge or missing key, before Beam starts
    run = RunInfo(judge_model(judge, spec), prompts.prompt_hash())
    if config.reuse:
        check_reuse_source(config.reuse, config.out)
    prepare_output(config.out, config.overwrite)
    if config.bigquery:
        ensure_bigquery(config.bigquery)
    logger.info("auditing %s with judge %s (model %s), prompts %s, W=%d O=%d -> %s",
                ", ".join(inputs), spec.name, run.judge_model, run.prompt_hash,
                config.segment.window_size, config.segment.window_overlap, config.out)
    started = time.monotonic()
    with beam.Pipeline(options=options) as pipeline:
        graph.build(pipeline, config, run)
    summary = summarise(config.out, time.monotonic() - started)
    for line in summary.lines():
        print(line)
    record = {"judge": spec.name, "judge_model": run.judge_model, "prompt_hash": run.prompt_hash,
              "window_size": config.segment.window_size,
              "window_overlap": config.segment.window_overlap, "inputs": list(inputs),
              **summary.__dict__, "traces_per_second": summary.traces_per_second}
    with FileSystems.create(FileSystems.join(config.out, "summary.json")) as fh:
        fh.write(orjson.dumps(record, option=orjson.OPT_INDENT_2))
    if summary.traces and summary.incomplete == summary.traces:
        print("rt4chart: run failed: no answer could be judged (every answer is incomplete); "
              "see the answers' `reason`, check the endpoint, model and key", file=sys.stderr)
        return 1
    return 0


def stream_config(args: argparse.Namespace, spec: JudgeSpec) -> StreamConfig:
    windowing = WindowingConfig.streaming_default(
        args.window, args.sliding_period, args.early_firing or None, args.allowed_lateness)
    stages = StagesConfig(spec, SegmentConfig(args.window_size, args.window_overlap), windowing,
                          args.join_timeout, args.dedupe_horizon, args.claims_per_call)
    alerts = AlertConfig(args.alert_rate, args.alert_relative or None, args.alert_min_traces,
                         args.alert_baseline_windows)
    return StreamConfig(args.subscription, stages, args.out, args.bigquery,
                        args.dead_letter_topic, args.alerts_topic, alerts, args.id_attribute)


def run_stream(args: argparse.Namespace, beam_args: list[str]) -> int:
    spec = judge_spec(args)
    config = stream_config(args, spec)
    judge = spec.build()
    run = RunInfo(judge_model(judge, spec), prompts.prompt_hash())
    options = beam_options(beam_args + ["--streaming"])
    runner = str(options.view_as(StandardOptions).runner)
    remote = "Dataflow" in runner
    if config.id_attribute and not remote:
        raise ValueError("--id-attribute needs the Dataflow runner (the local runner hangs on "
                         "it); the keyed dedupe runs everywhere")
    if config.bigquery:
        ensure_bigquery(config.bigquery)
    logger.info("streaming audit of %s with judge %s (model %s), prompts %s, windows of %d s "
                "-> %s", config.subscription, spec.name, run.judge_model, run.prompt_hash,
                config.stages.windowing.size_s,
                ", ".join(x for x in (config.out, config.bigquery) if x))
    pipeline = beam.Pipeline(options=options)
    graph.build_stream(pipeline, config, run)
    result = pipeline.run()
    if remote:  # the job runs on in the service; a launcher must not wait for it
        job = getattr(result, "job_id", lambda: None)()
        print(f"rt4chart: streaming job {job} submitted to {runner}; stop it with "
              f"`gcloud dataflow jobs drain {job}` (drain finishes in-flight traces)",
              file=sys.stderr)
        return 0
    stop = threading.Event()

    def _stop(signum, _frame):
        logger.info("signal %d: cancelling the pipeline (results already written are kept)",
                    signum)
        stop.set()

    previous = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        waiter = threading.Thread(target=result.wait_until_finish, daemon=True)
        waiter.start()
        while waiter.is_alive() and not stop.wait(0.5):
            pass
        if stop.is_set():
            result.cancel()
            print("rt4chart: stream stopped", file=sys.stderr)
            return 0
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    state = str(result.state)
    print(f"rt4chart: stream ended ({state})", file=sys.stderr)
    return 0 if state.endswith("DONE") else 1


def main(argv: list[str] | None = None) -> int:
    ours, beam_args = split_beam_args(list(sys.argv[1:] if argv is None else argv))
    args, unknown = parser().parse_known_args(ours)
    beam_args += unknown  # options of Beam plug-ins the split did not know
    logging.basicConfig(
        level=logging.DEBUG if getattr(args, "verbose", False) else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for noisy in ("apache_beam", "httpx", "httpx2", "openai"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        if args.command == "report":
            return report_cli.run(args)
        if args.command == "eval":
            return eval_cli.run(args, beam_args)
        if args.command == "stream":
            return run_stream(args, beam_args)
        return run_audit(args, beam_args)
    except (ValueError, FileExistsError) as exc:
        print(f"rt4chart: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - report a failed run with a non-zero exit code
        logger.exception("run failed")
        print(f"rt4chart: run failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
