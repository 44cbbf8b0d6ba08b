"""The command-line options of `audit`, `stream` and `eval` added to an argparse parser: the
command's own parser (`args.py`, `eval/cli.py`) or Beam's (`options.py`, its `PipelineOptions`
views). A stage's options are declared on its config (`transforms/options_spec.py`) and added
here with :func:`add_options`; this module imports neither `args` nor `options`.
"""

from __future__ import annotations

import argparse

from rt4chart.pipeline.annotate import cli as annotate_cli
from rt4chart.pipeline.chunks import add_chunk_args
from rt4chart.pipeline.config import StagesConfig, StreamConfig
from rt4chart.pipeline.eval import loaders
from rt4chart.pipeline.eval.runner import SPLITS
from rt4chart.pipeline.outputs import add_tables_args
from rt4chart.pipeline.sources.options import AUDIT_FORMAT_HELP, AUDIT_FORMATS, add_source_args
from rt4chart.pipeline.textfiles import DEFAULT_MAX_RECORD_BYTES, byte_size
from rt4chart.transforms.alerts import AlertConfig
from rt4chart.transforms.confirm import ConfirmConfig
from rt4chart.transforms.judges.judge_options import RATE_AND_PRICE, SHORTHAND, JudgeOptions
from rt4chart.transforms.limits import LimitsConfig
from rt4chart.transforms.options_spec import Option, declared, field_option
from rt4chart.transforms.segment import SegmentConfig
from rt4chart.transforms.verify_local import VerifyLocalConfig
from rt4chart.transforms.windows import WindowingConfig

_ACTIONS = {"value": "store", "flag": "store_true", "append": "append"}
VERBOSE = ("verbose", Option(("-v", "--verbose"), kind="flag", default=False))
_FIRST_JUDGE = ("judge", "judge_option", *SHORTHAND)
# The options `audit`, `stream` and `eval` share (the judge, the windows, local verification),
# in the order of their help; `eval` records them as `audit` takes them.
SHARED: tuple[tuple[str, Option], ...] = (
    *(field_option(JudgeOptions, n) for n in _FIRST_JUDGE),
    field_option(VerifyLocalConfig, "claims_per_call"),
    *declared(SegmentConfig),
    field_option(VerifyLocalConfig, "prune_windows"),
    VERBOSE,
    *(field_option(JudgeOptions, n) for n in RATE_AND_PRICE),
)


def add_option(p: argparse.ArgumentParser, dest: str, opt: Option) -> None:
    """One declared option on an argparse parser."""
    kwargs = {"dest": dest, "action": _ACTIONS[opt.kind], "help": opt.help}
    if opt.kind != "flag":
        kwargs.update(metavar=opt.metavar, choices=opt.choices, type=opt.parse)
    if opt.default is not None or opt.kind == "append":
        kwargs["default"] = opt.default
    if opt.required:
        kwargs["required"] = True
    p.add_argument(*opt.flags, **{k: v for k, v in kwargs.items()
                                  if v is not None or k == "help"})


def add_options(p: argparse.ArgumentParser, config: type) -> None:
    """Every option declared on the config class `config`."""
    for dest, opt in declared(config):
        add_option(p, dest, opt)


def add_audit_args(p: argparse.ArgumentParser) -> None:
    """The `audit` command's options (its input files are positional, added by the parser)."""
    p.add_argument("--example", action="store_true", help="audit the bundled example traces")
    p.add_argument("--redo", metavar="RUN_DIR",
                   help="audit again the traces whose answers were incomplete in an earlier "
                        "run (batch or stream output directory, or bq:PROJECT:DATASET), e.g. "
                        "after a judge outage")
    p.add_argument("--reuse", metavar="RUN_DIR",
                   help="reuse the judge results of an earlier run (its judge_cache table; a "
                        "directory or bq:PROJECT:DATASET) wherever a call's inputs, model and "
                        "prompts are unchanged")
    p.add_argument("--input-format", default="auto", choices=AUDIT_FORMATS, help=AUDIT_FORMAT_HELP)
    p.add_argument("--out", default="rt4chart-out", help="output directory (default: %(default)s)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the earlier run in --out, once this run has succeeded (it "
                        "writes to a staging folder first); files rt4chart did not write are "
                        "never removed")
    p.add_argument("--bigquery", metavar="PROJECT:DATASET",
                   help="also write the tables to this BigQuery dataset (file loads)")
    p.add_argument("--batch-api", action="store_true",
                   help="openai judge through the Batch API: half the price, a separate rate "
                        "limit, results within 24 h; resumable (state in OUT/_batch_state)")
    p.add_argument("--allow-partial-input", action="store_true",
                   help="audit what can be read of a truncated or corrupt input file (a "
                        "warning, and a dead letter saying how far it was read) instead of "
                        "failing the run")
    p.add_argument("--max-record-bytes", type=byte_size, default=DEFAULT_MAX_RECORD_BYTES,
                   metavar="SIZE",
                   help="a record (JSONL line, Parquet row) larger than this is a dead letter, "
                        "skipped while it is read, never parsed or held whole (default 16M; "
                        "units k, M, G)")
    p.add_argument("--progress-every", type=float, default=10.0, metavar="SECONDS",
                   help="seconds between progress lines while the job runs (default 10)")
    add_tables_args(p)
    add_judge_args(p)
    add_limits_args(p)
    annotate_cli.add_annotate_args(p)
    add_source_args(p)
    add_options(p, ConfirmConfig)
    add_chunk_args(p)


