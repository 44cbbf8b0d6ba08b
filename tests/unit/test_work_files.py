"""The one predicate for "a work file, not a table's file" (`tablefiles.is_work_file`), which the
run folder's scan and commit, the chunked audit's moves and the table readers all use."""

from __future__ import annotations

import pytest

from rt4chart.pipeline.storage.table_files import is_work_file


@pytest.mark.parametrize("rel", [
    ".tmp-part-123-abc.parquet",  # a streaming write still open or cut short
    "answers/dt=2026-01-02/.tmp-part-1.parquet",
    "answers/beam-temp-1/x.parquet",  # a batch write cut short
    "beam-temp-answers-0123/part-0.parquet",
    ".tmp-chunks/carry/x.jsonl",  # the staging folder's work folders
    ".tmp-run/beam-pipeline-temp/x",
    ".tmp-input/stdin.jsonl",
    ".tmp-redo/verdicts/part-0.parquet",
])
def test_work_files(rel):
    assert is_work_file(rel)


@pytest.mark.parametrize("rel", [
    "answers/part-00000-of-00001.parquet",
    "answers/dt=2026-01-02/part-00000-of-00002.parquet",
    "part-cagg-00000-of-00001.parquet",
    "summary.json",
    "_rt4chart_manifest.json",  # hidden to engines, but the run's
    "_redo/traces.jsonl",
    "answers/x.tmp-part.parquet",  # the prefixes name a file or folder, not a substring
    "",
])
def test_not_work_files(rel):
    assert not is_work_file(rel)
