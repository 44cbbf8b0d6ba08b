"""`rt4chart annotate phoenix RUN_DIR|bq:P:D --endpoint URL [--project NAME]`, `rt4chart
annotate langfuse RUN_DIR|bq:P:D [--host URL] [--claim-scores]`, and the `--annotate
phoenix|langfuse` option of `audit` (after the tables are written) and `stream` (every
`--annotate-interval` seconds while it runs, and once more when it stops).

Registered by `add_parser` (the commands; the options of `audit`/`stream` are declared in
`annotate/options.py`); `target` turns the options into a :class:`PhoenixTarget` or
:class:`LangfuseTarget` (or None).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from apache_beam.io.filesystems import FileSystems

from rt4chart.pipeline.annotate import langfuse, langfuse_write
from rt4chart.pipeline.annotate.langfuse import LangfuseError, LangfuseTarget
from rt4chart.pipeline.annotate.options import (
    AnnotateOptions,
    command_options,
    langfuse_command_options,
)
from rt4chart.pipeline.annotate.phoenix import AnnotateResult, write_back
from rt4chart.pipeline.annotate.verdicts import (
    TraceVerdict,
    Verdicts,
    load_verdicts,
)
from rt4chart.pipeline.options.flags import VERBOSE_HELP, add_all
from rt4chart.pipeline.results.load import is_bigquery, table_reader
from rt4chart.pipeline.sources.phoenix_client import (
    ENDPOINT_ENV,
    PhoenixClient,
    PhoenixError,
    PhoenixTarget,
)
from rt4chart.pipeline.storage.run_reads import read_one_run
from rt4chart.transforms.common.options_spec import from_values
from rt4chart.transforms.common.redact import redact_configured

logger = logging.getLogger(__name__)
Target = PhoenixTarget | LangfuseTarget

def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register `annotate phoenix` on the root parser's sub-commands."""
    p = sub.add_parser("annotate", allow_abbrev=False,
                       help="write a run's verdicts onto the traces where they are kept",
                       description="Write each audited answer's verdict back to the "
                                   "observability tool that holds its trace.")
    kinds = p.add_subparsers(dest="annotate", required=True)
    ph = kinds.add_parser(
        "phoenix", allow_abbrev=False, help="span annotations in Arize Phoenix",
        description="Annotate the root span of each audited trace (trace_id = the "
                    "OpenTelemetry trace id) in Phoenix: label ENT/CON/NIC, score "
                    "p_hallucinated, the non-ENT claims with spans and evidence. Idempotent.")
    ph.add_argument("source", metavar="RUN_DIR|bq:P:D",
                    help="output directory of `rt4chart audit`/`stream`, or its BigQuery "
                         "dataset as bq:PROJECT:DATASET")
    add_all(ph, command_options())
    ph.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    lf = kinds.add_parser(
        "langfuse", allow_abbrev=False, help="scores in Langfuse",
        description="Score each audited trace in Langfuse (trace_id = the Langfuse trace id): "
                    "NAME_label ENT/CON/NIC/incomplete with the non-ENT claims, spans and "
                    "evidence as its comment, NAME_p_hallucinated. Keys from "
                    "$LANGFUSE_PUBLIC_KEY and $LANGFUSE_SECRET_KEY. Idempotent.")
    lf.add_argument("source", metavar="RUN_DIR|bq:P:D",
                    help="output directory of `rt4chart audit`/`stream`, or its BigQuery "
                         "dataset as bq:PROJECT:DATASET")
    add_all(lf, langfuse_command_options())
    lf.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    return p


def target(args: argparse.Namespace) -> Target | None:
    """Where `--annotate` writes, or None when it is not given; ValueError on a bad option."""
    if getattr(args, "annotate", None) is None:
        return None
    if args.annotate == "langfuse":
        host = getattr(args, "langfuse_host", None) or langfuse.default_host()
        from_values(AnnotateOptions, args)  # ValueError on a bad --annotate-interval
        langfuse.check_keys()  # before an audit runs, not after
        return LangfuseTarget(host, args.annotation_name,
                              bool(getattr(args, "langfuse_claim_scores", False)))
    endpoint = args.phoenix_endpoint or os.environ.get(ENDPOINT_ENV)
    if not endpoint:
        raise ValueError(f"annotate phoenix needs the Phoenix URL: give --endpoint (on audit "
                         f"and stream: --phoenix-endpoint) or set ${ENDPOINT_ENV}")
    opts = from_values(AnnotateOptions, args)  # ValueError on a bad --annotate-interval
    return PhoenixTarget(endpoint, opts.phoenix_project or "default", opts.annotation_name)


def annotate(target: Target, source: str, client: Any = None,
             fresh: Callable[[Verdicts], Verdicts] | None = None,
             ) -> tuple[AnnotateResult | langfuse_write.LangfuseResult, list[TraceVerdict]]:
    """Write the verdicts of the run at `source` (a folder or bq:P:D) to Phoenix or Langfuse;
    `fresh` narrows them (the stream's passes leave out what they already wrote). The result
    and the verdicts written."""
    verdicts = read_one_run(source, lambda: load_verdicts(table_reader(source)))
    verdicts = fresh(verdicts) if fresh else verdicts
    with contextlib.ExitStack() as stack:
        if isinstance(target, LangfuseTarget):
            client = client or stack.enter_context(langfuse.LangfuseClient(target))
            return langfuse_write.write_back(verdicts, target, client)
        client = client or stack.enter_context(PhoenixClient(target))
        return write_back(verdicts, target, client)


