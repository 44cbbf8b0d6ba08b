"""The span sources' typed configuration from the parsed command line (their options are
declared on `transforms/common/span_mapping.py`'s SpanMapping)."""

from __future__ import annotations

import argparse
import os

from rt4chart.pipeline.annotate.options import AnnotateOptions
from rt4chart.pipeline.run.config import AUDIT_FORMAT_HELP
from rt4chart.pipeline.sources.detect import INPUT_FORMATS
from rt4chart.pipeline.sources.phoenix_api import API_FORMAT, PhoenixSource
from rt4chart.pipeline.sources.phoenix_client import ENDPOINT_ENV, PhoenixTarget
from rt4chart.transforms.common.options_spec import from_values
from rt4chart.transforms.common.span_mapping import SpanMapping

__all__ = ["AUDIT_FORMATS", "AUDIT_FORMAT_HELP", "phoenix_source", "span_mapping"]


def span_mapping(args: argparse.Namespace) -> SpanMapping:
    """The span mapping the options give (ValueError on a bad value)."""
    return from_values(SpanMapping, args)


def phoenix_source(args: argparse.Namespace) -> PhoenixSource | None:
    """What `--input-format phoenix-api` reads (the endpoint and project are the write-back's
    options, `--phoenix-endpoint`, `--phoenix-project`); None for other formats (ValueError
    on a bad value, or a phoenix-api option without phoenix-api)."""
    if getattr(args, "input_format", None) != API_FORMAT:
        given = [flag for dest, flag in (("since", "--since"), ("until", "--until"),
                                         ("watermark", "--watermark"))
                 if getattr(args, dest, None)]
        if given:
            raise ValueError(f"{', '.join(given)}: only with --input-format {API_FORMAT}")
        return None
    endpoint = args.phoenix_endpoint or os.environ.get(ENDPOINT_ENV)
    if not endpoint:
        raise ValueError(f"--input-format {API_FORMAT} needs the Phoenix URL: give "
                         f"--phoenix-endpoint or set ${ENDPOINT_ENV}")
    opts = from_values(AnnotateOptions, args)
    target = PhoenixTarget(endpoint, opts.phoenix_project or "default")
    return from_values(PhoenixSource, args, target=target)


AUDIT_FORMATS = (*INPUT_FORMATS, API_FORMAT)
