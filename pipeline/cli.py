"""The `rt4chart` command line.

`rt4chart audit INPUT... --out DIR` runs the batch audit; any option it does not know is passed
to Beam (`--runner`, `--direct_num_workers`, Dataflow options, ...).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
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
from rt4chart.pipeline.config import AuditConfig
from rt4chart.pipeline.io import prepare_output
from rt4chart.pipeline.summary import summarise
from rt4chart.schemas.records import RunInfo
from rt4chart.transforms.judges.base import JudgeSpec, judge_model
from rt4chart.transforms.segment import SegmentConfig

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
    p.add_argument("--input-format", default="auto", choices=("auto", "jsonl", "parquet"),
                   help="input format (default: by suffix, .parquet/.pq else JSON lines)")
    p.add_argument("--out", default="rt4chart-out", help="output directory (default: %(default)s)")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier run's tables")
    p.add_argument("--judge", default="auto",
                   help="offline | openai | package.module:factory (default: openai when an "
                        "endpoint is configured, else offline)")
    p.add_argument("--judge-option", action="append", default=[], metavar="KEY=VALUE",
                   help="option passed to the judge factory (repeatable)")
    p.add_argument("--model", help="openai judge: model (default gpt-4o-mini)")
    p.add_argument("--base-url", dest="base_url", help="openai judge: endpoint base URL")
    p.add_argument("--rpm", help="openai judge: requests per minute per worker (default 500)")
    p.add_argument("--tpm", help="openai judge: tokens per minute per worker (default 200000)")
    p.add_argument("--max-concurrency", dest="max_concurrency",
                   help="openai judge: calls in flight per worker (default 32)")
    p.add_argument("--window-size", type=int, default=25, help="W, sentences (default 25)")
    p.add_argument("--window-overlap", type=int, default=10, help="O, sentences (default 10)")
    p.add_argument("-v", "--verbose", action="store_true")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="rt4chart", allow_abbrev=False,
                                   description="Claim-level hallucination audit of RAG traces.")
    root.add_argument("--version", action="version", version=f"rt4chart {__version__}")
    sub = root.add_subparsers(dest="command", required=True)
    _audit_parser(sub)
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
    if shorthand and name != "openai":
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
    if std.runner is None and not std.streaming:
        # Batch on the in-process portable runner: the default would first try to download
        # Prism, which fails offline.
        std.runner = "FnApiRunner"
    return options


def run_audit(args: argparse.Namespace, beam_args: list[str]) -> int:
    inputs = tuple(args.inputs) + ((example_traces(),) if args.example else ())
    spec = judge_spec(args)
    config = AuditConfig(
        inputs=inputs, out=args.out, judge=spec, overwrite=args.overwrite,
        input_format=args.input_format,
        segment=SegmentConfig(args.window_size, args.window_overlap),
    )
    judge = spec.build()  # fail fast on a bad judge or missing key, before Beam starts
    run = RunInfo(judge_model(judge, spec), prompts.prompt_hash())
    prepare_output(config.out, config.overwrite)
    logger.info("auditing %s with judge %s (model %s), prompts %s, W=%d O=%d -> %s",
                ", ".join(inputs), spec.name, run.judge_model, run.prompt_hash,
                config.segment.window_size, config.segment.window_overlap, config.out)
    started = time.monotonic()
    with beam.Pipeline(options=beam_options(beam_args)) as pipeline:
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
