"""The Python entry: `rt4chart.audit(records, judge=..., **options)` and `rt4chart.Auditor`.

An audit from Python runs the job `rt4chart audit` runs (`jobs.run_audit` on Beam's in-process
runner) from the same frozen configuration objects the stages own: a caller may pass them
whole (`judge=JudgeSpec(...)`, `stages=StagesConfig(...)`, `segment=SegmentConfig(...)`,
`tables=TablesConfig(...)`, ...) or name `rt4chart audit`'s options as keywords
(`window_size=8`, `base_url=...`), a convenience built on the options' declarations
(`run/settings.py` `AUDIT`): the same defaults, the same parsers for text, the same builders
and checks as the command's. Nothing here goes through argparse, which is the command line's.

In-memory records enter the graph as elements (`sources/memory.py` `ReadMemory`): validated and
dead-lettered as a file's lines are, with no file in between. The run's tables go to a private
temporary folder, read back and removed before the call returns, unless `out=` keeps them.

Each call is a run of its own: its progress and counters are its own (`tally.run_scope`), so
audits may run at once in threads of one process (`audit_async`, a thread pool), each with its
own figures and the verdicts it would have alone. An :class:`Auditor` keeps what a notebook's
many small batches should not pay again: its options are checked once, the judge's endpoint is
probed once (the negotiated spec is reused), and the process's judge runtime is held between
calls, so the judge's client, its concurrency limit, rate limiter and circuit breaker carry
over from one call to the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import difflib
import os
import shutil
import tempfile
import threading
import types
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from apache_beam.options.pipeline_options import StandardOptions

from rt4chart.pipeline.results.runs import AuditResult, read_run_tables, result_of
from rt4chart.pipeline.run import jobs, settings
from rt4chart.pipeline.run.config import AuditConfig, StagesConfig
from rt4chart.pipeline.run.judge_probe import negotiate
from rt4chart.pipeline.sinks.options import TablesConfig
from rt4chart.pipeline.sources.memory import MemoryRecords, memory_records
from rt4chart.transforms.common.limits import LimitsConfig
from rt4chart.transforms.common.options_spec import Option, declared
from rt4chart.transforms.common.span_mapping import SpanMapping
from rt4chart.transforms.common.windows import WindowingConfig
from rt4chart.transforms.confirm import ConfirmConfig
from rt4chart.transforms.judges import runtime
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.judge_options import JudgeOptions
from rt4chart.transforms.sampling import SamplingConfig
from rt4chart.transforms.segment import SegmentConfig
from rt4chart.transforms.spend_cap import CapConfig
from rt4chart.transforms.verify_local import VerifyLocalConfig

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
# The stages' configs a caller may pass whole, by their StagesConfig field: (type, the config
# classes whose options the object replaces, which are then not taken as keywords too).
STAGE_OBJECTS: dict[str, tuple[type, tuple[type, ...]]] = {
    "segment": (SegmentConfig, (SegmentConfig, LimitsConfig)),
    "windowing": (WindowingConfig, (WindowingConfig,)),
    "verify_local": (VerifyLocalConfig, (VerifyLocalConfig,)),
    "confirm": (ConfirmConfig, (ConfirmConfig,)),
    "caps": (CapConfig, (CapConfig,)),
    "sampling": (SamplingConfig, (SamplingConfig,)),
}
# Every config a caller may pass whole: (its type, the config classes whose options it holds).
OBJECTS: dict[str, tuple[type, tuple[type, ...]]] = {
    **STAGE_OBJECTS, "tables": (TablesConfig, (TablesConfig,)),
    "spans": (SpanMapping, (SpanMapping,)), "judge": (JudgeSpec, (JudgeOptions,)),
    "stages": (StagesConfig, (StagesConfig, JudgeOptions,
                              *(c for _, owners in STAGE_OBJECTS.values() for c in owners))),
}


class AuditFailed(RuntimeError):
    """The audit ran but judged nothing: every record was dead-lettered, or every answer is
    incomplete (the judge failed). `result` holds what the run wrote (the dead letters, the
    incomplete answers and their reasons); `rt4chart audit` exits 1 for the same runs."""

    def __init__(self, message: str, result: AuditResult):
        super().__init__(message)
        self.result = result


def _text(dest: str, opt: Option, value: Any) -> str:
    """A Python value as the text the option's parser takes (a number as its digits)."""
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
    """A keyword argument as the value its declared option gives (`Option.parse`, the
    parser the command line uses too): text through the parser, a number as its text (so
    `window_size=8` and `"8"` are alike); a switch takes a bool; a repeatable option a list,
    one value or (`judge_option`) a mapping of KEY: VALUE."""
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
        " (the options are `rt4chart audit`'s, named as Python identifiers: window_size=8; "
        f"configs whole: judge, stages, tables, spans, {', '.join(STAGE_OBJECTS)})")


