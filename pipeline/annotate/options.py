"""The write-back's options (`--annotate phoenix|langfuse` on `audit` and `stream`, and the
`annotate phoenix` / `annotate langfuse` commands' own), declared once
(`transforms/common/options_spec.py`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from rt4chart.pipeline.annotate.langfuse import (
    BASE_URL_ENV,
    DEFAULT_HOST,
    HOST_ENV,
    PUBLIC_KEY_ENV,
    SECRET_KEY_ENV,
)
from rt4chart.pipeline.sources.phoenix_client import DEFAULT_NAME, ENDPOINT_ENV
from rt4chart.transforms.common.options_spec import Option, field_option, fields_options, option

SINKS = ("phoenix", "langfuse")
DEFAULT_INTERVAL_S = 60.0


@dataclass(frozen=True)
class AnnotateOptions:
    """Where and how often the verdicts are written back (span annotations, scores)."""

    annotate: str | None = option(
        "--annotate", choices=SINKS,
        help="also write the verdicts back onto the traces: span annotations (phoenix) or "
             "scores (langfuse), once the tables are written")
    phoenix_endpoint: str | None = option(
        "--phoenix-endpoint", metavar="URL",
        help=f"Phoenix server URL, e.g. http://127.0.0.1:6006 (default: ${ENDPOINT_ENV}); its "
             "key, if any, is read from $PHOENIX_API_KEY")
    phoenix_project: str | None = option(
        "--phoenix-project", metavar="NAME",
        help="the Phoenix project holding the traces (default: default)")
    langfuse_host: str | None = option(
        "--langfuse-host", metavar="URL",
        help=f"Langfuse URL (default: ${BASE_URL_ENV}, else ${HOST_ENV}, else {DEFAULT_HOST}); "
             f"its keys are read from ${PUBLIC_KEY_ENV} and ${SECRET_KEY_ENV}")
    langfuse_claim_scores: bool = option(
        "--langfuse-claim-scores", kind="flag", default=False,
        help="also one score NAME_claim per claim, on the trace's generation observation "
             "(asked of Langfuse)")
    annotation_name: str = option(
        "--annotation-name", default=DEFAULT_NAME,
        help="the span annotation's name, or the Langfuse scores' prefix (NAME_label, "
             "NAME_p_hallucinated) (default: %(default)s); a second write with the same name "
             "replaces the first")
    annotate_interval: float = option(  # `stream` only
        "--annotate-interval", default=DEFAULT_INTERVAL_S, parse=float, metavar="SECONDS",
        help="seconds between write-backs of new verdicts (default 60)")

    def __post_init__(self) -> None:
        if self.annotate_interval <= 0:
            raise ValueError("--annotate-interval must be > 0")


def _named(name: str, **changes: object) -> tuple[str, Option]:
    dest, opt = field_option(AnnotateOptions, name)
    return dest, dataclasses.replace(opt, **changes)


def annotate_options(streaming: bool = False) -> tuple[tuple[str, Option], ...]:
    """The options of `audit` (or `stream`, with `streaming`), in the order of their help."""
    sink = field_option(AnnotateOptions, "annotate")
    if streaming:
        sink = _named("annotate", help=sink[1].help.replace(", once the tables are written",
                                                             ", while the stream runs"))
    target = fields_options(AnnotateOptions, "phoenix_endpoint", "phoenix_project",
                            "langfuse_host", "langfuse_claim_scores", "annotation_name")
    interval = (field_option(AnnotateOptions, "annotate_interval"),) if streaming else ()
    return (sink, *target, *interval)


def command_options() -> tuple[tuple[str, Option], ...]:
    """The `annotate phoenix` command's options: the target's, named without `phoenix-`."""
    return (_named("phoenix_endpoint", flags=("--endpoint",)),
            _named("phoenix_project", flags=("--project",)),
            field_option(AnnotateOptions, "annotation_name"))


def langfuse_command_options() -> tuple[tuple[str, Option], ...]:
    """The `annotate langfuse` command's options, named without `langfuse-`."""
    return (_named("langfuse_host", flags=("--host",)),
            _named("langfuse_claim_scores", flags=("--claim-scores",)),
            field_option(AnnotateOptions, "annotation_name"))
