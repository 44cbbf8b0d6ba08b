"""The run folder: staging, manifest, swap on success; nothing rt4chart did not write is
removed or written over; an earlier run survives a run that fails. (A run killed mid-way, through
the console script: tests/integration/test_run_folder_cli.py.)"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rt4chart.pipeline.results.summary import read_table
from rt4chart.pipeline.sources.traces import check_inputs
from rt4chart.pipeline.storage import run_folder as runfolder
from rt4chart.pipeline.storage.folder_scan import MANIFEST, Manifest, list_files, scan
from rt4chart.pipeline.storage.run_folder import ForeignFilesError, RunFolder
from rt4chart.schemas.columns import to_dict
from rt4chart.schemas.rows import DeadLetterRow
from rt4chart.schemas.tables import TABLES, arrow_schema

SUMMARY = {"judge": "offline", "judge_model": "lexical", "prompt_hash": "abc", "traces": 1}


def _write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def _stage(folder: RunFolder, files: dict[str, str]) -> None:
    """What a pipeline does: write the run's files under the staging folder."""
    for rel, text in files.items():
        _write(Path(folder.staging) / rel, text)


def _run(out: Path, files: dict[str, str], overwrite: bool = False) -> Manifest:
    folder = RunFolder(str(out), overwrite)
    folder.check()
    _stage(folder, files)
    return folder.commit()


def _manifest(out: Path) -> dict:
    return json.loads((out / MANIFEST).read_text())


NEW = {"answers/part-00000-of-00001.parquet": "new answers",
       "dead_letters/part-00000-of-00001.parquet": "new dead letters",
       "summary.json": json.dumps(SUMMARY)}
OLD = {"answers/part-00000-of-00002.parquet": "old answers 1",
       "answers/part-00001-of-00002.parquet": "old answers 2",
       "claims/part-00000-of-00001.parquet": "old claims",
       "summary.json": json.dumps({**SUMMARY, "traces": 9})}


def test_a_run_into_a_new_folder_is_swapped_in_with_a_manifest(tmp_path):
    out = tmp_path / "out"
    manifest = _run(out, NEW)
    assert _snapshot(out) == {**{k: v.encode() for k, v in NEW.items()},
                              MANIFEST: (out / MANIFEST).read_bytes()}
    doc = _manifest(out)
    assert doc["files"] == sorted(NEW) == list(manifest.files)
    assert doc["complete"] is True and doc["run_id"] == manifest.run_id
    assert doc["version"] and datetime.fromisoformat(doc["created_at"]).tzinfo == UTC
    assert Manifest.loads((out / MANIFEST).read_bytes()) == manifest


def test_an_empty_folder_is_fine_and_a_file_is_not(tmp_path):
    (tmp_path / "empty").mkdir()
    _run(tmp_path / "empty", NEW)
    assert sorted(_manifest(tmp_path / "empty")["files"]) == sorted(NEW)
    _write(tmp_path / "a-file", "x")
    with pytest.raises(ForeignFilesError, match="is a file"):
        RunFolder(str(tmp_path / "a-file")).check()


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("files", [
    {"notes.txt": "mine"},
    {"summary.json": '{"my": "own summary"}'},
    {"answers/mine.csv": "a,b"},
], ids=["notes", "own-summary", "table-named-folder"])
def test_a_folder_of_someone_elses_files_is_refused_and_left_alone(tmp_path, files, overwrite):
    out = tmp_path / "out"
    for rel, text in files.items():
        _write(out / rel, text)
    before = _snapshot(out)
    folder = RunFolder(str(out), overwrite)
    with pytest.raises(ForeignFilesError, match=rf"^{out} holds files that rt4chart did not "
                                                rf"write: {next(iter(files))}"):
        folder.check()
    assert _snapshot(out) == before


def test_an_earlier_run_needs_overwrite_and_is_then_replaced_leaving_the_users_files(tmp_path):
    out = tmp_path / "out"
    _run(out, OLD)
    _write(out / "notes.txt", "my notes")
    _write(out / "answers" / "README", "my readme in a table folder")
    before = _snapshot(out)
    with pytest.raises(FileExistsError, match=r"already holds an earlier run \(4 files\); pass "
                                              "--overwrite"):
        RunFolder(str(out)).check()
    assert _snapshot(out) == before
    _run(out, NEW, overwrite=True)
    after = _snapshot(out)
    assert {k: v for k, v in after.items() if k != MANIFEST} == {
        **{k: v.encode() for k, v in NEW.items()}, "notes.txt": b"my notes",
        "answers/README": b"my readme in a table folder"}
    assert _manifest(out)["files"] == sorted(NEW)