def keyword_values(options: Mapping[str, Any]) -> dict[str, Any]:
    """`rt4chart audit`'s options given as keywords, as their values (see `option_value`).

    Raises:
        TypeError: an unknown option, or a value of the wrong kind.
        ValueError: a value its option's parser refuses, or an option the API does not take.
    """
    declared_options = dict(settings.AUDIT)
    values = {}
    for name, value in options.items():
        if name not in declared_options or name == "out":
            raise TypeError(_unknown(name, (d for d in declared_options if d not in REFUSED)))
        if name in REFUSED:
            raise ValueError(f"{name} is not an option of rt4chart.audit: {REFUSED[name]}")
        values[name] = option_value(name, declared_options[name], value)
    return values


def option_values(inputs: Sequence[str], out: str, given: Mapping[str, Any]) -> Any:
    """Every option's value as `rt4chart audit INPUTS --out OUT` with `given` (keyword values)
    would have it: the declared defaults, then `given`. An object with the options' dests as
    attributes, which `settings.audit_config` reads as it reads the command line's."""
    values = {k: list(v) if isinstance(v, list) else v
              for k, v in settings.defaults(settings.AUDIT).items()}
    return types.SimpleNamespace(**{**values, **given, "inputs": list(inputs), "out": out})


def _owned_dests(classes: Iterable[type]) -> set[str]:
    return {dest for cls in classes for dest, _ in declared(cls)}


def _check_objects(judge: Any, objects: Mapping[str, Any], keywords: Mapping[str, Any]) -> None:
    """TypeError for a config object of the wrong type, or a keyword option that a config
    given whole already holds (which of the two would hold is not for us to guess)."""
    if not isinstance(judge, str | JudgeSpec):
        raise TypeError(f"judge: a name (offline, openai, auto, package.module:factory) or a "
                        f"JudgeSpec, got {type(judge).__name__}")
    given = dict(objects, **({"judge": judge} if isinstance(judge, JudgeSpec) else {}))
    for name, value in given.items():
        expected, owners = OBJECTS[name]
        if not isinstance(value, expected):
            raise TypeError(f"{name}: a {expected.__name__}, got {type(value).__name__}")
        both = sorted(_owned_dests(owners) & set(keywords))
        if both:
            raise TypeError(f"{', '.join(both)}: already held by the {name}= given; set it "
                            f"there (dataclasses.replace) or drop {name}=")