def _check_source(source: str) -> None:
    if not is_bigquery(source) and not FileSystems.exists(
            FileSystems.join(source.rstrip("/"), "answers")):
        raise ValueError(f"no answers table under {source}: is it the output of "
                         f"`rt4chart audit` or `stream`?")


def run(args: argparse.Namespace, beam_args: list[str]) -> int:
    """`annotate phoenix` or `annotate langfuse`."""
    if args.annotate == "langfuse":
        return run_langfuse(args, beam_args)
    return run_phoenix(args, beam_args)


def run_langfuse(args: argparse.Namespace, beam_args: list[str]) -> int:
    """`annotate langfuse`: as `annotate phoenix`, 0 when done (traces whose scores Langfuse
    refused are counted and listed on stderr, not an error), 1 when Langfuse refuses the keys,
    cannot be reached or scores none of the run's traces; a usage error (ValueError) before."""
    if beam_args:
        raise ValueError(f"annotate langfuse: unrecognized arguments: {' '.join(beam_args)}")
    lf = target(args)
    _check_source(args.source)
    result, _ = annotate(lf, args.source)
    report_langfuse(result, lf)
    return 1 if result.failed and not result.annotated else 0


def report_langfuse(result: langfuse_write.LangfuseResult, lf: LangfuseTarget) -> None:
    """The write-back's line on stdout; its failures, with Langfuse's reasons, on stderr."""
    print(result.line(lf))
    if result.failed:
        print(f"rt4chart: {len(result.failed)} trace(s) not scored in Langfuse:",
              file=sys.stderr)
        for line in result.failures():
            print(redact_configured(line), file=sys.stderr)


def run_phoenix(args: argparse.Namespace, beam_args: list[str]) -> int:
    """`annotate phoenix`: 0 when done (traces Phoenix lacks are counted, not an error), 1 when
    Phoenix fails or holds none of the run's traces; a usage error (ValueError) before."""
    # No pipeline runs here: what was split off as Beam's (`--project` is also a Beam
    # option) is this command's.
    extra = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    extra.add_argument("--project", dest="phoenix_project")
    known, unknown = extra.parse_known_args(beam_args)
    if unknown:
        raise ValueError(f"annotate phoenix: unrecognized arguments: {' '.join(unknown)}")
    if known.phoenix_project:
        args.phoenix_project = known.phoenix_project
    phoenix = target(args)
    _check_source(args.source)
    result, _ = annotate(phoenix, args.source)
    print(result.line(phoenix))
    if result.not_found and not result.annotated:
        print(f"rt4chart: none of the run's traces is in Phoenix project "
              f"{phoenix.project!r}: check --project and that the traces' ids are their "
              f"OpenTelemetry trace ids", file=sys.stderr)
        return 1
    return 0


def after_audit(where: Target | None, out: str) -> None:
    """`audit --annotate phoenix|langfuse`: the write-back once the run's tables are in
    `out`."""
    if isinstance(where, LangfuseTarget):
        report_langfuse(annotate(where, out)[0], where)
    elif where is not None:
        print(annotate(where, out)[0].line(where))


class StreamWriteBack:
    """The stream's periodic write-back: each pass writes the verdicts not written yet (a
    trace's latest audited_at), and retries the traces Phoenix did not have yet."""

    def __init__(self, phoenix: Target, source: str, client: Any = None):
        self._target, self._source, self._client = phoenix, source, client
        self._written: dict[str, object] = {}

    def _fresh(self, verdicts: Verdicts) -> Verdicts:
        def new(vs: list[TraceVerdict]) -> list[TraceVerdict]:
            return [v for v in vs if self._written.get(v.trace_id) != v.answer.get("audited_at")]

        undecided = new(verdicts.undecided_verdicts)
        return Verdicts(new(verdicts.ready), [v.trace_id for v in undecided], verdicts.pending,
                        undecided)

    def run_once(self) -> AnnotateResult | langfuse_write.LangfuseResult | None:
        """One pass; None (logged) when the sink or the tables fail: the next pass retries."""
        try:
            result, written = annotate(self._target, self._source, self._client, self._fresh)
        except (PhoenixError, LangfuseError, OSError, ValueError) as exc:
            logger.warning("annotate: write-back failed, retried next pass: %s", exc)
            return None
        for v in written:
            self._written[v.trace_id] = v.answer.get("audited_at")
        if written:
            logger.info("%s", result.line(self._target))
        return result


@contextlib.contextmanager
def periodic(phoenix: Target | None, args: argparse.Namespace) -> Iterator[None]:
    """`stream --annotate phoenix|langfuse`: a pass every --annotate-interval seconds while the body
    (the stream) runs, and a last one when it ends. A job submitted to Dataflow outlives this
    launcher: there, run `rt4chart annotate phoenix bq:P:D` on a schedule instead."""
    if phoenix is None:
        yield
        return
    source = args.out or f"bq:{args.bigquery}"
    back, stop = StreamWriteBack(phoenix, source), threading.Event()

    def loop() -> None:
        while not stop.wait(args.annotate_interval):
            if args.out is None or FileSystems.exists(FileSystems.join(source, "answers")):
                back.run_once()

    thread = threading.Thread(target=loop, name="annotate", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        if args.out is None or FileSystems.exists(FileSystems.join(source, "answers")):
            back.run_once()
