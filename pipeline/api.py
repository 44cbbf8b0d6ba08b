"""The Python entry: `rt4chart.audit(records, judge=..., **options)` and `rt4chart.Auditor`.

An audit from Python is `rt4chart audit` run in-process: the options are the command's own
declarations (`flags.AUDIT`, named by their dests: `window_size=8`, `base_url=...`), turned
into the same parsed values and the same typed config (`args.audit_config`), and the job is
`jobs.run_audit` on Beam's in-process runner; the result is the run's tables read back
(`runs.py`). In-memory records are written to a private temporary folder through the command's
own doors (`sources/memory.py`: JSON lines, Parquet rows for values JSON cannot hold), which
also holds the run's tables unless `out=` is given; it is removed when the call returns, so a
call leaves nothing behind in the working folder or the temporary one.

An :class:`Auditor` keeps what a notebook's many small batches should not pay again: its
options are checked once, the judge's endpoint is probed once (the negotiated spec is reused),
and the process's judge runtime is held between calls, so the judge's client, its concurrency
limit, rate limiter and circuit breaker carry over from one call to the next.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import difflib
import functools
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from apache_beam.options.pipeline_options import StandardOptions

from rt4chart.pipeline.cli import parsers as cli_args
from rt4chart.pipeline.cli.beam_options import KnownOptionsParser, with_command_options
from rt4chart.pipeline.cli.flags import AUDIT
from rt4chart.pipeline.results.runs import AuditResult, read_run_tables, result_of
from rt4chart.pipeline.run import graph, jobs
from rt4chart.pipeline.run.config import AuditConfig
from rt4chart.pipeline.run.judge_probe import negotiate
from rt4chart.pipeline.sources.memory import write_records
from rt4chart.transforms.common.options_spec import Option
from rt4chart.transforms.judges import runtime

# `rt4chart audit` options that are modes of the command rather than of an audit.
REFUSED = {
    "example": "pass the records (or rt4chart.pipeline.run.jobs.example_traces()) instead",
    "batch_api": "the Batch API's 24-hour resumable jobs belong to `rt4chart audit --batch-api`",
    "estimate": "use `rt4chart audit --estimate`",
    "estimate_json": "use `rt4chart audit --estimate --estimate-json FILE`",
    "estimate_reasoning_fill": "use `rt4chart audit --estimate`",
    "annotate": "write the verdicts back with `rt4chart annotate` on a run written with out=",
}
PLACEHOLDER = "records.jsonl"  # the inputs' name while the options are checked
# One audit at a time in a process: a run's progress counts what the process's tally counted
# since the run started (transforms/common/tally.py), which two runs at once would share.
_RUNS = threading.Lock()


class AuditFailed(RuntimeError):
    """The audit ran but judged nothing: every record was dead-lettered, or every answer is
    incomplete (the judge failed). `result` holds what the run wrote (the dead letters, the
    incomplete answers and their reasons); `rt4chart audit` exits 1 for the same runs."""

    def __init__(self, message: str, result: AuditResult):
        super().__init__(message)
        self.result = result


@functools.cache
def _audit_parser() -> argparse.ArgumentParser:
    root = KnownOptionsParser(prog="rt4chart", allow_abbrev=False)
    return cli_args.add_audit_parser(root.add_subparsers(dest="command"))


def _text(dest: str, opt: Option, value: Any) -> str:
    """A Python value as the command line's text for the option's own parser."""
    if isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise TypeError(f"{dest} ({opt.flag}) takes text or a number, got {type(value).__name__}")


def _one(dest: str, opt: Option, value: Any) -> Any:
    parsed = text = _text(dest, opt, value)
    if opt.parse is not None:
        try:
            parsed = opt.parse(text)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{dest}={value!r} ({opt.flag}): {exc}") from None
    if opt.choices and parsed not in opt.choices:
        raise ValueError(f"{dest} ({opt.flag}) must be one of {', '.join(opt.choices)}, got "
                         f"{value!r}")
    return parsed


def option_value(dest: str, opt: Option, value: Any) -> Any:
    """A keyword argument as the parsed value its command-line option would give: text goes
    through the option's parser, numbers as their text; a switch takes a bool; a repeatable
    option a list, one value or (`judge_option`) a mapping of KEY: VALUE."""
    if value is None:
        return None
    if opt.kind == "flag":
        if not isinstance(value, bool):
            raise TypeError(f"{dest} ({opt.flag}) is a switch: True or False, got {value!r}")
        return value
    if opt.kind == "append":
        if isinstance(value, Mapping):
            value = [f"{k}={v}" for k, v in value.items()]
        elif isinstance(value, str | int | float | os.PathLike):
            value = [value]
        return [_one(dest, opt, v) for v in value]
    return _one(dest, opt, value)


def _unknown(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    return f"unknown option {name!r}" + (f"; did you mean {close[0]!r}?" if close else "") + (
        " (the options are `rt4chart audit`'s, named as Python identifiers: window_size=8)")


def namespace(inputs: Sequence[str], out: str, options: Mapping[str, Any]) -> argparse.Namespace:
    """The parsed command line `rt4chart audit INPUTS --out OUT` with `options` would give.

    Raises:
        TypeError: an unknown option, or a value of the wrong kind.
        ValueError: a value its option's parser refuses, or an option the API does not take.
    """
    declared = dict(AUDIT)
    args = _audit_parser().parse_args([])  # every default, as the command line has it
    for name, value in options.items():
        if name not in declared or name == "out":
            raise TypeError(_unknown(name, (d for d in declared if d not in REFUSED)))
        if name in REFUSED:
            raise ValueError(f"{name} is not an option of rt4chart.audit: {REFUSED[name]}")
        setattr(args, name, option_value(name, declared[name], value))
    args.inputs, args.out, args.command = list(inputs), out, "audit"
    return args


def _inputs(records: Any, work: str, input_format: str | None = None) -> tuple[str, ...]:
    """The files the run reads: a path as given, or in-memory records written through the
    command's own doors (`sources/memory.py`: JSON lines, Parquet rows for values JSON cannot
    hold), so that they are validated and dead-lettered as `rt4chart audit` would."""
    if isinstance(records, str | os.PathLike):
        return (os.fspath(records),)
    if isinstance(records, bytes | Mapping):
        raise TypeError("records: give an iterable of trace dicts, or a path")
    if input_format not in (None, "auto"):  # it would read the Parquet rows as text
        raise ValueError(f"input_format={input_format!r} names the format of files; in-memory "
                         "records are written in formats told by their content")
    paths = write_records(records, work)
    if not paths:
        raise ValueError("no records to audit")
    return paths


@contextlib.contextmanager
def _work_folder() -> Iterator[str]:
    """A private temporary folder, removed on the way out whatever happens."""
    folder = tempfile.mkdtemp(prefix="rt4chart-api-")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _failure(summary) -> str | None:
    if jobs.nothing_valid(summary):
        return jobs.NOTHING_VALID.format(dead=summary.dead_letters)
    if jobs.no_answer_judged(summary):
        return jobs.no_answer_judged_message(summary)
    return None


class Auditor:
    """Audits batches of traces in-process with one set of options, keeping the judge client
    and its limits between calls (see the module's docstring).

    Args:
        judge: offline, openai, package.module:factory, or auto (openai when an endpoint is
            configured: OPENAI_BASE_URL, OPENAI_API_KEY or base_url=).
        beam_args: Beam pipeline options (`["--direct_num_workers=2"]`); the runner is local.
        **options: `rt4chart audit`'s options by their Python names (`window_size=8`,
            `base_url="http://127.0.0.1:8080/v1"`, `judge_option={"timeout_s": 60}`).

    Raises:
        TypeError, ValueError: a bad option, at once (nothing has run).
    """

    def __init__(self, judge: str = "auto", *, beam_args: Sequence[str] = (), **options: Any):
        self._options = {"judge": judge, **options}
        self._beam_args = list(beam_args)
        self._spec = None  # the judge spec negotiated with its endpoint, once
        self._runtime = None  # held between calls: the judges, their clients and limits
        self._config((PLACEHOLDER,), os.path.join(tempfile.gettempdir(), "rt4chart-check"))
        runner = str(self._beam().view_as(StandardOptions).runner)
        if "Dataflow" in runner:
            raise ValueError("rt4chart.audit runs in-process; use `rt4chart audit` for "
                             "Dataflow")

    def _beam(self):
        return jobs.beam_options(list(self._beam_args))

    def _config(self, inputs: Sequence[str], out: str,
                keep_traces: bool = False) -> tuple[AuditConfig, Any]:
        """The typed config and Beam's options of a run (ValueError on a bad option).
        `keep_traces`: in-memory records kept in `out=`, where they exist nowhere else: the
        traces table is written too (the report's trace views read it), unless the options
        say write_traces=False."""
        given = {"write_traces": True, **self._options} if keep_traces else self._options
        args = namespace(inputs, out, given)
        with _values_errors():
            config = cli_args.audit_config(args)
        return config, with_command_options(self._beam(), args, graph.run_keys(config.stages))

    def _prepared(self, config: AuditConfig) -> AuditConfig:
        if self._spec is None:
            self._spec, _ = negotiate(config.judge)  # JudgeUnusable: nothing has run
            self._runtime = runtime.acquire(runtime.runtime_handle())
        return dataclasses.replace(config, stages=dataclasses.replace(config.stages,
                                                                      judge=self._spec))

    def audit(self, records: Iterable[Mapping[str, Any]] | str | os.PathLike,
              *, out: str | os.PathLike | None = None) -> AuditResult:
        """Audit `records` (trace dicts, or the path of a trace file or glob in any format
        `rt4chart audit` reads) and return the results. `out`: also keep the run's tables
        there (a folder as `--out`); without it nothing is written outside a temporary folder
        removed before returning. One audit runs at a time in a process (calls wait).

        Raises:
            AuditFailed: nothing could be judged (its `result` says why).
            TypeError, ValueError: bad records or options; FileNotFoundError: no such input.
        """
        with _RUNS, _work_folder() as work:
            inputs = _inputs(records, work, self._options.get("input_format"))
            run_out = os.path.join(work, "run") if out is None else os.fspath(out)
            in_memory = not isinstance(records, str | os.PathLike)
            config, options = self._config(inputs, run_out,
                                           keep_traces=out is not None and in_memory)
            config = self._prepared(config)
            with _values_errors():
                summary = jobs.run_audit(config, options)
            result = result_of(read_run_tables(run_out), None if out is None else run_out)
        failure = _failure(summary)
        if failure:
            raise AuditFailed(failure, result)
        return result

    async def audit_async(self, records: Iterable[Mapping[str, Any]] | str | os.PathLike,
                          *, out: str | os.PathLike | None = None) -> AuditResult:
        """:meth:`audit` in a worker thread, for an event loop (a notebook's, a server's)."""
        return await asyncio.to_thread(self.audit, records, out=out)

    def close(self) -> None:
        """Let the judge runtime go (its clients close when no run holds them)."""
        self._runtime = None
        self._spec = None

    def __enter__(self) -> Auditor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def _values_errors() -> Iterator[None]:
    """A usage error of the job (jobs.UsageError) as the ValueError a Python caller expects;
    a missing input stays a FileNotFoundError."""
    try:
        yield
    except jobs.UsageError as exc:
        cause = exc.__cause__
        if isinstance(cause, FileNotFoundError):
            raise FileNotFoundError(str(exc)) from None
        raise ValueError(str(exc)) from None


def audit(records: Iterable[Mapping[str, Any]] | str | os.PathLike, judge: str = "auto", *,
          out: str | os.PathLike | None = None, beam_args: Sequence[str] = (),
          **options: Any) -> AuditResult:
    """Audit trace records in-process, as `rt4chart audit` would, and return the results.

    Args:
        records: trace dicts (`trace_id`, `route`, `question`, `contexts`, `answer`, ...), or
            the path of a trace file or glob.
        judge: offline, openai, package.module:factory, or auto.
        out: a folder to keep the run's tables in (as `--out`); default: nothing kept.
        beam_args: Beam pipeline options; the runner is local.
        **options: `rt4chart audit`'s options by their Python names (see :class:`Auditor`).

    Raises:
        AuditFailed: nothing could be judged (every record dead-lettered, or every answer
            incomplete); its `result` holds the dead letters and the reasons.
    """
    with Auditor(judge, beam_args=beam_args, **options) as auditor:
        return auditor.audit(records, out=out)
