"""Sources (JSONL, Parquet) and sinks (Parquet tables) of the batch audit."""

from __future__ import annotations

import logging
from dataclasses import asdict

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from rt4chart.schemas.records import DeadLetter
from rt4chart.schemas.tables import TABLES, arrow_schema

logger = logging.getLogger(__name__)

PARQUET_SUFFIXES = (".parquet", ".pq")


def is_parquet(path: str, input_format: str = "auto") -> bool:
    """Whether to read a path as Parquet: by `input_format`, or by its suffix when "auto"."""
    if input_format != "auto":
        return input_format == "parquet"
    return path.lower().rstrip("*").endswith(PARQUET_SUFFIXES)


class ReadTraces(beam.PTransform):
    """Trace files (JSONL lines or Parquet rows, paths or globs) -> raw records.

    JSONL lines stay text so that a line that is not JSON reaches the dead letters as received.
    Blank lines are not records and are skipped. The format is told by the file suffix
    (.parquet/.pq, else JSON lines, .gz and .bz2 decompressed) unless `input_format` says.
    """

    def __init__(self, inputs: tuple[str, ...], input_format: str = "auto"):
        super().__init__()
        self._inputs = inputs
        self._format = input_format

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection:
        parts = []
        for i, path in enumerate(self._inputs):
            if is_parquet(path, self._format):
                part = pbegin | f"ReadParquet{i}" >> beam.io.ReadFromParquet(path)
            else:
                part = (
                    pbegin
                    | f"ReadJsonl{i}" >> beam.io.ReadFromText(path)
                    | f"SkipBlank{i}" >> beam.Filter(lambda line: bool(line.strip()))
                )
            parts.append(part)
        return tuple(parts) | "Records" >> beam.Flatten()


def dead_letter_row(d: DeadLetter) -> dict:
    return asdict(d)


class WriteTable(beam.PTransform):
    """Rows -> Parquet files under OUT/<table>/, with the table's Arrow schema."""

    def __init__(self, out: str, table: str):
        super().__init__()
        self._out = out.rstrip("/")
        self._table = TABLES[table]

    def expand(self, rows: beam.PCollection[dict]):
        return rows | "Parquet" >> beam.io.WriteToParquet(
            FileSystems.join(self._out, self._table.name, "part"),
            arrow_schema(self._table),
            file_name_suffix=".parquet",
        )


def existing_outputs(out: str) -> list[str]:
    """Table files already present under OUT."""
    found = []
    for name in TABLES:
        pattern = FileSystems.join(out.rstrip("/"), name, "*")
        for result in FileSystems.match([pattern]):
            found.extend(m.path for m in result.metadata_list)
    return found


def prepare_output(out: str, overwrite: bool) -> None:
    """Refuse to mix runs in one output directory unless told to replace the old tables."""
    old = existing_outputs(out)
    if old and not overwrite:
        raise FileExistsError(
            f"{out} already holds {len(old)} table file(s) of an earlier run; "
            "pass --overwrite to replace them or choose another --out"
        )
    if old:
        logger.info("removing %d table files of an earlier run under %s", len(old), out)
        FileSystems.delete(old)
