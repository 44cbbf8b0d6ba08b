"""The `rt4chart` command line: parses, runs a job (jobs.py) and prints.

`rt4chart audit INPUT... --out DIR` runs the batch audit; `rt4chart stream --subscription S`
audits a Pub/Sub subscription continuously. Beam's options (`--runner`, `--direct_num_workers`,
Dataflow options, ...) may be given anywhere on the line; an option neither rt4chart nor Beam
knows is a usage error (exit 2) naming the closest known option.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import sys
import threading

from rt4chart.pipeline.cli import annotate as annotate_cli
from rt4chart.pipeline.cli import check_judge, gate
from rt4chart.pipeline.cli import eval as eval_cli
from rt4chart.pipeline.cli import parsers as cli_args
from rt4chart.pipeline.cli import report as report_cli
from rt4chart.pipeline.cli.commands import root_parser
from rt4chart.pipeline.options.beam import (
    KnownOptionsParser,
    check_unknown,
    reject_unknown,
    split_beam_args,
    with_command_options,
)
from rt4chart.pipeline.report import export
from rt4chart.pipeline.run import deploy, graph, jobs
from rt4chart.pipeline.run import estimate as estimate_run
from rt4chart.pipeline.storage import gcp_extra, run_folder
from rt4chart.pipeline.storage.run_reads import RunChangedError
from rt4chart.transforms.common.redact import NO_EXTRA_KEYS, Redactor

logger = logging.getLogger("rt4chart")
MAX_ERROR_CHARS = 500
# `rt4chart audit`'s exit code when the run succeeded but left answers incomplete (a judge call
# failed on them): neither 0 (a cron job must notice without reading the summary) nor 1 (the
# run's tables are whole, and `--redo` finishes it). The Python API: `AuditResult.complete`.
EXIT_INCOMPLETE = 3
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def parsers(parser_class: type[KnownOptionsParser] = KnownOptionsParser,
            ) -> tuple[KnownOptionsParser, dict[str, KnownOptionsParser]]:
    """The root parser, and each command's parser by name (`parser_class`: `help_record`'s
    recording parser writes them down for `quick_help`)."""
    root, sub = root_parser(parser_class)
    commands = {"audit": cli_args.add_audit_parser(sub),
                "stream": cli_args.add_stream_parser(sub),
                "eval": eval_cli.add_parsers(sub),
                "report": report_cli.add_parser(sub),
                "annotate": annotate_cli.add_parser(sub),
                "check-judge": check_judge.add_parser(sub),
                "export": export.add_parser(sub),
                "gate": gate.add_parser(sub)}
    commands = {name: p for name, p in commands.items() if p is not None}
    for command in commands.values():
        command.allow_abbrev = False  # a misspelt option is an error, never another option
    return root, commands


def parser() -> argparse.ArgumentParser:
    return parsers()[0]


def audit(args: argparse.Namespace, beam_args: list[str]) -> int:
    with jobs.usage_errors():
        config = cli_args.audit_config(args, jobs.example_traces())
        use_keys(graph.run_keys(config.stages))
        options = with_command_options(jobs.beam_options(beam_args), args, launcher_keys())
        if args.estimate and config.phoenix:
            raise ValueError("--estimate counts input files; with --input-format phoenix-api "
                             "there are none (audit a phoenix-api run's _phoenix/spans.jsonl)")
        if args.estimate:  # counted, not run: no judge, no network, nothing written
            return estimate_run.run(config.inputs, config.stages, batch_api=args.batch_api,
                                    json_path=args.estimate_json,
                                    reasoning_fill=args.estimate_reasoning_fill,
                                    input_format=config.input_format, spans=config.spans,
                                    max_record_bytes=config.max_record_bytes)
        phoenix = annotate_cli.target(args)
        _require_gcp([*config.inputs, config.out, config.redo or "", config.reuse or ""],
                     config.bigquery, options)
        deploy.check_remote(config.inputs, config.out, config.judge, options)
        if deploy.is_dry_run(options):
            return _plan(deploy.audit_plan(config, options))
    summary = jobs.run_audit(config, options)
    for line in summary.lines():
        print(line)
    annotate_cli.after_audit(phoenix, config.out)
    if jobs.nothing_valid(summary):
        print(f"rt4chart: {jobs.NOTHING_VALID.format(dead=summary.dead_letters)}",
              file=sys.stderr)
        return 1
    if jobs.no_answer_judged(summary):
        print(f"rt4chart: {jobs.no_answer_judged_message(summary)}", file=sys.stderr)
        return 1
    if summary.incomplete:
        print(f"rt4chart: {incomplete_message(summary, config.out)}", file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0


def incomplete_message(summary, out: str) -> str:
    """Why `audit` exits EXIT_INCOMPLETE: how many answers, the reason most give, the redo."""
    why = f"; most say: {summary.incomplete_reason}" if summary.incomplete_reason else ""
    return (f"{summary.incomplete} of {summary.traces} answers are incomplete (a judge call "
            f"failed on them: not counted as grounded){why}; `rt4chart audit --redo {out} "
            f"--out {out} --overwrite` audits them again (exit {EXIT_INCOMPLETE})")


def stream(args: argparse.Namespace, beam_args: list[str]) -> int:
    with jobs.usage_errors():
        if args.estimate:  # a sample of the stream's traces, counted per 1,000 (and hour)
            if args.traces_per_hour is not None and args.traces_per_hour < 1:
                raise ValueError(f"--traces-per-hour must be >= 1, got {args.traces_per_hour}")
            return estimate_run.run((args.estimate,),
                                    cli_args.stream_stages(args, cli_args.judge_spec(args)),
                                    batch_api=False, json_path=args.estimate_json,
                                    reasoning_fill=args.estimate_reasoning_fill,
                                    spans=cli_args.span_mapping(args), per=1000,
                                    per_hour=args.traces_per_hour)
        if not args.progress_every > 0:
            raise ValueError(f"--progress-every must be > 0, got {args.progress_every}")
        if args.subscription is None:
            raise ValueError("stream needs --subscription projects/PROJECT/subscriptions/NAME "
                             "(or --estimate SAMPLE_FILE to estimate a stream without one)")
        gcp_extra.require("pubsub", "rt4chart stream (it reads a Pub/Sub subscription)")
        config = cli_args.stream_config(args, cli_args.judge_spec(args))
        use_keys(graph.run_keys(config.stages))
        options = with_command_options(jobs.beam_options(beam_args, streaming=True), args,
                                       launcher_keys())
        _require_gcp([config.out or ""], config.bigquery, options)
        phoenix = annotate_cli.target(args)
        deploy.check_remote((), config.out, config.stages.judge, options)
        if deploy.is_dry_run(options):
            return _plan(deploy.stream_plan(config, options))
    stop = threading.Event()

    def _stop(signum, _frame):
        logger.info("signal %d: cancelling the pipeline (results already written are kept)",
                    signum)
        stop.set()

    previous = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with annotate_cli.periodic(phoenix, args):
            run = jobs.run_stream(config, options, stop, every_s=args.progress_every)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if run.state == "SUBMITTED":
        print(f"rt4chart: streaming job {run.job_id} submitted to {run.runner}; stop it with "
              f"`gcloud dataflow jobs drain {run.job_id}` (drain finishes in-flight traces)",
              file=sys.stderr)
    elif run.state == "STOPPED":
        print("rt4chart: stream stopped", file=sys.stderr)
    else:
        print(f"rt4chart: stream ended ({run.state})", file=sys.stderr)
    return 0 if run.ok else 1


def _require_gcp(paths: list[str], bigquery: str | None, options) -> None:
    """A usage error naming `rt4chart[gcp]` when the run needs a Google Cloud client the base
    install leaves out (gs:// or bq: paths, --bigquery, the DataflowRunner)."""
    gcp_extra.require_for_paths(paths, "a gs:// or bq: path")
    if bigquery:
        gcp_extra.require("bigquery", "--bigquery")
    if deploy.is_remote(options):
        gcp_extra.require("dataflow", "--runner DataflowRunner")


def _plan(lines: list[str]) -> int:
    keys = launcher_keys()
    for line in lines:
        print(keys.redact(line))
    return 0


class RedactingFormatter(logging.Formatter):
    """Log lines (tracebacks included) without the configured keys or key-like strings: a
    failed call's message may hold what an endpoint echoed back. `keys`: the run's (its
    judges' key variables, see `use_keys`), besides the well-known ones."""

    def __init__(self, fmt: str, keys: Redactor = NO_EXTRA_KEYS):
        super().__init__(fmt)
        self.keys = keys

    def format(self, record: logging.LogRecord) -> str:
        return self.keys.redact(super().format(record)) or ""


def _formatters() -> list[RedactingFormatter]:
    return [h.formatter for h in logging.getLogger().handlers
            if isinstance(h.formatter, RedactingFormatter)]


def use_keys(keys: Redactor) -> None:
    """Have the launcher's log lines (its handlers' RedactingFormatter) and error lines also
    redact `keys` (a run's, from its config), once the command's options are parsed."""
    for formatter in _formatters():
        formatter.keys = formatter.keys.joined(keys)


def launcher_keys() -> Redactor:
    """The keys the launcher's lines are redacted of (its log formatter's; none besides the
    well-known ones when logging was set up otherwise)."""
    return next((f.keys for f in _formatters()), Redactor())


def _beam_type_hint_notice_dropped(record: logging.LogRecord) -> bool:
    """Beam warns, once per stage at every run, that a composite's declared output type (a
    NamedTuple of PCollections, as the stages with several outputs return) "will be ignored
    and not used for type-checking purposes": a note for Beam's developers, not for a user
    reading the run's log. Nothing else is dropped."""
    return not (record.levelno == logging.WARNING and "type hint will be ignored" in
                str(record.msg) and f"{os.sep}apache_beam{os.sep}" in (record.pathname or ""))


def _logging(argv: list[str]) -> None:
    # Before any PipelineOptions is made: its constructor sets up the root logger otherwise.
    verbose = "-v" in argv or "--verbose" in argv
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format=LOG_FORMAT)
    for handler in logging.getLogger().handlers:
        if type(handler) is logging.StreamHandler:  # basicConfig's (not a test harness's)
            handler.setFormatter(RedactingFormatter(LOG_FORMAT))
            handler.addFilter(_beam_type_hint_notice_dropped)
    for noisy in ("apache_beam", "httpx", "httpx2", "openai"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # Beam logs a failing step's traceback; a failed run prints its error in one line instead
    # (and, with -v, logs the traceback).
    logging.getLogger("apache_beam.runners.common").setLevel(
        logging.WARNING if verbose else logging.CRITICAL)


def main_error(exc: BaseException) -> str:
    """A failed run's main error in one line, redacted: the exception's type and the first
    line of its message, and the step the runner names (it re-raises a worker's error with the
    step appended, e.g. "[while running 'ReadTraces/Jsonl/Lines']"); its cause's when it has no
    message."""
    while not str(exc).strip() and exc.__cause__ is not None:
        exc = exc.__cause__
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    step = re.search(r"\[while running '[^']*'\]", str(exc))
    if step and step.group(0) not in text:  # the stage, when the runner named it further down
        text = f"{text[:MAX_ERROR_CHARS - len(step.group(0)) - 1]} {step.group(0)}"
    return launcher_keys().redact(text[:MAX_ERROR_CHARS]) or ""


# The arguments that name a run folder a command reads, by command.
_READ_RUNS = {"report": ("out_dir",), "export": ("run",), "annotate": ("source",),
              "eval": ("run_a", "run_b")}


def check_runs_read(args: argparse.Namespace) -> None:
    """Warn loudly (stderr) about a run folder a command reads that holds what a failed run
    completed; refuse (UsageError) one whose swap was cut short, which mixes two runs."""
    for name in _READ_RUNS.get(args.command, ()):
        folder = getattr(args, name, None)
        if not isinstance(folder, str) or folder.startswith("bq:"):
            continue
        found = run_folder.incomplete_message(folder)
        if found and found[1]:
            raise jobs.UsageError(found[0])
        if found:
            print(f"rt4chart: WARNING: {found[0]}", file=sys.stderr)


def _command(args: argparse.Namespace, beam_args: list[str]) -> int:
    check_runs_read(args)
    if args.command == "report":
        return report_cli.run(args)
    if args.command == "eval":
        with jobs.usage_errors():  # eval reports its usage errors as ValueError
            return eval_cli.run(args, beam_args)
    if args.command == "stream":
        return stream(args, beam_args)
    if args.command == "check-judge":
        with jobs.usage_errors():
            return check_judge.run(args)
    if args.command == "gate":  # 0 within the limits, 1 not; usage errors as ValueError
        with jobs.usage_errors():
            return gate.run(args)
    if args.command == "export":
        with jobs.usage_errors():
            return export.run(args)
    if args.command == "annotate":
        with jobs.usage_errors():  # annotate reports its usage errors as ValueError
            return annotate_cli.run(args, beam_args)
    return audit(args, beam_args)


def main(argv: list[str] | None = None) -> int:
    """The exit code: 0 success, 1 a failed run (or nothing valid to audit), 2 a usage error
    found before anything ran (argparse's own errors exit 2 as well; `gate`: refused), 3
    (`audit`) a run that succeeded but left answers incomplete (EXIT_INCOMPLETE)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _logging(argv)
    ours, beam_args = split_beam_args(argv)
    root, commands = parsers()
    reject_unknown(commands, ours)  # exit 2, naming the closest known option
    args, unknown = root.parse_known_args(ours)  # -h/--help: the usage, exit 0
    check_unknown(commands.get(args.command, root), unknown)
    try:
        with jobs.cli_process_tuning():  # the command's own process: never the API's host
            return _command(args, beam_args)
    except (jobs.UsageError, RunChangedError) as exc:
        print(f"rt4chart: error: {launcher_keys().redact(str(exc))}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - report a failed run with a non-zero exit code
        logger.debug("run failed", exc_info=True)  # the traceback with -v (redacted)
        print(f"rt4chart: run failed: {main_error(exc)}", file=sys.stderr)
        progress = getattr(exc, "rt4chart_progress", None)
        if progress is not None:  # the figures so far, after the error
            print(f"{progress.line()} when it failed", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
