"""Readers see one run (issue 47, defect 5): an `--overwrite` swapped into a run folder while
`report`, `gate`, `export`, `annotate` or `rt4chart.open_run` reads it never yields one run's
answers beside the other run's claims; the reader reads again, or refuses (exit 2) naming why.

Two real runs of the same ten traces (keyword judge): A flags every answer (NIC), B none (ENT).
The swap is made deterministic by a hook between two tables: after the answers table is read,
the other run is swapped into the folder by the writer's own code (`RunFolder.commit`, as
`audit --overwrite` does). Before, `report` exited 0 with A's ten hallucinated answers beside
B's entailed claims.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

import rt4chart
from rt4chart.pipeline.cli import annotate as annotate_cli
from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.results import load, runs
from rt4chart.pipeline.sources.phoenix_client import PhoenixTarget
from rt4chart.pipeline.storage.folder_scan import MANIFEST, Manifest, list_files
from rt4chart.pipeline.storage.run_folder import RunFolder
from rt4chart.pipeline.storage.run_lock import FolderLock
from rt4chart.pipeline.storage.run_reads import RunChangedError, read_one_run

CTX = "Tokyo is the capital of Japan. It has about 14 million inhabitants."
IDS = [f"t{i}" for i in range(10)]


def _records(answer: str) -> list[dict]:
    return [{"trace_id": i, "contexts": [CTX], "answer": answer} for i in IDS]


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    """A (every answer NIC) and B (every answer ENT), each a run folder of its own."""
    base = tmp_path_factory.mktemp("sources")
    made = {"A": base / "A", "B": base / "B"}
    rt4chart.audit(_records("The tower is MADEUP."), judge="fake_judges:keyword",
                   out=made["A"], write_traces=True)
    rt4chart.audit(_records("Tokyo is the capital of Japan."), judge="fake_judges:keyword",
                   out=made["B"], write_traces=True)
    return made


def swap_in(source: Path, out: Path) -> None:
    """`source`'s run swapped into `out` as `audit --overwrite` ends: staged, then committed."""
    folder = RunFolder(str(out), overwrite=True)
    for rel in list_files(str(source)):
        if rel != MANIFEST:
            target = Path(folder.staging) / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / rel, target)
    folder.commit()


@pytest.fixture
def run_a(tmp_path, sources) -> Path:
    out = tmp_path / "R"
    swap_in(sources["A"], out)
    return out


def swap_after_answers(monkeypatch, sources, out: Path, times: int) -> list[str]:
    """After each of the first `times` reads of the answers table of `out`, swap in the run it
    does not hold (A <-> B); the swaps made, in order."""
    swaps: list[str] = []
    holds = ["A"]

    def after(name: str) -> None:
        if name == "answers" and len(swaps) < times:
            holds[0] = "B" if holds[0] == "A" else "A"
            swap_in(sources[holds[0]], out)
            swaps.append(holds[0])

    real_reader, real_table = load.table_reader, runs.read_table

    def table_reader(source, client=None):
        read = real_reader(source, client)

        def hooked(name):
            rows = read(name)
            after(name)
            return rows
        return hooked

    def read_table(source, name):
        table = real_table(source, name)
        after(name)
        return table

    monkeypatch.setattr(load, "table_reader", table_reader)
    monkeypatch.setattr(annotate_cli, "table_reader", table_reader)
    monkeypatch.setattr(runs, "read_table", read_table)
    return swaps


def test_sources_differ_as_the_test_needs(sources):
    a, b = (rt4chart.open_run(str(sources[k])) for k in "AB")
    assert {x.label for x in a.answers} == {"NIC"} and len(a.answers) == 10
    assert {x.label for x in b.answers} == {"ENT"} and len(b.answers) == 10


def test_the_report_reads_again_after_a_swap_between_two_tables(monkeypatch, sources, run_a):
    swaps = swap_after_answers(monkeypatch, sources, run_a, times=1)
    run = load.load_run(str(run_a))
    assert swaps == ["B"]
    # All of B: before, the answers were A's (10 NIC) and the claims B's (ENT).
    assert {a["label"] for a in run.answers} == {"ENT"}
    assert {c["label"] for c in run.claims} == {"ENT"}
    assert {a["trace_id"] for a in run.answers} == set(IDS)


