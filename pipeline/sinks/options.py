"""Options of the output tables that `audit` and `stream` share: the opt-in traces table, and
where and for how long BigQuery keeps the tables.

Kept apart from the BigQuery sink (pipeline/storage/bigquery.py) so that parsing options imports no
Google Cloud library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rt4chart.transforms.common.options_spec import Flex, from_values, option


@dataclass(frozen=True)
class TablesConfig:
    """What is written besides the audit's own tables, and BigQuery's table settings.

    Attributes:
        write_traces: also write the `traces` table (each audited trace's question, contexts
            and answer, as received): raw text of the RAG system, off by default.
        bigquery_location: where a missing BigQuery dataset is created (US, EU, europe-west1,
            ...); an existing dataset must be there.
        partition_expiration_days: BigQuery deletes a day's partition of every table this many
            days after the day (claims, dead letters and traces hold raw trace text).
    """

    write_traces: bool = option(
        "--write-traces", "--write_traces", kind="flag", default=False,
        flex=Flex(
            "Write the traces table",
            "true: also write the traces table, each audited trace's question, contexts and "
            "answer as received (raw text of your RAG system), so that `rt4chart report "
            "bq:PROJECT:DATASET` shows them. Default: false.",
            regexes=("^(true|false)$",)),
        help="also write the traces table: each audited trace's question, contexts and answer "
             "as received (raw text of your RAG system; lets a report from BigQuery show "
             "them). Off by default")
    bigquery_location: str | None = option(
        "--bigquery-location", "--bigquery_location", metavar="LOCATION",
        flex=Flex(
            "BigQuery location",
            "Where a missing dataset is created (US, EU, europe-west1, ...); the Terraform of "
            "infra/ creates it, so this is only needed without it. An existing dataset must be "
            "in this location.",
            regexes=("^[A-Za-z0-9-]+$",)),
        help="with --bigquery: create a missing dataset in this location (US, EU, "
             "europe-west1, ...); without it a missing dataset is an error")
    partition_expiration_days: int | None = option(
        "--partition-expiration-days", "--partition_expiration_days", parse=int, metavar="N",
        flex=Flex(
            "Partition expiration (days)",
            "BigQuery deletes each day's partition of every table this many days later, "
            "existing tables included (claims, dead letters and traces hold raw trace text). "
            "Default: kept.",
            regexes=("^[1-9][0-9]*$",)),
        help="with --bigquery: BigQuery deletes each day's partition of every table N days "
             "later (claims, dead letters and traces hold raw trace text); applied to existing "
             "tables too. Default: kept")

    def __post_init__(self) -> None:
        days = self.partition_expiration_days
        if days is not None and days < 1:
            raise ValueError(f"--partition-expiration-days must be >= 1, got {days}")
        if self.bigquery_location is not None and not self.bigquery_location.strip():
            raise ValueError("--bigquery-location must name a location (US, EU, europe-west1, "
                             "...)")

    @property
    def partition_expiration_ms(self) -> int | None:
        days = self.partition_expiration_days
        return None if days is None else days * 86_400_000


def tables_config(args: Any) -> TablesConfig:
    """The options' TablesConfig (`args`: the options' values by dest, the command line's or
    the Python API's); ValueError for a BigQuery setting without --bigquery."""
    location = getattr(args, "bigquery_location", None)
    days = getattr(args, "partition_expiration_days", None)
    if (location or days is not None) and not getattr(args, "bigquery", None):
        raise ValueError("--bigquery-location and --partition-expiration-days apply to "
                         "--bigquery PROJECT:DATASET")
    return from_values(TablesConfig, args)
