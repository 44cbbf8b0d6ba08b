"""The bundled example traces, converted to each span format a RAG team keeps its traces in
(OTLP JSON, OpenInference span JSON, a Phoenix spans export, a Langfuse export), audit to
exactly the same answers and claims tables as the original JSON lines."""

from __future__ import annotations

from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.run import jobs
from rt4chart.pipeline.sources.traces import ReadTraces
from rt4chart.pipeline.storage.folder_scan import REDO_INPUT

from span_export import hex_id, write_format
from testutil import load_traces, read_tables

FORMATS = ("otlp", "openinference", "phoenix", "langfuse")
# Columns that say when, not what.
WHEN = {"audited_at"}
ID_OPTIONS = ["--trace-id-attribute", "metadata.trace_id", "--route-attribute", "metadata.route"]


def _audit(inputs: list[str], out: Path, *options: str) -> dict[str, list[dict]]:
    assert cli.main(["audit", *inputs, "--out", str(out), "--judge", "offline",
                     *options]) == 0
    return read_tables(out)


def _rows(rows: list[dict]) -> list[dict]:
    return sorted(({k: v for k, v in r.items() if k not in WHEN} for r in rows),
                  key=lambda r: (r["trace_id"], r.get("claim_index", -1)))


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> dict[str, list[dict]]:
    return _audit([jobs.example_traces()], tmp_path_factory.mktemp("jsonl") / "out")


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_audits_like_the_original_jsonl(fmt, original, tmp_path):
    records = load_traces(Path(jobs.example_traces()))
    path = write_format(fmt, records, tmp_path / "in")
    # Auto-detected: the file says what it is.
    tables = _audit([str(path)], tmp_path / "out", *ID_OPTIONS)
    assert _rows(tables["answers"]) == _rows(original["answers"])
    assert _rows(tables["claims"]) == _rows(original["claims"])
    assert {a["trace_id"] for a in tables["answers"]} == {
        r["trace_id"] for r in records if r.get("answer") is not None}
    # The record with no contexts and no answer is a dead letter that says so.
    (dead,) = tables["dead_letters"]
    assert dead["stage"] == "assemble" and dead["trace_id"] == "broken-example"
    assert dead["reason"].startswith("no retriever span") and "no answer" in dead["reason"]


def test_a_redo_file_is_read_as_trace_jsonl_whatever_the_input_format(tmp_path):
    redo = tmp_path / REDO_INPUT
    redo.parent.mkdir()
    redo.write_text('{"trace_id": "t-1", "contexts": ["c"], "answer": "a"}\n')
    spans = write_format("otlp", load_traces(Path(jobs.example_traces()))[:1], tmp_path / "in")
    with TestPipeline(options=jobs.beam_options([])) as p:
        read = p | ReadTraces((str(spans), str(redo)), "otlp")
        ids = read.records | beam.Map(lambda r: r["trace_id"] if isinstance(r, dict) else r)
        assert_that(ids, equal_to([hex_id("paper-running-example", 32),
                                   '{"trace_id": "t-1", "contexts": ["c"], "answer": "a"}']))