def test_open_run_reads_again_after_a_swap_between_two_tables(monkeypatch, sources, run_a):
    swaps = swap_after_answers(monkeypatch, sources, run_a, times=1)
    result = rt4chart.open_run(str(run_a))
    assert swaps == ["B"]
    assert {a.label for a in result.answers} == {"ENT"}
    assert {c.label for a in result.answers for c in a.claims} == {"ENT"}
    assert result.summary.hallucinated == 0


@pytest.mark.parametrize("command", [
    ["report", "{R}", "--out", "{tmp}/report.html"],
    ["gate", "{R}", "--max-rate", "0.5"],
    ["export", "{R}", "--all", "--out", "{tmp}/labels.jsonl"],
])
def test_a_folder_swapped_at_every_read_is_refused_with_exit_2(monkeypatch, capsys, sources,
                                                              run_a, tmp_path, command):
    swaps = swap_after_answers(monkeypatch, sources, run_a, times=99)
    argv = [part.format(R=run_a, tmp=tmp_path) for part in command]
    assert cli.main(argv) == 2
    assert len(swaps) == 3  # three attempts, each cut by a swap
    err = capsys.readouterr().err
    assert f"rt4chart: error: {run_a} changed while it was read, 3 times" in err
    assert not (tmp_path / "report.html").exists() and not (tmp_path / "labels.jsonl").exists()


def test_open_run_refuses_a_folder_swapped_at_every_read(monkeypatch, sources, run_a):
    swap_after_answers(monkeypatch, sources, run_a, times=99)
    with pytest.raises(RunChangedError, match="changed while it was read, 3 times"):
        rt4chart.open_run(str(run_a))


def test_annotate_refuses_a_folder_swapped_at_every_read(monkeypatch, sources, run_a):
    """Refused before any verdict is sent (no Phoenix is reached: none listens there)."""
    swaps = swap_after_answers(monkeypatch, sources, run_a, times=99)
    with pytest.raises(RunChangedError, match="changed while it was read, 3 times"):
        annotate_cli.annotate(PhoenixTarget("http://127.0.0.1:9"), str(run_a))
    assert len(swaps) == 3


def _mid_swap(out: Path) -> bytes:
    """The manifest a swap writes before it moves the new run in (phase moving-new-in)."""
    manifest = Manifest("20990101T000000Z-feedf00d", ("answers/part-0.parquet",),
                        complete=False, phase="moving-new-in", aside=".previous-x")
    (out / MANIFEST).write_bytes(manifest.dumps())
    return manifest.dumps()


def test_open_run_refuses_a_swap_cut_short(run_a):
    before = (run_a / MANIFEST).read_bytes()
    _mid_swap(run_a)  # no run holds the folder's lock: the swap was cut short
    with pytest.raises(RunChangedError, match="cut short while it was being swapped in"):
        rt4chart.open_run(str(run_a))
    (run_a / MANIFEST).write_bytes(before)
    assert len(rt4chart.open_run(str(run_a)).answers) == 10


def test_a_swap_under_way_is_waited_for(run_a):
    """While a run holds the folder's lock, a manifest mid-swap means the swap is under way:
    the reader waits for the manifest the swap ends with, then reads."""
    final = (run_a / MANIFEST).read_bytes()
    lock = FolderLock(str(run_a))
    lock.acquire()
    try:
        _mid_swap(run_a)
        reads: list[bytes] = []
        ended = threading.Timer(1.0, lambda: (run_a / MANIFEST).write_bytes(final))
        ended.start()
        value = read_one_run(str(run_a), lambda: reads.append(
            (run_a / MANIFEST).read_bytes()) or len(reads), swap_wait_s=120)
        ended.join()
    finally:
        lock.release()
    assert value == 1 and reads == [final]


def test_a_folder_without_a_manifest_is_read_once(tmp_path):
    calls: list[int] = []
    assert read_one_run(str(tmp_path), lambda: calls.append(1) or "read") == "read"
    assert calls == [1]
