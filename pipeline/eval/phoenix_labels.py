"""`rt4chart eval --gold phoenix:NAME --run RUN_DIR --phoenix-endpoint URL`: reviewers' labels
read back from Phoenix and the judge's agreement with them (`reviewers.py`).

The run's labelled answers are matched to Phoenix by trace id (the OTel trace id, as a run of
OTLP, Phoenix or `--input-format phoenix-api` spans keeps it): the root span of each trace
(`GET /v1/projects/{project}/spans?parent_id=null`), then its span annotations named NAME
(`GET /v1/projects/{project}/span_annotations?span_ids=..&include_annotation_names=NAME`,
paginated, retried as every request of the client is). Traces Phoenix does not have are
counted, not an error.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import dataclass

import orjson
from apache_beam.io.filesystems import FileSystems

from rt4chart.pipeline.annotate.verdicts import load_verdicts, otel_trace_id
from rt4chart.pipeline.eval import reviewers
from rt4chart.pipeline.results.load import table_reader
from rt4chart.pipeline.sources.phoenix_api import check
from rt4chart.pipeline.sources.phoenix_client import ENDPOINT_ENV, PhoenixClient, PhoenixTarget
from rt4chart.pipeline.storage.folder_scan import SUMMARY
from rt4chart.transforms.common.options_spec import option

REPORT = "agreement.json"
SPANS_PER_QUERY = 100


@dataclass(frozen=True)
class GoldOptions:
    """`eval --gold`: the reviewers' labels, and the run whose verdicts they are compared with."""

    gold: str | None = option(
        "--gold", metavar="phoenix:NAME",
        help="compare a run's verdicts with reviewers' labels: the span annotations named NAME "
             "on its traces' root spans in Phoenix (--phoenix-endpoint, --phoenix-project; "
             "labels ENT, CON, NIC, faithful, hallucinated); needs --run")
    gold_run: str | None = option(
        "--run", dest="gold_run", metavar="RUN_DIR",
        help="with --gold: the audit run (its folder, an eval's folder, or bq:PROJECT:DATASET)")


def _run_source(source: str) -> str:
    """An eval's folder holds its audit run in audit/."""
    inner = FileSystems.join(source, "audit")
    if FileSystems.exists(FileSystems.join(inner, SUMMARY)):
        return inner
    return source


def annotation_labels(client: PhoenixClient, project: str, spans: Sequence[str],
                      name: str) -> dict[str, list[object]]:
    """{span id: the labels of its annotations named `name`} (a label may be None)."""
    out: dict[str, list[object]] = {}
    url = f"/v1/projects/{project}/span_annotations"
    for i in range(0, len(spans), SPANS_PER_QUERY):
        cursor = None
        while True:
            params = {"span_ids": list(spans[i:i + SPANS_PER_QUERY]),
                      "include_annotation_names": [name], "limit": 1000,
                      **({"cursor": cursor} if cursor else {})}
            body = client.get_json(url, params)
            for note in body.get("data") or ():
                if note.get("name") == name and note.get("span_id"):
                    out.setdefault(note["span_id"], []).append(
                        (note.get("result") or {}).get("label"))
            cursor = body.get("next_cursor")
            if not cursor:
                break
    return out


def compare(target: PhoenixTarget, source: str, name: str, client: PhoenixClient,
            n_boot: int = 1000, seed: int = 0) -> dict:
    """The agreement report of the run at `source` with the reviews named `name`."""
    verdicts = load_verdicts(table_reader(_run_source(source)))
    judged = {v.trace_id: v.answer["label"] for v in verdicts.ready}
    ids = {tid: otel_trace_id(tid) for tid in judged}
    roots = client.root_spans(sorted({t for t in ids.values() if t}))
    found = {tid: roots[otel] for tid, otel in ids.items() if otel in roots}
    notes = annotation_labels(client, target.project, sorted(found.values()), name)
    labels = {tid: notes[span] for tid, span in found.items() if span in notes}
    matched = reviewers.match({t: judged[t] for t in found}, labels)
    report = reviewers.agreement(matched, n_boot, seed)
    return {**report, "gold": f"{reviewers.GOLD_PREFIX}{name}", "run": source,
            "project": target.project, "judge_undecided": len(verdicts.undecided),
            "not_in_phoenix": len(judged) - len(found),
            "conflicting_traces": matched.conflicting}


def run(args: argparse.Namespace) -> int:
    """The command; 0 when at least one answer was compared, else 1 (ValueError: usage)."""
    name = reviewers.gold_name(args.gold)
    if not args.gold_run:
        raise ValueError("--gold needs --run RUN_DIR: the run whose verdicts are compared")
    endpoint = args.phoenix_endpoint or os.environ.get(ENDPOINT_ENV)
    if not endpoint:
        raise ValueError(f"--gold phoenix:NAME needs the Phoenix URL: give --phoenix-endpoint "
                         f"or set ${ENDPOINT_ENV}")
    target = PhoenixTarget(endpoint, args.phoenix_project or "default")
    out = FileSystems.join(args.out, REPORT) if args.out else None
    if out and FileSystems.exists(out) and not args.overwrite:
        raise FileExistsError(f"{out} exists: pass --overwrite or choose another --out")
    with PhoenixClient(target) as client:
        check(target, client)
        report = compare(target, args.gold_run, name, client, args.bootstrap or 1000,
                         args.seed or 0)
    for line in reviewers.lines(report, name):
        print(line)
    if out:
        FileSystems.mkdirs(args.out) if not FileSystems.exists(args.out) else None
        with FileSystems.create(out) as fh:
            fh.write(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    return 0 if report["compared"] else 1
