"""`--redo R --out R --overwrite`: the redone answers replace their earlier rows, every other row
of R stays.

A redo audits only R's incomplete answers, so its tables hold those alone; swapped into R as any
run is (runfolder.py: the earlier run's files out, the new ones in), it would delete R's
complete answers, their claims and dead letters, and the judge cache. So, after the redo's
pipeline has succeeded and before the swap, `carry_earlier_rows` copies into the staging folder
(as `part-prev-….parquet` files in the same partition folders) the rows of R the redo does not
replace:

- answers, claims and dead letters of every trace that was neither redone nor audited again by
  this run (a redone trace's earlier dead letter of stage `judge` goes: if the trace is still
  incomplete, the redo wrote a new one); the traces table's rows that the redo did not write
  again;
- every judge_cache row whose key the redo did not write again (so `--reuse R` keeps working
  and grows);
- alerts as they were.

route_rates and costs are then computed again over the whole, by the transforms one run uses
(graph.build_aggregates): the rates over every answer now in the run, the costs over R's cost
rows (what was spent, the failed attempts included) and the redo's. The summary, read from the
staging folder afterwards, is over the whole run too. R itself is only read here; nothing is
removed from it until the swap.
"""

from __future__ import annotations

import logging
import os
import pickle
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace

from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from rt4chart.pipeline.results.earlier import is_bigquery
from rt4chart.pipeline.results.summary import read_rows, read_table
from rt4chart.pipeline.run import graph
from rt4chart.pipeline.run.chunk_files import append_pickles
from rt4chart.pipeline.run.chunked_audit import move_tables
from rt4chart.pipeline.run.config import AuditConfig
from rt4chart.pipeline.storage.run_folder import run_folder_path
from rt4chart.pipeline.storage.run_lock import new_pipeline, run_temp
from rt4chart.pipeline.storage.table_files import OpenFile, partition_folder, table_files
from rt4chart.schemas.records import Traffic
from rt4chart.schemas.rows import usage_of
from rt4chart.schemas.tables import TABLES, arrow_schema
from rt4chart.schemas.usage import UsageRecord
from rt4chart.transforms.aggregate import REDO_STAGE
from rt4chart.transforms.rates import dead_letter_traffic, skipped_traffic

logger = logging.getLogger(__name__)

PER_TRACE = ("answers", "claims", "dead_letters")
AGGREGATES = ("route_rates", "costs")
PREV_TAG = "prev"  # files carried from the earlier run: part-prev-NNNNN.parquet
WORK = ".tmp-redo"  # inside the staging folder; ".tmp-" files are never a run's files


def redoes_into_itself(config: AuditConfig) -> bool:
    """Whether this run redoes the run folder it writes to (`--redo R --out R`)."""
    return bool(config.redo) and not is_bigquery(config.redo) and (
        run_folder_path(config.redo) == run_folder_path(config.out))


def carry_earlier_rows(earlier: str, staging: str, config: AuditConfig,
                       options: PipelineOptions, redone: bool = True) -> int:
    """Copy the rows of `earlier` that the run in `staging` does not replace into `staging`,
    then compute route_rates and costs again over the whole (see the module's docstring).
    Returns how many earlier answers were kept. `redone=False` (a spend cap's next round,
    cap_rounds.py): the earlier incomplete answers were not redone, their rows stay."""
    redone = {r["trace_id"] for r in read_table(earlier, "dead_letters").to_pylist()
              if r["stage"] == REDO_STAGE} if redone else set()
    audited = set(read_table(staging, "answers").column("trace_id").to_pylist())
    replaced = redone | audited
    kept = 0
    for name in PER_TRACE:
        rows = [r for r in read_table(earlier, name).to_pylist()
                if r["trace_id"] is None or r["trace_id"] not in replaced]
        kept += len(rows) if name == "answers" else 0
        _write_rows(staging, name, rows)
    _carry_unless(earlier, staging, "traces", "trace_id")
    _carry_unless(earlier, staging, "judge_cache", "key")
    _write_rows(staging, "alerts", read_table(earlier, "alerts").to_pylist())
    _recompute_aggregates(earlier, staging, config, options)
    logger.info("--redo into its own folder: %d earlier answers kept, %d traces redone",
                kept, len(audited))
    return kept


