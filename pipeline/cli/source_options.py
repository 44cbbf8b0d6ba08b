"""The span sources' typed configuration from the parsed command line (their options are
declared on `transforms/common/span_mapping.py`'s SpanMapping)."""

from __future__ import annotations

from rt4chart.pipeline.run.config import AUDIT_FORMAT_HELP
from rt4chart.pipeline.run.settings import phoenix_source, span_mapping
from rt4chart.pipeline.sources.detect import INPUT_FORMATS
from rt4chart.pipeline.sources.phoenix_api import API_FORMAT

__all__ = ["AUDIT_FORMATS", "AUDIT_FORMAT_HELP", "phoenix_source", "span_mapping"]


AUDIT_FORMATS = (*INPUT_FORMATS, API_FORMAT)
