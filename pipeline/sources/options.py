"""The span sources' command-line options (argparse API, so that they work on Beam's parser
too) and their typed configuration."""

from __future__ import annotations

import argparse

from rt4chart.pipeline.sources.detect import INPUT_FORMATS, STREAM_FORMATS
from rt4chart.transforms.span_mapping import SERVICE_NAME, SpanMapping


def add_source_args(p: argparse.ArgumentParser, stream: bool = False) -> None:
    """The span mapping options; `stream`: also the stream's --input-format and --trace-gap."""
    if stream:
        p.add_argument("--input-format", "--input_format", dest="input_format", default="json",
                       metavar="|".join(STREAM_FORMATS),
                       help="message bodies: json (one trace in rt4chart's schema) or otlp "
                            "(OTLP traces as the OpenTelemetry Collector's googlecloudpubsub "
                            "exporter publishes them, assembled by trace id)")
        p.add_argument("--trace-gap", "--trace_gap", dest="trace_gap", type=float,
                       default=SpanMapping().trace_gap_s,
                       help="otlp: a trace is complete when its root span has come and no "
                            "span for this many seconds (default %(default)s); without its "
                            "root by then it is a dead letter")
    p.add_argument("--route-attribute", "--route_attribute", dest="route_attribute",
                   default=SERVICE_NAME,
                   help="span formats: the attribute that gives a trace's route (default "
                        "%(default)s; metadata.KEY reads the root span's metadata)")
    p.add_argument("--trace-id-attribute", "--trace_id_attribute", dest="trace_id_attribute",
                   help="span formats: the attribute that gives a trace's id instead of the "
                        "OTel trace id (e.g. metadata.trace_id); traces without it keep theirs")


def span_mapping(args: argparse.Namespace) -> SpanMapping:
    """The span mapping the options give (ValueError on a bad value)."""
    gap = getattr(args, "trace_gap", None)
    return SpanMapping(args.route_attribute, args.trace_id_attribute,
                       *(() if gap is None else (gap,)))


AUDIT_FORMATS = INPUT_FORMATS
AUDIT_FORMAT_HELP = ("input format (default auto: by suffix, .parquet/.pq else JSON lines, or "
                     "what the file says it is: OTLP JSON, OpenInference span JSON, a Phoenix "
                     "spans export, a Langfuse export; see docs/sources.md)")
