"""An earlier run's tables, from a run folder or from BigQuery: what `--redo`, `--reuse` and
`report` read.

A source is a run folder (Parquet tables, either layout: tablefiles.py) or a BigQuery dataset
written to with `--bigquery`, named `bq:PROJECT:DATASET` (or `bq:PROJECT.DATASET`). A dataset
collects every run that wrote to it (a stream and its backfills), so it is read as one history:

- `--redo`: the traces (as received, from the dead letters of stage `judge`) whose latest
  answer is still incomplete, the latest dead letter per trace. A trace redone since with
  success is not redone again. And the traces of the `skipped` table (a spend cap did not let
  them start: transforms/spend_cap.py) that have no answer since.
- `--reuse`: the judge_cache rows of the current judge model and prompts (the only ones whose
  keys can match), one per key, read by a pipeline step in pages (not through the launcher).
- `report`: the tables, and from the opt-in `traces` table the question and the context.

`client` arguments are test hooks: a google-cloud-bigquery client, or Beam's test client of
`graph.build` (its `gcp` attribute is one); by default a client of the dataset's project with
the environment's credentials.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import apache_beam as beam

from rt4chart.pipeline.results.summary import read_table
from rt4chart.pipeline.storage.table_files import table_files, table_patterns
from rt4chart.schemas.columns import from_dict
from rt4chart.schemas.records import RunInfo
from rt4chart.schemas.rows import JudgeCacheRow
from rt4chart.transforms.aggregate import REDO_STAGE
from rt4chart.transforms.common.guard import StorageDoFn
from rt4chart.transforms.reuse import ReadCache

BIGQUERY_PREFIX = "bq:"
PAGE_ROWS = 10_000  # rows fetched from BigQuery per page


def is_bigquery(source: str) -> bool:
    """Whether a source names a BigQuery dataset (bq:PROJECT:DATASET)."""
    return source.startswith(BIGQUERY_PREFIX)


def bigquery_dataset(source: str) -> tuple[str, str]:
    """(project, dataset) of bq:PROJECT:DATASET; ValueError if malformed."""
    from rt4chart.pipeline.storage.bigquery import parse_dataset

    return parse_dataset(source[len(BIGQUERY_PREFIX):])


def bigquery_client(project: str, client=None):
    """A google-cloud-bigquery client: the test hook's (see the module's docstring), else a
    new one for `project`."""
    if client is not None:
        return getattr(client, "gcp", client)
    from rt4chart.pipeline.storage.gcp_extra import require

    require("bigquery", f"a BigQuery run (bq:{project}:...)")
    from google.cloud import bigquery

    return bigquery.Client(project=project)


def _parameters(params: Iterable[tuple[str, str, Any]]) -> list:
    from google.cloud import bigquery

    out = []
    for name, type_, value in params:
        if isinstance(value, list | tuple):
            out.append(bigquery.ArrayQueryParameter(name, type_, list(value)))
        else:
            out.append(bigquery.ScalarQueryParameter(name, type_, value))
    return out


def query_rows(client, sql: str, params: Iterable[tuple[str, str, Any]] = ()) -> Iterator[dict]:
    """A standard-SQL query's rows as dicts, page by page; `params` as (name, type, value)."""
    from google.cloud import bigquery

    config = bigquery.QueryJobConfig(query_parameters=_parameters(params))
    for row in client.query(sql, job_config=config).result(page_size=PAGE_ROWS):
        yield dict(row.items())


def _table_ref(source: str, name: str) -> str:
    project, dataset = bigquery_dataset(source)
    return f"`{project}.{dataset}.{name}`"


# --redo ------------------------------------------------------------------------------------

REDO_SQL = """
SELECT trace_id, raw FROM {dead_letters}
WHERE stage = @stage AND trace_id IN (
  SELECT trace_id FROM (
    SELECT trace_id, status, ROW_NUMBER() OVER (
      PARTITION BY trace_id ORDER BY audited_at DESC) AS latest
    FROM {answers})
  WHERE latest = 1 AND status != 'ok')
QUALIFY ROW_NUMBER() OVER (PARTITION BY trace_id ORDER BY received_at DESC) = 1
"""


SKIPPED_SQL = """
SELECT trace_id, raw FROM {skipped}
WHERE trace_id NOT IN (SELECT trace_id FROM {answers})
QUALIFY ROW_NUMBER() OVER (PARTITION BY trace_id ORDER BY skipped_at DESC) = 1
"""


def _bigquery_skipped(source: str, gcp) -> dict[str, str]:
    """{trace_id: raw} of a dataset's skipped traces never answered (none without the table)."""
    from google.api_core.exceptions import NotFound

    sql = SKIPPED_SQL.format(skipped=_table_ref(source, "skipped"),
                             answers=_table_ref(source, "answers"))
    try:
        return {row["trace_id"]: row["raw"] for row in query_rows(gcp, sql)}
    except NotFound:
        return {}