class Auditor:
    """Audits batches of traces in-process with one configuration, keeping the judge client
    and its limits between calls (see the module's docstring).

    Args:
        judge: offline, openai, package.module:factory, or auto (openai when an endpoint is
            configured: OPENAI_BASE_URL, OPENAI_API_KEY or base_url=); or a `JudgeSpec`.
        stages: the stages' whole configuration (`StagesConfig`), instead of their keywords.
        tables: the output tables' settings (`TablesConfig`); spans: a `SpanMapping`.
        beam_args: Beam pipeline options (`["--direct_num_workers=2"]`); the runner is local.
        **options: `rt4chart audit`'s options by their Python names (`window_size=8`,
            `base_url="http://127.0.0.1:8080/v1"`, `judge_option={"timeout_s": 60}`), or a
            stage's config whole by its StagesConfig field (`segment=SegmentConfig(...)`,
            `verify_local=`, `confirm=`, `caps=`, `sampling=`, `windowing=`).

    Raises:
        TypeError, ValueError: a bad option, at once (nothing has run).
    """

    def __init__(self, judge: str | JudgeSpec = "auto", *, stages: StagesConfig | None = None,
                 tables: TablesConfig | None = None, spans: SpanMapping | None = None,
                 beam_args: Sequence[str] = (), **options: Any):
        objects = {k: options.pop(k) for k in list(options) if k in STAGE_OBJECTS}
        objects.update({k: v for k, v in (("stages", stages), ("tables", tables),
                                          ("spans", spans)) if v is not None})
        self._values = keyword_values(options)
        _check_objects(judge, objects, self._values)
        if isinstance(judge, str):
            self._values["judge"] = judge
        if self._judge_given(judge, objects):  # the keywords' judge is not used: none resolved
            self._values["judge"] = "offline"
        self._judge = judge if isinstance(judge, JudgeSpec) else None
        # a judge named (not a JudgeSpec), unless stages= holds the judge: None
        self._judge_named = None if self._judge_given(judge, objects) else judge
        self._objects = objects
        self._beam_args = list(beam_args)
        self._lock = threading.Lock()  # the endpoint probed once, whichever thread asks first
        self._spec = None  # the judge spec negotiated with its endpoint, once
        self._runtime = None  # held between calls: the judges, their clients and limits
        self.config((PLACEHOLDER,), os.path.join(tempfile.gettempdir(), "rt4chart-check"))
        runner = str(self._beam().view_as(StandardOptions).runner)
        if "Dataflow" in runner:
            raise ValueError("rt4chart.audit runs in-process; use `rt4chart audit` for "
                             "Dataflow")

    @staticmethod
    def _judge_given(judge: str | JudgeSpec, objects: Mapping[str, Any]) -> bool:
        """Whether the judge is given whole: a JudgeSpec, or `stages=` with no judge named."""
        return isinstance(judge, JudgeSpec) or ("stages" in objects and judge == "auto")

    def _beam(self):
        return jobs.beam_options(list(self._beam_args))

    def config(self, inputs: Sequence[str], out: str, records: MemoryRecords | None = None,
               keep_traces: bool = False) -> AuditConfig:
        """The run's typed configuration (ValueError on a bad value): the keywords built as
        the command's options are, then the configs given whole put in their place.
        `keep_traces`: in-memory records kept in `out=`, where they exist nowhere else: the
        traces table is written too, unless write_traces=False or tables= say otherwise."""
        given = dict(self._values)
        if keep_traces:
            given.setdefault("write_traces", True)
        with _values_errors():
            config = settings.audit_config(option_values(inputs, out, given), records=records)
            return self._with_objects(config)

    def _with_objects(self, config: AuditConfig) -> AuditConfig:
        objects = self._objects
        stages = objects.get("stages", config.stages)
        judge = self._judge or (stages.judge if self._judge_named is None
                                else config.stages.judge)
        parts = {k: v for k, v in objects.items() if k in STAGE_OBJECTS}
        stages = dataclasses.replace(stages, **parts, judge=judge)
        return dataclasses.replace(config, stages=stages,
                                   tables=objects.get("tables", config.tables),
                                   spans=objects.get("spans", config.spans))

    def _prepared(self, config: AuditConfig) -> AuditConfig:
        with self._lock:
            if self._spec is None:
                self._spec, _ = negotiate(config.judge)  # JudgeUnusable: nothing has run
                self._runtime = runtime.acquire(runtime.runtime_handle())
            spec = self._spec
        return dataclasses.replace(config, stages=dataclasses.replace(config.stages, judge=spec))

    def audit(self, records: Iterable[Mapping[str, Any]] | str | os.PathLike,
              *, out: str | os.PathLike | None = None) -> AuditResult:
        """Audit `records` (trace dicts, or the path of a trace file or glob in any format
        `rt4chart audit` reads) and return the results. `out`: also keep the run's tables
        there (a folder as `--out`); without it nothing is written outside a temporary folder
        removed before returning. Calls may run at once in threads, each a run of its own.

        Raises:
            AuditFailed: nothing could be judged (its `result` says why).
            TypeError, ValueError: bad records or options; FileNotFoundError: no such input.
        """
        in_memory = not isinstance(records, str | os.PathLike)
        if in_memory and isinstance(records, bytes | Mapping):
            raise TypeError("records: give an iterable of trace dicts, or a path")
        memory = memory_records(records) if in_memory else None
        if memory is not None and not len(memory):
            raise ValueError("no records to audit")
        inputs = () if in_memory else (os.fspath(records),)
        with _work_folder() as work:
            run_out = os.path.join(work, "run") if out is None else os.fspath(out)
            config = self._prepared(self.config(inputs, run_out, memory,
                                                keep_traces=out is not None and in_memory))
            with _values_errors():
                summary = jobs.run_audit(config, self._beam())
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
def _work_folder() -> Iterator[str]:
    """A private temporary folder for the run's tables, removed on the way out."""
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


def audit(records: Iterable[Mapping[str, Any]] | str | os.PathLike,
          judge: str | JudgeSpec = "auto", *, out: str | os.PathLike | None = None,
          beam_args: Sequence[str] = (), **options: Any) -> AuditResult:
    """Audit trace records in-process, as `rt4chart audit` would, and return the results.

    Args:
        records: trace dicts (`trace_id`, `route`, `question`, `contexts`, `answer`, ...), or
            the path of a trace file or glob.
        judge: offline, openai, package.module:factory, or auto; or a `JudgeSpec`.
        out: a folder to keep the run's tables in (as `--out`); default: nothing kept.
        beam_args: Beam pipeline options; the runner is local.
        **options: `rt4chart audit`'s options by their Python names, or configs whole
            (`stages=`, `segment=`, `tables=`, ...; see :class:`Auditor`).

    Raises:
        AuditFailed: nothing could be judged (every record dead-lettered, or every answer
            incomplete); its `result` holds the dead letters and the reasons.
    """
    with Auditor(judge, beam_args=beam_args, **options) as auditor:
        return auditor.audit(records, out=out)