def test_a_run_folder_without_a_manifest_is_recognised_as_rt4charts(tmp_path):
    out = tmp_path / "out"
    for rel, text in OLD.items():  # as an rt4chart without manifests wrote it
        _write(out / rel, text)
    _write(out / "_redo" / "traces.jsonl", "{}\n")
    _write(out / "answers" / "mine.txt", "the user's")
    state = scan(str(out))
    assert state.manifest is None and state.foreign == ("answers/mine.txt",)
    assert sorted(state.run_files) == sorted([*OLD, "_redo/traces.jsonl"])
    with pytest.raises(FileExistsError, match="earlier run"):
        RunFolder(str(out)).check()
    _run(out, NEW, overwrite=True)
    assert sorted(list_files(str(out))) == sorted([*NEW, MANIFEST, "answers/mine.txt"])


@pytest.mark.parametrize("rel, text", [
    ("summary.json", '{"not": "rt4chart"}'),  # next to tables, but not rt4chart's summary
    ("answers/extra.parquet", "would be read as part of the answers table"),
    ("_redo/mine.jsonl", "the user's"),
])
def test_foreign_files_where_a_run_writes_or_reads_are_refused(tmp_path, rel, text):
    out = tmp_path / "out"
    for name, data in OLD.items():
        if name != "summary.json":
            _write(out / name, data)
    _write(out / rel, text)
    before = _snapshot(out)
    with pytest.raises(ForeignFilesError, match=f"did not write: {rel}; a run would write"):
        RunFolder(str(out), overwrite=True).check()
    assert _snapshot(out) == before


def test_a_manifest_rt4chart_did_not_write_is_refused(tmp_path):
    out = tmp_path / "out"
    _run(out, OLD)
    _write(out / MANIFEST, '{"files": ["notes.txt"]}')
    with pytest.raises(ForeignFilesError, match=MANIFEST):
        RunFolder(str(out), overwrite=True).check()


def test_a_failed_run_is_aborted_and_leaves_the_earlier_run_intact(tmp_path):
    out = tmp_path / "out"
    _run(out, OLD)
    before = _snapshot(out)
    folder = RunFolder(str(out), overwrite=True)
    folder.check()
    _stage(folder, NEW)
    folder.abort()  # the pipeline failed
    assert _snapshot(out) == before
    fresh = RunFolder(str(tmp_path / "fresh"))
    fresh.check()
    _stage(fresh, NEW)
    fresh.abort()
    assert not (tmp_path / "fresh").exists()  # the failed run made it; nothing is left


def test_a_run_that_crashed_leaves_its_staging_and_the_earlier_run(tmp_path, caplog):
    out = tmp_path / "out"
    _run(out, OLD)
    before = _snapshot(out)
    crashed = RunFolder(str(out), overwrite=True)
    crashed.check()
    _stage(crashed, {"answers/part-00000-of-00001.parquet": "half"})
    # ... killed here: neither commit nor abort.
    staging = Path(crashed.staging).name
    assert {k: v for k, v in _snapshot(out).items() if not k.startswith(staging)} == before
    with caplog.at_level(logging.WARNING, logger=runfolder.__name__):
        _run(out, NEW, overwrite=True)
    assert staging in caplog.text
    assert sorted(list_files(str(out))) == sorted(
        [*NEW, MANIFEST, f"{staging}/answers/part-00000-of-00001.parquet"])


def _contents(out: Path) -> dict[str, str]:
    return {f: (out / f).read_text() for f in list_files(str(out))
            if not f.startswith((".staging-", ".previous-")) and f != MANIFEST}


@pytest.mark.parametrize("cut_after", [0, 1, len(OLD), len(OLD) + 1])
def test_a_swap_cut_short_is_undone_or_finished_by_the_next_run(tmp_path, monkeypatch,
                                                                 cut_after):
    """A failure after `cut_after` file moves of the swap (the earlier run's files set aside,
    then the new run's moved in): the folder says complete: false, and the next check puts
    the earlier run back whole (cut while setting it aside) or finishes the new one (cut while
    moving it in); never a mix, never a loss."""
    out = tmp_path / "out"
    _run(out, OLD)
    earlier = _contents(out)
    moves = []
    real_move = runfolder._move

    def move_until_cut(source, destination):
        if len(moves) >= cut_after and not destination.endswith(MANIFEST):
            raise OSError("killed mid-swap")
        if not destination.endswith(MANIFEST):
            moves.append(destination)
        real_move(source, destination)

    monkeypatch.setattr(runfolder, "_move", move_until_cut)
    folder = RunFolder(str(out), overwrite=True)
    folder.check()
    _stage(folder, NEW)
    with pytest.raises(OSError, match="mid-swap"):
        folder.commit()
    interim = _manifest(out)
    assert interim["complete"] is False and sorted(interim["files"]) == sorted(NEW)
    assert runfolder.incomplete_message(str(out))[1]  # readers refuse it
    monkeypatch.setattr(runfolder, "_move", real_move)
    RunFolder(str(out), overwrite=True).check()  # what the next run does first
    assert _manifest(out)["complete"] is True
    assert _contents(out) == (earlier if cut_after < len(OLD) else NEW)
    assert runfolder.incomplete_message(str(out)) is None
    _run(out, {"costs/part-00000-of-00001.parquet": "third"}, overwrite=True)
    assert sorted(f for f in list_files(str(out)) if not f.startswith(".staging-")) == [
        MANIFEST, "costs/part-00000-of-00001.parquet"]