def _carry_unless(earlier: str, staging: str, name: str, key: str) -> None:
    """The earlier rows of a table whose `key` the new run did not write."""
    written = set(read_table(staging, name).column(key).to_pylist())
    _write_rows(staging, name, [r for r in read_table(earlier, name).to_pylist()
                                if r[key] not in written])


def _write_rows(staging: str, name: str, rows: list[dict]) -> None:
    """Rows of a table as Parquet files under staging/<table>/<partition folder>/."""
    table = TABLES[name]
    by_folder: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_folder[partition_folder(row[table.partition_field])].append(row)
    schema = arrow_schema(table)
    for folder, part in sorted(by_folder.items()):
        out = OpenFile(FileSystems.join(staging, name, folder, f"part-{PREV_TAG}-00000.parquet"),
                       schema)
        for row in part:
            out.add(row)
        out.close()


def _usage_records(costs: Iterable) -> list[UsageRecord]:
    """Cost rows as usage records at their window's start, for CostsByRoute to sum again."""
    return [UsageRecord("", c.route, c.window_start.date().isoformat(), c.judge_model,
                        usage_of(c), int(c.window_start.timestamp() * 1_000_000))
            for c in costs]


_DECIDED = ("seen", "sampled", "always")


def _traffic_records(rates: Iterable, dead: Iterable, skipped: Iterable) -> list[Traffic]:
    """The traffic of the whole run: what the earlier run's sampling decided (its route_rates'
    counts, at each window's start: a redone trace was seen once, by it), every dead letter
    now in the run (the earlier ones kept and the redo's) and every trace a spend cap still
    leaves unaudited (the skipped table as it now stands: a trace an earlier round or run
    skipped and this one audited is no longer skipped)."""
    last: dict[tuple, object] = {}
    for r in rates:  # panes accumulate: the last of each window holds its counts
        key = (r.route, r.window_start, r.window_end)
        if key not in last or r.pane_index > last[key].pane_index:
            last[key] = r
    out = [Traffic(r.route, int(r.window_start.timestamp() * 1_000_000), kind, n)
           for r in last.values() for kind in _DECIDED if (n := getattr(r, kind) or 0)]
    return (out + [dead_letter_traffic(d) for d in dead if d.stage != REDO_STAGE]
            + [skipped_traffic(s) for s in skipped])


def _recompute_aggregates(earlier: str, staging: str, config: AuditConfig,
                          options: PipelineOptions) -> None:
    """route_rates and costs of the staging folder, again, over every answer it now holds and
    the earlier and new cost rows."""
    local = FileSystems.get_scheme(staging) is None
    work = os.path.join(staging, WORK) if local else tempfile.mkdtemp(prefix="rt4chart-redo-")
    try:
        carry = os.path.join(work, "carry")
        usage = _usage_records([*read_rows(earlier, "costs"), *read_rows(staging, "costs")])
        traffic = _traffic_records(read_rows(earlier, "route_rates"),
                                   read_rows(staging, "dead_letters"),
                                   read_rows(staging, "skipped"))
        for name, items in (("answers", read_rows(staging, "answers")), ("usage", usage),
                            ("traffic", traffic)):
            append_pickles(os.path.join(carry, name, "0.pkl"),
                           (pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL) for x in items))
        _remove_tables(staging, AGGREGATES)
        out = FileSystems.join(staging, f"{WORK}-out")
        pipeline = new_pipeline(options, run_temp(staging))
        graph.build_aggregates(pipeline, _local_only(config, out), carry)
        pipeline.run().wait_until_finish()
        move_tables(out, staging, "redo")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _local_only(config: AuditConfig, out: str) -> AuditConfig:
    """The config of the aggregate run: Parquet under `out` only (BigQuery got the redo's rows
    as they were written: its tables are a history, not a snapshot)."""
    return replace(config, out=out, bigquery=None)


def _remove_tables(staging: str, names: Iterable[str]) -> None:
    files = [path for name in names for path in table_files(staging, name)]
    if files:
        FileSystems.delete(files)
