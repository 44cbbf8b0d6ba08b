"""No run destroys data, and the exit codes, through the real console script (`rt4chart`):
a run that is refused, fails or is killed leaves the earlier run in --out as it was; a run that
succeeds replaces it."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testutil import read_tables, write_jsonl

RT4CHART = str(Path(sys.executable).parent / "rt4chart")
FAKES = Path(__file__).parents[1] / "fakes"
MANIFEST = "_rt4chart_manifest.json"
KEYWORD = ("--judge", "fake_judges:keyword")
CTX = "Tokyo is the capital of Japan. It has about 14 million inhabitants."
TRACES = [{"trace_id": f"t{i}", "contexts": [CTX], "answer": "Tokyo is the capital of Japan."}
          for i in range(3)]
KILL_DEADLINE_S = 120.0  # a hang guard: the staging folder appears within seconds


def rt4chart(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """`rt4chart ARGS` as a user runs it: the console script, no judge endpoint configured."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "PYTHONPATH": str(FAKES)}
    return subprocess.run([RT4CHART, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (relative path -> bytes)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def _error_line(proc: subprocess.CompletedProcess) -> str:
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("rt4chart: ")]
    return line


@pytest.fixture
def earlier_run(tmp_path) -> tuple[Path, dict[str, bytes]]:
    """R: the run of the example traces, and its files."""
    proc = rt4chart("audit", "--example", "--out", "R", "--judge", "offline", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "R"
    before = snapshot(out)
    assert MANIFEST in before and "summary.json" in before
    return out, before


def test_a_missing_input_leaves_the_earlier_run_intact_and_exits_2(tmp_path, earlier_run):
    out, before = earlier_run
    proc = rt4chart("audit", "missing.jsonl", "--out", "R", "--overwrite", cwd=tmp_path)
    assert proc.returncode == 2
    assert _error_line(proc) == (
        "rt4chart: error: no input file matches missing.jsonl (give JSONL or Parquet files, or "
        "globs such as DIR/*.jsonl)")
    assert snapshot(out) == before


def test_a_foreign_folder_is_refused_and_left_untouched(tmp_path):
    mine = tmp_path / "mine"
    (mine / "answers").mkdir(parents=True)
    (mine / "answers" / "notes.txt").write_text("my notes")
    (mine / "summary.json").write_text('{"my": "summary"}')
    before = snapshot(mine)
    for extra in ((), ("--overwrite",)):
        proc = rt4chart("audit", "--example", "--out", "mine", *extra, cwd=tmp_path)
        assert proc.returncode == 2
        assert "holds files that rt4chart did not write: summary.json" in _error_line(proc)
        assert snapshot(mine) == before


def test_usage_errors_exit_2_and_change_nothing(tmp_path, earlier_run):
    out, before = earlier_run
    for args in (["--example", "--out", "R"],  # an earlier run, no --overwrite
                 ["--example", "--out", "R", "--overwrite", "--window-size", "5",
                  "--window-overlap", "5"],
                 ["--example", "--out", "R", "--overwrite", "--max-answer-sentences", "0"],
                 ["--example", "--out", "R", "--overwrite", "--oversize", "cut"],
                 ["--example", "--out", "R", "--overwrite", "--judge", "no_such_module:x"]):
        proc = rt4chart("audit", *args, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stderr[-1000:])
        assert snapshot(out) == before
    proc = rt4chart("audit", "--example", "--out", "R", cwd=tmp_path)
    assert "already holds an earlier run" in _error_line(proc)


def _truncated_gz(path: Path) -> Path:
    data = gzip.compress("".join(json.dumps(dict(TRACES[0], trace_id=f"z{i}")) + "\n"
                                 for i in range(200)).encode())
    path.write_bytes(data[:len(data) // 2])
    return path


def test_a_failed_run_exits_1_with_its_error_in_one_line_and_keeps_the_earlier_run(
        tmp_path, earlier_run):
    out, before = earlier_run
    _truncated_gz(tmp_path / "cut.jsonl.gz")
    proc = rt4chart("audit", "cut.jsonl.gz", "--out", "R", "--overwrite", cwd=tmp_path)
    assert proc.returncode == 1
    line = _error_line(proc)
    assert line.startswith("rt4chart: run failed: InputFileError: cut.jsonl.gz: truncated or "
                           "corrupt input: read ")
    assert "Traceback" not in proc.stderr
    assert snapshot(out) == before  # the staging folder is gone too
    proc = rt4chart("audit", "cut.jsonl.gz", "--out", "P", "--allow-partial-input", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    tables = read_tables(tmp_path / "P")
    (partial,) = [d for d in tables["dead_letters"] if d["stage"] == "read"]
    assert "cut.jsonl.gz: truncated or corrupt input" in partial["reason"]
    assert 0 < len(tables["answers"]) < 200


def test_nothing_valid_to_audit_exits_1_saying_so(tmp_path):
    write_jsonl(tmp_path / "bad.jsonl", ["not json", '{"trace_id": "x"}', "[1, 2]"])
    proc = rt4chart("audit", "bad.jsonl", "--out", "R", "--judge", "offline", cwd=tmp_path)
    assert proc.returncode == 1
    assert _error_line(proc) == (
        "rt4chart: nothing valid to audit: every record was dead-lettered (3 dead letters); "
        "see the summary's reasons and the dead_letters table")
    assert len(read_tables(tmp_path / "R")["dead_letters"]) == 3


def test_redo_into_the_same_folder_replaces_it_only_when_the_redo_succeeds(tmp_path):
    write_jsonl(tmp_path / "t.jsonl", TRACES)
    down = tmp_path / "down"
    down.write_text("the judge endpoint is down")
    judge = (*KEYWORD, "--judge-option", f"down_file={down}")
    proc = rt4chart("audit", "t.jsonl", "--out", "R", *judge, cwd=tmp_path)
    assert proc.returncode == 1 and "no answer could be judged" in _error_line(proc)
    out = tmp_path / "R"
    first = read_tables(out)
    assert sorted(d["trace_id"] for d in first["dead_letters"] if d["stage"] == "judge") == [
        "t0", "t1", "t2"]
    before = snapshot(out)
    down.unlink()
    # A redo that fails (a broken input next to it): R, its dead letters included, is kept.
    _truncated_gz(tmp_path / "cut.jsonl.gz")
    proc = rt4chart("audit", "cut.jsonl.gz", "--redo", "R", "--out", "R", "--overwrite",
                    *judge, cwd=tmp_path)
    assert proc.returncode == 1 and "InputFileError" in _error_line(proc)
    assert snapshot(out) == before
    # The redo that succeeds replaces R.
    proc = rt4chart("audit", "--redo", "R", "--out", "R", "--overwrite", *judge, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    tables = read_tables(out)
    assert sorted((a["trace_id"], a["status"]) for a in tables["answers"]) == [
        ("t0", "ok"), ("t1", "ok"), ("t2", "ok")]
    assert not tables["dead_letters"]
    files = json.loads((out / MANIFEST).read_text())["files"]
    assert "_redo/traces.jsonl" in files and "summary.json" in files
    assert sorted(snapshot(out)) == sorted([*files, MANIFEST])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["inputs"] == [str(out / "_redo" / "traces.jsonl")]


def _wait_for_staging(out: Path, proc: subprocess.Popen) -> Path:
    deadline = time.monotonic() + KILL_DEADLINE_S
    while time.monotonic() < deadline and proc.poll() is None:
        staging = [p for p in out.iterdir() if p.name.startswith(".staging-")]
        if staging and any(p.is_file() or p.is_dir() for p in staging[0].iterdir()):
            return staging[0]
        time.sleep(0.1)
    raise AssertionError(f"no staging folder in {out} (exit code {proc.poll()})")


def test_a_run_killed_mid_way_leaves_the_earlier_run_intact(tmp_path, earlier_run):
    out, before = earlier_run
    # Every judge call takes a minute: the run is still judging when it is killed.
    args = [RT4CHART, "audit", "--example", "--out", "R", "--overwrite", *KEYWORD,
            "--judge-option", "delay_s=60"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(FAKES)}
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        staging = _wait_for_staging(out, proc)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    after = snapshot(out)
    assert {k: v for k, v in after.items() if not k.startswith(staging.name)} == before
    # The next run replaces the earlier one (the killed run's staging folder is not its).
    proc = rt4chart("audit", "--example", "--out", "R", "--overwrite", "--judge", "offline",
                    cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    files = json.loads((out / MANIFEST).read_text())["files"]
    assert sorted(f for f in snapshot(out) if not f.startswith(staging.name)) == sorted(
        [*files, MANIFEST])
    assert snapshot(out)["summary.json"] != before["summary.json"]


def test_a_stream_into_a_foreign_folder_is_refused_before_it_starts(tmp_path, capsys):
    from rt4chart.pipeline.cli import main as cli

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes")
    code = cli.main(["stream", "--subscription", "projects/p/subscriptions/s", "--out",
                     str(mine), "--judge", "offline"])
    assert code == 2
    assert "holds files that rt4chart did not write: notes.txt" in capsys.readouterr().err
    assert snapshot(mine) == {"notes.txt": b"my notes"}


# Runs `rt4chart audit` with the swap paused after CUT file moves: at that point it writes
# PAUSE and sleeps, for the test to kill it (a fault-injection point in the process the test
# started, not a side channel of rt4chart's).
PAUSED_AUDIT = """
import sys, time
from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.storage import run_folder as runfolder
cut, pause, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
real, moves = runfolder._move, []
def paused(source, destination):
    if not destination.endswith(runfolder.MANIFEST) and not destination.endswith(".tmp"):
        if len(moves) == cut:
            open(pause, "w").close()
            time.sleep(600)
        moves.append(destination)
    real(source, destination)
runfolder._move = paused
sys.exit(cli.main(argv))
"""


def _killed_at_swap(tmp_path: Path, cut: int, *audit_args: str) -> None:
    pause = tmp_path / "paused"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(FAKES)}
    proc = subprocess.Popen([sys.executable, "-c", PAUSED_AUDIT, str(cut), str(pause),
                             "audit", *audit_args], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 300
        while not pause.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pause.exists(), proc.stderr.read().decode()[-2000:] if proc.poll() else "hang"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("phase", ["setting the earlier run aside", "moving the new run in"])
def test_a_kill_during_the_overwrite_swap_loses_neither_run(tmp_path, earlier_run, phase):
    """Issue 33, defect 3: the earlier run's files were deleted before the new ones moved in;
    a kill between left a half-new folder that `report` accepted. Now: `report` refuses the
    folder cut short, and the next run's first step puts the earlier run back whole (killed
    while it was set aside) or finishes the new one (killed while it moved in)."""
    out, before = earlier_run
    earlier_files = json.loads(before[MANIFEST])["files"]
    write_jsonl(tmp_path / "t.jsonl", TRACES)
    cut = 1 if phase.startswith("setting") else len(earlier_files) + 1
    _killed_at_swap(tmp_path, cut, "t.jsonl", "--out", "R", "--overwrite", "--judge", "offline")
    assert json.loads((out / MANIFEST).read_text())["complete"] is False
    proc = rt4chart("report", "R", "--out", "r.html", cwd=tmp_path)
    assert proc.returncode == 2 and "cut short" in proc.stderr
    # What any next `rt4chart audit --out R` does first, under the folder's lock.
    recover = ("from rt4chart.pipeline.storage.run_folder import RunFolder; "
               "RunFolder('R', overwrite=True).check()")
    subprocess.run([sys.executable, "-c", recover], cwd=tmp_path, check=True)
    after = {k: v for k, v in snapshot(out).items() if not k.startswith(".staging-")}
    if phase.startswith("setting"):
        assert after == before  # the earlier run, byte for byte
    else:
        manifest = json.loads(after[MANIFEST])
        assert manifest["complete"] is True and sorted(after) == sorted(
            [*manifest["files"], MANIFEST])
        assert sorted(a["trace_id"] for a in read_tables(out)["answers"]) == ["t0", "t1", "t2"]
    proc = rt4chart("report", "R", "--out", "r.html", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