def test_an_empty_staging_folder_left_by_a_kill_is_named(tmp_path, caplog):
    out = tmp_path / "out"
    _run(out, OLD)
    (out / ".staging-20260101T000000Z-deadbeef" / "answers" / "dt=2026-01-01").mkdir(
        parents=True)
    RunFolder(str(out), overwrite=True).check()
    assert ".staging-20260101T000000Z-deadbeef" in caplog.text


def test_a_failed_run_keeps_its_tables_in_a_new_folder_marked_incomplete(tmp_path):
    out = tmp_path / "out"
    folder = RunFolder(str(out))
    folder.check()
    _stage(folder, {**NEW, ".tmp-run/beam-temp/x": "temporary"})
    assert folder.keep_failed() == folder.out
    assert _contents(out) == NEW
    manifest = _manifest(out)
    assert manifest["complete"] is False and manifest["phase"] == "failed"
    message, refuse = runfolder.incomplete_message(str(out))
    assert not refuse and "failed run" in message
    # Beside an earlier run, the failed run's tables stay in its staging folder.
    again = RunFolder(str(out), overwrite=True)
    again.check()
    _stage(again, {"answers/part-00000-of-00001.parquet": "third"})
    assert again.keep_failed() == again.staging
    assert _contents(out) == NEW


def test_commit_refuses_a_file_someone_put_where_the_run_goes(tmp_path):
    out = tmp_path / "out"
    folder = RunFolder(str(out))
    folder.check()
    _stage(folder, NEW)
    _write(out / "summary.json", '{"written": "by someone else meanwhile"}')
    with pytest.raises(ForeignFilesError, match="summary.json"):
        folder.commit()
    assert (out / "summary.json").read_text() == '{"written": "by someone else meanwhile"}'
    assert sorted(list_files(folder.staging)) == sorted(NEW)  # the run is not lost


def test_check_inputs_comes_before_anything_is_replaced(tmp_path):
    out = tmp_path / "out"
    _run(out, OLD)
    before = _snapshot(out)
    # `audit missing.jsonl --out R --overwrite`: refused, R untouched.
    folder = RunFolder(str(out), overwrite=True)
    folder.check()
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        check_inputs([str(tmp_path / "missing.jsonl")])
    folder.abort()
    assert _snapshot(out) == before


def _dead_letters_table(out: Path, raws: dict[str, str]) -> None:
    rows = [to_dict(DeadLetterRow(stage="judge", reason="verify_global: 500", trace_id=t,
                                  route="default", raw=raw,
                                  received_at=datetime(2024, 6, 1, tzinfo=UTC),
                                  dead_letter_id=t * 8))
            for t, raw in raws.items()]
    path = out / "dead_letters" / "part-00000-of-00001.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=arrow_schema(TABLES["dead_letters"])), path)


def _redo_into_staging(run_dir: str, folder: RunFolder) -> str:
    """What the job runner does for `--redo R --out R`: read R's dead letters (R itself, not
    the staging folder) and write the traces to redo under the staging folder."""
    raws = [r["raw"] for r in read_table(run_dir, "dead_letters").to_pylist()
            if r["stage"] == "judge"]
    path = Path(folder.staging) / "_redo" / "traces.jsonl"
    _write(path, "".join(raw + "\n" for raw in raws))
    return str(path)


