"""`rt4chart report OUT_DIR [--traces FILE...] [--compare OTHER_OUT_DIR] [--out report.html]`."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from apache_beam.io.filesystems import FileSystems

from rt4chart.pipeline.report.page import render
from rt4chart.pipeline.results.load import answer_counts, is_bigquery, load_run

logger = logging.getLogger(__name__)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the `report` command."""
    p = subparsers.add_parser(
        "report", help="write a self-contained HTML report of an audit run",
        description="Write a static HTML report (no server, no network) of an audit run: "
                    "rates per route, flagged traces, trace views; with --compare, a "
                    "comparison with an earlier run.")
    p.add_argument("out_dir", metavar="OUT_DIR",
                   help="output directory of `rt4chart audit` or `stream`, or the tables in "
                        "BigQuery as bq:PROJECT:DATASET (question and context come from its "
                        "traces table, written with --write-traces, or from --traces)")
    p.add_argument("--traces", nargs="+", metavar="FILE",
                   help="the run's trace files (JSONL or Parquet, globs); default: the run's "
                        "traces table (--write-traces), else the inputs recorded in "
                        "OUT_DIR/summary.json")
    p.add_argument("--compare", metavar="OTHER_OUT_DIR",
                   help="an earlier run (before a change) to compare OUT_DIR (after) with")
    p.add_argument("--compare-traces", nargs="+", metavar="FILE",
                   help="trace files of the --compare run (default: its summary.json inputs)")
    p.add_argument("--out", default="report.html", help="HTML file (default: %(default)s)")
    p.add_argument("--max-traces", type=int, default=200,
                   help="trace views for at most this many flagged traces, worst first "
                        "(default: %(default)s)")
    p.add_argument("--title", default="RT4CHART audit report")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Write the report; 0 on success, 2 when the run has no tables."""
    if not is_bigquery(args.out_dir) and not FileSystems.exists(
            FileSystems.join(args.out_dir.rstrip("/"), "answers")):
        logger.error("no answers table under %s: is it the output of `rt4chart audit`?",
                     args.out_dir)
        return 2
    main = load_run(args.out_dir, args.traces)
    if not main.traces and main.answers:
        logger.warning("no traces found (--traces, the traces table of a run audited with "
                       "--write-traces, or summary.json 'inputs'): the trace views will lack "
                       "the question and the context")
    other = load_run(args.compare, args.compare_traces) if args.compare else None
    html = render(main, other, max_traces=args.max_traces, title=args.title)
    with FileSystems.create(args.out) as fh:
        fh.write(html.encode("utf-8"))
    print(report_line(args.out, main.answers))
    return 0


def report_line(out: str, answers: list[dict]) -> str:
    """The closing line: the same counts as the overview's (`answer_counts`)."""
    total, complete, hallucinated = answer_counts(answers)
    return (f"report: {out} ({total} answers, {complete} complete, "
            f"{hallucinated} hallucinated)")