def add_stream_args(p: argparse.ArgumentParser) -> None:
    """The `stream` command's options."""
    for name in ("subscription", "out", "bigquery", "dead_letter_topic", "alerts_topic"):
        add_option(p, *field_option(StreamConfig, name))
    add_window_and_alert_args(p)
    for name in ("dedupe_horizon_s", "join_timeout_s"):
        add_option(p, *field_option(StagesConfig, name))
    add_option(p, *field_option(StreamConfig, "id_attribute"))
    add_tables_args(p)
    add_judge_args(p)
    add_limits_args(p)
    annotate_cli.add_annotate_args(p, streaming=True)
    add_source_args(p, stream=True)
    add_options(p, ConfirmConfig)


def add_window_and_alert_args(p: argparse.ArgumentParser) -> None:
    """The stream's rate windows, their firings and the alert rules."""
    add_options(p, WindowingConfig)
    add_options(p, AlertConfig)


def add_judge_args(p: argparse.ArgumentParser) -> None:
    """The judge and window options that `audit`, `stream` and `eval` share."""
    for dest, opt in SHARED:
        add_option(p, dest, opt)


def add_limits_args(p: argparse.ArgumentParser) -> None:
    """The work limits per trace (`transforms/limits.py`), shared by `audit` and `stream`."""
    add_options(p, LimitsConfig)


def add_eval_args(p: argparse.ArgumentParser) -> None:
    """The `eval` command's options (also its Beam options view, `options.EvalCommandOptions`)."""
    p.add_argument("--dataset", choices=loaders.FORMATS, help="the data's format")
    p.add_argument("--data", help="ragtruth / ragtruth-plus-plus: the directory of the files; "
                                  "jsonl: the file")
    p.add_argument("--split", default="test", choices=SPLITS,
                   help="part to report on (default test; thresholds are chosen on dev, so "
                        "test and all audit both parts)")
    p.add_argument("--tasks", help="comma-separated task types (default: all), e.g. QA,Summary")
    p.add_argument("--limit", type=int, help="audit at most N answers (whole sources, seeded)")
    p.add_argument("--seed", type=int, default=0, help="limit and bootstrap seed (default 0)")
    p.add_argument("--bootstrap", type=int, default=1000,
                   help="bootstrap resamples for the intervals (default 1000)")
    p.add_argument("--gold-label", action="append", default=[], metavar="RAW=CON|NIC",
                   help="map a raw gold label to CON or NIC (repeatable)")
    p.add_argument("--out", help="output directory of the eval run")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier eval in --out")
    add_judge_args(p)


class _Recorder:
    """Takes a command's `add_argument` calls and keeps the options' dests, in order."""

    def __init__(self) -> None:
        self.dests: list[str] = []

    def add_argument(self, *flags: str, **kwargs) -> None:
        if flags and flags[0].startswith("-"):
            long = next((f for f in flags if f.startswith("--")), flags[0])
            self.dests.append(kwargs.get("dest") or long.lstrip("-").replace("-", "_"))


def stream_dests() -> list[str]:
    """The dests of `rt4chart stream`'s options, in the order its parser has them."""
    recorder = _Recorder()
    add_stream_args(recorder)  # type: ignore[arg-type]  # add_argument is all it calls
    return recorder.dests


def declared_flex() -> dict[str, dict]:
    """The Flex Template parameters the declared options give, by dest (metadata.json form)."""
    out = {}
    for dest, opt in (*SHARED, *declared(LimitsConfig), *declared(ConfirmConfig),
                      *declared(WindowingConfig), *declared(AlertConfig),
                      *declared(StagesConfig), *declared(StreamConfig)):
        if opt.flex is not None:
            f = opt.flex
            param = {"name": f.name or dest, "label": f.label, "helpText": f.help,
                     "isOptional": f.optional}
            param.update({"regexes": list(f.regexes)} if f.regexes else {})
            param.update({"paramType": f.param_type} if f.param_type else {})
            out[dest] = param
    return out