def test_redo_into_the_same_folder_reads_the_dead_letters_before_anything_is_replaced(
        tmp_path):
    out = tmp_path / "r"
    first = RunFolder(str(out))
    first.check()
    _dead_letters_table(Path(first.staging), {"t1": '{"trace_id": "t1"}',
                                              "t2": '{"trace_id": "t2"}'})
    _stage(first, {"summary.json": json.dumps(SUMMARY)})
    first.commit()
    before = _snapshot(out)
    # A failed redo: the dead letters (the traces to redo) are still there for the next try.
    failed = RunFolder(str(out), overwrite=True)
    failed.check()
    assert Path(_redo_into_staging(str(out), failed)).read_text().splitlines() == [
        '{"trace_id": "t1"}', '{"trace_id": "t2"}']
    failed.abort()
    assert _snapshot(out) == before
    # A redo that succeeds replaces the run, its redo input kept with it.
    folder = RunFolder(str(out), overwrite=True)
    folder.check()
    redo = _redo_into_staging(str(out), folder)
    _stage(folder, {"answers/part-00000-of-00001.parquet": "redone", "summary.json": "{}"})
    folder.commit()
    assert sorted(_manifest(out)["files"]) == [
        "_redo/traces.jsonl", "answers/part-00000-of-00001.parquet", "summary.json"]
    assert (out / "_redo" / "traces.jsonl").read_text() == Path(redo.replace(
        folder.staging, str(out))).read_text()
    assert not (out / "dead_letters" / "part-00000-of-00001.parquet").exists()


def test_table_files_a_stream_added_to_a_batch_run_are_the_runs(tmp_path):
    """A stream writes as it goes (no manifest lists its files): in a batch run's folder its
    part files are run files, not foreign files that would block the next run."""
    out = tmp_path / "out"
    _run(out, OLD)
    _write(out / "answers" / "part-1733000000-abcdef012345.parquet", "streamed")
    state = scan(str(out))
    assert "answers/part-1733000000-abcdef012345.parquet" in state.run_files
    assert not state.foreign
    _run(out, NEW, overwrite=True)
    assert sorted(list_files(str(out))) == sorted([*NEW, MANIFEST])


def test_out_slash_is_the_root_not_the_current_directory(tmp_path, monkeypatch):
    """`/` stripped of its slash was the empty name, which abspath made the current folder."""
    monkeypatch.chdir(tmp_path)
    assert runfolder.run_folder_path("/") == "/"
    assert RunFolder("/").out == "/"
    assert runfolder.run_folder_path(str(tmp_path) + "/") == str(tmp_path)


@pytest.mark.parametrize("out", ["/", "//", "/.", "HOME", "HOME/", "HOME/sub/..", ""])
def test_the_root_the_home_folder_and_no_name_are_refused_as_out(out, tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (home / "sub").mkdir()
    with pytest.raises(ValueError, match=r"root|home folder|empty name"):
        runfolder.check_out(out.replace("HOME", str(home)))


def test_a_folder_in_the_home_folder_and_the_current_one_are_fine(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path / "..")
    runfolder.check_out(str(tmp_path / "rt4chart-out"))
    runfolder.check_out(".")
    runfolder.check_out("gs://bucket/run/")


@pytest.mark.parametrize("command", ["audit", "stream"])
def test_audit_and_stream_to_out_slash_are_usage_errors_that_write_nothing(
        command, tmp_path, monkeypatch, capsys):
    from rt4chart.pipeline.cli import main as cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    extra = (["--example"] if command == "audit" else
             ["--subscription", "projects/p/subscriptions/s"])
    assert cli.main([command, *extra, "--judge", "offline", "--out", "/"]) == 2
    assert "--out / is the file system's root" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command,names", [("report", ("out_dir",)), ("export", ("run",)),
                                           ("annotate", ("source",)),
                                           ("eval", ("run_a", "run_b"))])
def test_readers_refuse_a_swap_cut_short_and_warn_on_a_failed_run(tmp_path, capsys, command,
                                                                  names):
    import argparse

    from rt4chart.pipeline.cli import main as cli
    from rt4chart.pipeline.run import jobs

    out = tmp_path / "out"
    _run(out, OLD)
    args = argparse.Namespace(command=command, **{n: str(out) for n in names})
    cli.check_runs_read(args)  # complete: read quietly
    assert capsys.readouterr().err == ""
    cut = runfolder.Manifest("r1", tuple(NEW), complete=False, phase=runfolder.PHASE_IN,
                             aside=".previous-r1")
    (out / MANIFEST).write_bytes(cut.dumps())
    with pytest.raises(jobs.UsageError, match="cut short"):
        cli.check_runs_read(args)
    failed = runfolder.Manifest("r2", tuple(OLD), complete=False, phase=runfolder.PHASE_FAILED)
    (out / MANIFEST).write_bytes(failed.dumps())
    cli.check_runs_read(args)
    assert "WARNING" in capsys.readouterr().err
    bq = argparse.Namespace(command=command, **{n: "bq:p:d" for n in names})
    cli.check_runs_read(bq)  # BigQuery datasets have no manifest
