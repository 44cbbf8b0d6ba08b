"""The adversarial corpus (tests/data/adversarial) audited in one run of the `rt4chart` console
script: every valid trace gets exactly one answer, every bad record exactly one dead letter
naming what was wrong, nothing else, exit 0.

What each record must become is in tests/data/adversarial/expected.json (the README's table
is written from it by make_corpus.py). Run-level cases get runs of their own: a truncated
gzip (with and without --allow-partial-input), and an input with no valid record (exit 1).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from testutil import read_tables

CORPUS = Path(__file__).resolve().parents[1] / "data" / "adversarial"
MANIFEST = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
ENTRIES = MANIFEST["entries"]
TRUNCATED = MANIFEST["truncated"]


def _script() -> str:
    """The installed `rt4chart` console script of the interpreter running the tests."""
    script = Path(sys.executable).parent / "rt4chart"
    assert script.exists(), f"no console script at {script}: is the package installed?"
    return str(script)


def _audit(home: Path, *args) -> tuple[subprocess.CompletedProcess, dict[str, list[dict]]]:
    """`rt4chart audit ARGS --out HOME/out` as a user runs it: (the process, the tables)."""
    out = home / "out"
    proc = subprocess.run(
        [_script(), "audit", *map(str, args), "--out", str(out)],
        capture_output=True, text=True, timeout=900,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home)},  # no endpoint: the offline judge
    )
    return proc, read_tables(out) if (out / "answers").exists() else {}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(the finished process, the output tables, the output folder) of one audit of the whole
    corpus."""
    home = tmp_path_factory.mktemp("adversarial")
    proc, tables = _audit(home, *(CORPUS / f for f in MANIFEST["files"]))
    return proc, tables, home / "out"


def _owners(letter: dict) -> list[dict]:
    """The corpus records a dead letter can belong to (by marker or, for a short line, by its
    whole text)."""
    return [e for e in ENTRIES if e["expected"] == "dead letter" and (
        letter["raw"] == e["raw"] if e["raw"] is not None else e["marker"] in letter["raw"])]


def _letters_of(entry: dict, letters: list[dict]) -> list[dict]:
    return [d for d in letters if entry in _owners(d)]


def _where(entry: dict) -> str:
    return f"{entry['file']}:{entry['line']} ({entry['kind']})"


def test_the_whole_mix_is_audited_or_dead_lettered_record_by_record(run):
    proc, tables, out = run
    assert proc.returncode == 0, proc.stderr[-3000:]
    answers = Counter(a["trace_id"] for a in tables["answers"])
    letters = tables["dead_letters"]

    problems = [f"{_where(e)}: {answers[e['trace_id']]} answers" for e in ENTRIES
                if e["expected"] == "audited" and answers[e["trace_id"]] != 1]
    expected_ids = {e["trace_id"] for e in ENTRIES if e["expected"] == "audited"}
    problems += [f"an answer for {i!r}, meant to be a dead letter" for i in answers
                 if i not in expected_ids]
    for entry in (e for e in ENTRIES if e["expected"] == "dead letter"):
        mine = _letters_of(entry, letters)
        if len(mine) != 1:
            problems.append(f"{_where(entry)}: {len(mine)} dead letters "
                            f"{[(d['stage'], d['reason'][:200]) for d in mine]}")
        elif mine[0]["stage"] != entry["stage"] or entry["reason"] not in mine[0]["reason"]:
            problems.append(f"{_where(entry)}: ({mine[0]['stage']}, "
                            f"{mine[0]['reason'][:300]!r}), expected ({entry['stage']}, "
                            f"...{entry['reason']!r}...)")
    labels = {a["trace_id"]: a["label"] for a in tables["answers"]}
    problems += [f"{_where(e)}: answer {e['not_label']}" for e in ENTRIES
                 if e.get("not_label") and labels.get(e["trace_id"]) == e["not_label"]]
    problems += [f"a dead letter of {len(_owners(d))} corpus records: {d['stage']}, "
                 f"{d['reason'][:200]!r}, raw {d['raw'][:120]!r}" for d in letters
                 if len(_owners(d)) != 1]
    assert not problems, "\n".join(problems)

    records = sum(e["expected"] != "skipped" for e in ENTRIES)
    assert records == sum(answers.values()) + len(letters)
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["traces"], summary["dead_letters"]) == (sum(answers.values()), len(letters))


def test_a_truncated_gzip_stops_the_run_naming_the_file(tmp_path):
    proc, _ = _audit(tmp_path, CORPUS / TRUNCATED["file"])
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert f"{TRUNCATED['file']}: truncated or corrupt input" in proc.stderr


def _partial_input_gives_the_lines_read_and_one_dead_letter(tmp_path):
    proc, tables = _audit(tmp_path, CORPUS / TRUNCATED["file"], "--allow-partial-input")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (letter,) = tables["dead_letters"]
    assert letter["stage"] == "read" and "truncated or corrupt input" in letter["reason"]
    read = int(re.search(r"read (\d+) line\(s\)", letter["reason"]).group(1))
    assert 0 < read < TRUNCATED["traces"] and len(tables["answers"]) == read


def _no_valid_record_exits_1(tmp_path):
    proc, tables = _audit(tmp_path, CORPUS / "csv_as_jsonl.jsonl")
    assert len(tables["dead_letters"]) == 3 and not tables["answers"]
    assert proc.returncode == 1, "a run where every record is a dead letter must exit 1"


# Run-level cases: with --allow-partial-input a truncated file gives the lines read and one dead
# letter; an input where every record is invalid exits 1.
@pytest.mark.parametrize("case", [_partial_input_gives_the_lines_read_and_one_dead_letter,
                                  _no_valid_record_exits_1],
                         ids=["allow-partial-input", "nothing-valid-exit-1"])
def test_run_level_cases(tmp_path, case):
    case(tmp_path)


def _make_corpus():
    spec = importlib.util.spec_from_file_location("make_corpus", CORPUS / "make_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_corpus", module)  # dataclasses look their module up
    spec.loader.exec_module(sys.modules["make_corpus"])
    return sys.modules["make_corpus"]


def test_the_manifest_covers_every_line_and_the_readme_shows_it():
    make_corpus = _make_corpus()
    for name in (f for f in MANIFEST["files"] if not f.endswith(".parquet")):
        data = (CORPUS / name).read_bytes()
        data = make_corpus.gzip.decompress(data) if name.endswith(".gz") else data
        if name.endswith(".zst"):
            import zstandard

            data = zstandard.ZstdDecompressor().decompressobj().decompress(data)
        codec = {"utf16.jsonl": "utf-16", "utf16be.jsonl": "utf-16-be"}.get(name, "utf-8")
        # CR LF, CR and LF each end a line (cr_only.jsonl, cr_then_lf.jsonl, ...)
        lines = re.split("\r\n|\r|\n", data.decode(codec, errors="replace"))
        assert lines[-1] == "" and len(lines) - 1 == sum(e["file"] == name for e in ENTRIES), name
    entries = [make_corpus.Entry(**e) for e in ENTRIES]
    assert make_corpus.readme_table(entries) in (CORPUS / "README.md").read_text(encoding="utf-8")
    bad_kinds = {e["kind"] for e in ENTRIES if e["expected"] == "dead letter"}
    assert len(bad_kinds) >= 30