def redo_traces(source: str, client=None) -> list[str]:
    """The traces (as received) of an earlier run's incomplete answers, the latest per trace,
    and of its skipped traces never answered, from a run folder or a BigQuery dataset, once
    each; ValueError if there is none."""
    if is_bigquery(source):
        project, _ = bigquery_dataset(source)
        gcp = bigquery_client(project, client)
        sql = REDO_SQL.format(dead_letters=_table_ref(source, "dead_letters"),
                              answers=_table_ref(source, "answers"))
        rows = query_rows(gcp, sql, [("stage", "STRING", REDO_STAGE)])
        latest = {row["trace_id"]: row["raw"] for row in rows}
        skipped = _bigquery_skipped(source, gcp)
    else:
        latest = {}
        for row in read_table(source, "dead_letters").to_pylist():
            if row["stage"] == REDO_STAGE:
                latest[row["trace_id"]] = row["raw"]
        answered = set(read_table(source, "answers").column("trace_id").to_pylist())
        skipped = {row["trace_id"]: row["raw"] for row in read_table(source, "skipped")
                   .to_pylist() if row["trace_id"] not in answered}
    latest.update({tid: raw for tid, raw in skipped.items() if tid not in latest})
    if not latest:
        raise ValueError(f"{source} has no incomplete answer nor skipped trace to redo")
    return list(latest.values())


# --reuse -----------------------------------------------------------------------------------

CACHE_SQL = """
SELECT * FROM {judge_cache}
WHERE (judge_model = @judge_model AND prompt_hash = @prompt_hash)
   OR (judge_model = @confirm_model AND prompt_hash = @confirm_hash)
QUALIFY ROW_NUMBER() OVER (PARTITION BY key ORDER BY created_at DESC) = 1
"""


def check_reuse_source(source: str, out: str, client=None) -> None:
    """ValueError unless `source` holds a judge_cache table with rows (and is not --out)."""
    if is_bigquery(source):
        from google.api_core.exceptions import NotFound

        project, _ = bigquery_dataset(source)
        sql = f"SELECT COUNT(*) AS n FROM {_table_ref(source, 'judge_cache')}"
        try:
            rows = list(query_rows(bigquery_client(project, client), sql))
        except NotFound:
            rows = []
        if not rows or not rows[0]["n"]:
            raise ValueError(f"{source} has no judge_cache rows to reuse")
        return
    if os.path.abspath(source.rstrip("/")) == os.path.abspath(out.rstrip("/")):
        raise ValueError("--reuse must name an earlier run's directory, not --out (its tables "
                         "are replaced by this run)")
    if not table_files(source, "judge_cache"):
        raise ValueError(f"{source} has no judge_cache table to reuse")


class _QueryRowsFn(StorageDoFn):
    """(sql, params) -> the query's rows as dicts (google-cloud-bigquery, paged)."""

    def __init__(self, project: str, client=None):
        self._project = project
        self._hook = client

    def setup(self) -> None:
        self._client = bigquery_client(self._project, self._hook)

    def process(self, query: tuple[str, tuple]) -> Iterator[dict]:
        sql, params = query
        yield from query_rows(self._client, sql, params)


class ReadBigQueryCache(beam.PTransform):
    """The judge_cache rows of a BigQuery dataset for the run's judge model and prompt hash
    (and its confirming judge's)."""

    def __init__(self, source: str, run: RunInfo, client=None):
        super().__init__()
        self._project, _ = bigquery_dataset(source)
        self._sql = CACHE_SQL.format(judge_cache=_table_ref(source, "judge_cache"))
        confirm = run.confirm or run  # a confirming judge's rows are under its own model
        self._params = (("judge_model", "STRING", run.judge_model),
                        ("prompt_hash", "STRING", run.prompt_hash),
                        ("confirm_model", "STRING", confirm.judge_model),
                        ("confirm_hash", "STRING", confirm.prompt_hash))
        self._client = client

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[JudgeCacheRow]:
        return (
            pbegin
            | "Query" >> beam.Create([(self._sql, self._params)])
            | "Rows" >> beam.ParDo(_QueryRowsFn(self._project, self._client))
            | "Spread" >> beam.Reshuffle()
            | "CacheRows" >> beam.Map(lambda values: from_dict(JudgeCacheRow, values))
        )


def read_cache(source: str, run: RunInfo, client=None) -> beam.PTransform:
    """The PTransform reading an earlier run's judge_cache rows (folder or bq:)."""
    if is_bigquery(source):
        return ReadBigQueryCache(source, run, client)
    return ReadCache(table_patterns(source, "judge_cache"))


# report ------------------------------------------------------------------------------------

def table_reader(source: str, client=None) -> Callable[[str], list[dict]]:
    """Rows of a run's table by name: from a run folder's Parquet files, or from a BigQuery
    dataset given as `bq:PROJECT:DATASET` (a table not there has no rows)."""
    if not is_bigquery(source):
        return lambda name: read_table(source, name).to_pylist()
    from google.api_core.exceptions import NotFound

    project, _ = bigquery_dataset(source)
    gcp = bigquery_client(project, client)

    def read(name: str) -> list[dict]:
        try:
            return list(query_rows(gcp, f"SELECT * FROM {_table_ref(source, name)}"))
        except NotFound:
            return []

    return read


def stored_traces(source: str, trace_ids: set[str], client=None) -> list[dict]:
    """The rows of the opt-in traces table (`--write-traces`) for these trace ids, as trace
    records (the input format: timestamp, contexts as {doc_id, text}); none if not written."""
    rows = [r for r in table_reader(source, client)("traces") if r["trace_id"] in trace_ids]
    return [{"trace_id": r["trace_id"], "route": r["route"],
             "timestamp": r["event_time"].isoformat(), "question": r["question"],
             "contexts": [{"doc_id": d["doc_id"], "text": d["text"]} for d in r["contexts"]],
             "answer": r["answer"], "task": r["task"], "generator": r["generator"]}
            for r in rows]
