"""One run at a time per --out, and a killed run leaves nothing in the system's temporary folder,
through the real console script: a second run to a folder another run holds fails at once
(exit 2, naming the holder); once the holder is SIGKILLed the lock is gone with it, and the
killed run's temporary folders are in its staging folder, not in TMPDIR."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

RT4CHART = str(Path(sys.executable).parent / "rt4chart")
FAKES = Path(__file__).parents[1] / "fakes"
DEADLINE_S = 120.0  # a hang guard: the staging folder appears within seconds
SLOW = ("--judge", "fake_judges:keyword", "--judge-option", "delay_s=60")


def _env(tmp_path: Path) -> dict[str, str]:
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(FAKES),
            "TMPDIR": str(temp)}


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([RT4CHART, *args], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300)


def _wait_until_judging(out: Path, proc: subprocess.Popen) -> Path:
    """The running run's staging folder, once its pipeline has started (Beam's temp folder,
    wherever it is)."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline and proc.poll() is None:
        started = [*out.glob(".staging-*/.tmp-run/beam-pipeline-temp*"),
                   *out.parent.glob("tmp/beam-pipeline-temp*")]
        staging = list(out.glob(".staging-*"))
        if started and staging:
            return staging[0]
        time.sleep(0.1)
    raise AssertionError(f"the run did not start its pipeline (exit code {proc.poll()})")


def _ours(temp: Path) -> list[str]:
    return sorted(p.name for p in temp.iterdir()
                  if p.name.startswith(("beam-pipeline-temp", "rt4chart-live-")))


def test_a_second_run_to_a_held_folder_fails_fast_and_a_killed_holder_leaves_no_lock(tmp_path):
    proc = subprocess.Popen([RT4CHART, "audit", "--example", "--out", "R", "--overwrite",
                             *SLOW], cwd=tmp_path, env=_env(tmp_path),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        staging = _wait_until_judging(tmp_path / "R", proc)
        second = _run(tmp_path, "audit", "--example", "--out", "R", "--overwrite",
                      "--judge", "offline")
        assert proc.poll() is None  # the holder is still running
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert second.returncode == 2, second.stderr[-2000:]
    assert f"--out {tmp_path / 'R'} is in use by another rt4chart run (pid {proc.pid}" in (
        second.stderr)
    assert not (tmp_path / "R" / "summary.json").exists()  # the second run wrote nothing
    # The killed run's temporary folders are in its staging folder, none in TMPDIR.
    assert _ours(tmp_path / "tmp") == []
    assert list(staging.glob(".tmp-run/beam-pipeline-temp*"))
    # The lock went with the killed process: the next run goes ahead.
    third = _run(tmp_path, "audit", "--example", "--out", "R", "--overwrite",
                 "--judge", "offline")
    assert third.returncode == 0, third.stderr[-2000:]
    assert (tmp_path / "R" / "summary.json").exists()
    assert _ours(tmp_path / "tmp") == []
    assert staging.exists()  # a killed run's staging folder is kept, as before


def test_a_refused_run_into_a_new_folder_leaves_no_folder_behind(tmp_path):
    proc = _run(tmp_path, "audit", "missing.jsonl", "--out", "new", "--judge", "offline")
    assert proc.returncode == 2
    assert not (tmp_path / "new").exists()


def test_a_killed_run_leaves_its_temporary_folders_in_its_staging_folder_not_tmpdir(tmp_path):
    proc = subprocess.Popen([RT4CHART, "audit", "--example", "--out", "R", *SLOW],
                            cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        staging = _wait_until_judging(tmp_path / "R", proc)
        time.sleep(1.0)  # the progress tally is open by now
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert _ours(tmp_path / "tmp") == []
    assert _ours(staging / ".tmp-run")
