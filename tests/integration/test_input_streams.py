"""Inputs read to their end or refused, as a user runs `rt4chart audit`: standard input, FIFOs
and /dev/zero (read once, spooled into the staging folder), globs over files of several
formats (each told by its content), an output folder inside an input glob (left out)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from testutil import read_tables

TIMEOUT_S = 300  # a run that hangs (a FIFO read twice) is killed, and the test fails


def _script() -> str:
    script = Path(sys.executable).parent / "rt4chart"
    assert script.exists(), f"no console script at {script}: is the package installed?"
    return str(script)


def _traces(n: int) -> list[dict]:
    # about 230 bytes a line: 450 lines are more than the sniff's 64 KB and the 400-trace chunk
    return [{"trace_id": f"s{i:04d}", "contexts": ["The shop opens at 9 am on weekdays."],
             "answer": "The shop opens at 9 am.", "metadata": {"pad": "x" * 80}}
            for i in range(n)]


def _jsonl(records: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def _run(args: list[str], home: Path, stdin=subprocess.DEVNULL, data: bytes | None = None,
         ) -> tuple[int, str]:
    """`rt4chart audit ARGS` in its own process group, killed (group) after TIMEOUT_S."""
    proc = subprocess.Popen([_script(), "audit", *args], stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(home)})
    try:
        out, _ = proc.communicate(data, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"rt4chart audit {' '.join(args)} did not finish in {TIMEOUT_S} s")
    return proc.returncode, out.decode(errors="replace")


def _audited(out: Path) -> tuple[list[str], int]:
    tables = read_tables(out)
    return sorted(a["trace_id"] for a in tables["answers"]), len(tables["dead_letters"])


@pytest.mark.parametrize("name, chunking", [("-", []), ("/dev/stdin", ["--chunk-traces", "0"])])
def test_standard_input_is_read_once_and_whole(tmp_path, name, chunking):
    records = _traces(450)
    out = tmp_path / "out"
    code, log = _run([name, "--judge", "offline", "--out", str(out), *chunking], tmp_path,
                     stdin=subprocess.PIPE, data=_jsonl(records))
    assert code == 0, log
    assert _audited(out) == (sorted(r["trace_id"] for r in records), 0)
    assert not list(out.rglob("*stdin*"))  # the spooled copy went with the staging folder


def test_a_fifo_is_read_once_and_whole(tmp_path):
    records = _traces(450)
    fifo = tmp_path / "traces.fifo"
    os.mkfifo(fifo)

    def write() -> None:
        try:
            with open(fifo, "wb") as fh:  # blocks until the audit opens it
                fh.write(_jsonl(records))
        except BrokenPipeError:
            pass  # a reader that gave up: the audit's result tells

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    out = tmp_path / "out"
    code, log = _run([str(fifo), "--judge", "offline", "--out", str(out)], tmp_path)
    assert code == 0, log
    assert _audited(out) == (sorted(r["trace_id"] for r in records), 0)


def test_compressed_standard_input_is_told_by_its_magic_number(tmp_path):
    import gzip

    records = _traces(5)
    out = tmp_path / "out"
    code, log = _run(["-", "--judge", "offline", "--out", str(out)], tmp_path,
                     stdin=subprocess.PIPE, data=gzip.compress(_jsonl(records)))
    assert code == 0, log
    assert _audited(out) == (sorted(r["trace_id"] for r in records), 0)


def test_dev_zero_ends_with_a_clear_error(tmp_path):
    out = tmp_path / "out"
    code, log = _run(["/dev/zero", "--judge", "offline", "--out", str(out)], tmp_path)
    assert code == 1
    assert "/dev/zero: the file starts with NUL bytes: not text" in log
    assert "MemoryError" not in log


def test_each_file_of_a_glob_is_read_in_its_own_format(tmp_path):
    folder = tmp_path / "dir"
    folder.mkdir()
    text, table, other = _traces(4), _traces(6)[4:], _traces(9)[6:]
    (folder / "a.jsonl").write_bytes(_jsonl(text))
    pq.write_table(pa.Table.from_pylist(table), folder / "b.parquet")
    pq.write_table(pa.Table.from_pylist(other), folder / "c.data")  # Parquet by its content
    out = tmp_path / "out"
    code, log = _run([f"{folder}/*", "--judge", "offline", "--out", str(out)], tmp_path)
    assert code == 0, log
    assert _audited(out) == (sorted(r["trace_id"] for r in text + table + other), 0)


def test_an_output_folder_inside_the_input_glob_is_left_out(tmp_path):
    folder = tmp_path / "g"
    folder.mkdir()
    records = _traces(3)
    (folder / "a.jsonl").write_bytes(_jsonl(records))
    out = folder / "out"
    for _ in range(2):  # the second run's glob matches the first run's tables
        code, log = _run([f"{folder}/**", "--judge", "offline", "--out", str(out),
                          "--overwrite"], tmp_path)
        assert code == 0, log
        assert _audited(out) == (sorted(r["trace_id"] for r in records), 0)
    assert "under the output folder" in log
