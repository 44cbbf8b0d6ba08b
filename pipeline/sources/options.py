"""The span sources' typed configuration from the parsed command line (their options are
declared on `transforms/span_mapping.py`'s SpanMapping)."""

from __future__ import annotations

import argparse

from rt4chart.pipeline.config import AUDIT_FORMAT_HELP
from rt4chart.pipeline.sources.detect import INPUT_FORMATS
from rt4chart.transforms.options_spec import from_values
from rt4chart.transforms.span_mapping import SpanMapping

__all__ = ["AUDIT_FORMATS", "AUDIT_FORMAT_HELP", "span_mapping"]


def span_mapping(args: argparse.Namespace) -> SpanMapping:
    """The span mapping the options give (ValueError on a bad value)."""
    return from_values(SpanMapping, args)


AUDIT_FORMATS = INPUT_FORMATS
