"""The runs `rt4chart gate` must refuse or fail (issue 47), made as a user's CI would make them:
real audits with a custom judge plugged in through the public `module:factory` contract
(gate_judges.py), and, for what only a crash makes, a completed run's folder changed as the
crash leaves it (the manifest and file moves `RunFolder.keep_failed` and `RunFolder.commit`
make). Shared by tests/integration/test_gate_cases.py and tests/bench/bench_gate_cases.py.

Every run audits the same five trace ids of route `faq`, so that any two pair up:

- `pass`: five grounded answers, judge `lexical-a`: the run every should-fail case differs
  from by one defect (and `pass-copy`, its copy, a baseline it must pass against);
- `judge-failed`: the fifth answer hallucinated, and the judge fails on exactly its claims, so
  it ends incomplete (the audit itself succeeds);
- `partial`: the fifth answer's hallucinated last sentence cut off by `--oversize truncate`;
- `other-model`, `other-prompt`: `pass` judged by model `lexical-b`, or by `lexical-a` asked
  in another request mode (so another prompt hash);
- `failed`: `pass` as a failed run leaves its folder (manifest complete: false, phase
  failed, no summary);
- `cut`: `pass` overwritten by `judge-failed`, the swap killed half way through moving the
  new run in (manifest complete: false, phase moving-new-in).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import golden_traces as gt

G, U = gt.GROUNDED, gt.UNSUPPORTED
JUDGE = "gate_judges:lexical_judge"
MANIFEST = "_rt4chart_manifest.json"


@dataclass(frozen=True)
class Case:
    """One gate command on the runs, the exit code it must end with and a phrase its reason
    (stderr or stdout, and the JUnit file) must hold."""

    name: str
    args: tuple[str, ...]
    expected: int
    reason: str


def _audit(folder: Path, answers: list[str], **options) -> str:
    import rt4chart

    rt4chart.audit(gt.golden({"faq": answers}), judge=JUDGE, out=str(folder), **options)
    return str(folder)


def failed_run(folder: Path) -> None:
    """The folder as `RunFolder.keep_failed` leaves a run that failed after writing its
    tables: no summary, the manifest complete: false with phase failed."""
    manifest = json.loads((folder / MANIFEST).read_text())
    (folder / "summary.json").unlink()
    files = [f for f in manifest["files"] if f != "summary.json"]
    (folder / MANIFEST).write_text(json.dumps(
        {**manifest, "complete": False, "phase": "failed", "aside": None, "files": files}))


def cut_swap(folder: Path, new: Path, run_id: str = "20260101T000000Z-cut00000") -> None:
    """The folder as `RunFolder.commit` leaves it when killed while moving run `new` in over
    the run there: the earlier run's files (and manifest) set aside in .previous-RUN_ID, the
    first half of the new run's files moved in, the rest still in .staging-RUN_ID, and the
    journal manifest (complete: false, phase moving-new-in)."""
    old = json.loads((folder / MANIFEST).read_text())
    theirs = json.loads((new / MANIFEST).read_text())["files"]
    aside, staging = folder / f".previous-{run_id}", folder / f".staging-{run_id}"
    for rel in [MANIFEST, *old["files"]]:
        (aside / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(folder / rel, aside / rel)
        if rel != MANIFEST:
            (folder / rel).unlink()
    (folder / MANIFEST).write_text(json.dumps(
        {"rt4chart_manifest": 1, "run_id": run_id, "version": old["version"],
         "created_at": old["created_at"], "complete": False, "files": theirs,
         "phase": "moving-new-in", "aside": aside.name}))
    for i, rel in enumerate(theirs):
        target = (folder if i < len(theirs) // 2 else staging) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(new / rel, target)


def make_runs(root: Path) -> dict[str, str]:
    """Every run of the module's docstring under `root`, by name (5 audits, about a minute)."""
    runs = {"pass": _audit(root / "pass", [G] * 5)}
    runs["judge-failed"] = _audit(root / "judge-failed", [G] * 4 + [U],
                                  judge_option={"fail_on": "chess"})
    runs["partial"] = _audit(root / "partial", [G] * 4 + [f"{G} {U}"], oversize="truncate",
                             max_answer_sentences=2)
    runs["other-model"] = _audit(root / "other-model", [G] * 5,
                                 judge_option={"model": "lexical-b"})
    runs["other-prompt"] = _audit(root / "other-prompt", [G] * 5,
                                  judge_option={"request_mode": "schema-in-system-message"})
    for name in ("pass-copy", "failed", "cut"):
        shutil.copytree(root / "pass", root / name)
        runs[name] = str(root / name)
    failed_run(root / "failed")
    cut_swap(root / "cut", root / "judge-failed")
    return runs


def should_fail(runs: dict[str, str]) -> list[Case]:
    """The nine cases of issue 47 the gate passed (exit 0) before."""
    rate = ("--max-rate", "0.05")
    against = ("--max-increase", "0.02", "--baseline")
    return [
        Case("failed run", (runs["failed"], *rate), 2, "failed run"),
        Case("run cut mid-overwrite", (runs["cut"], *rate), 2, "cut short"),
        Case("judge failed on the hallucinated answer", (runs["judge-failed"], *rate), 1,
             "1 incomplete"),
        Case("... with --min-answers 4", (runs["judge-failed"], *rate, "--min-answers", "4"),
             1, "1 incomplete"),
        Case("partial answer", (runs["partial"], *rate), 1, "1 partial"),
        Case("baseline by another judge model", (runs["pass"], *against, runs["other-model"]),
             2, "lexical-b"),
        Case("baseline with another prompt hash",
             (runs["pass"], *against, runs["other-prompt"]), 2, "prompt hash"),
        Case("failed baseline", (runs["pass"], *against, runs["failed"]), 2, "failed run"),
        Case("baseline cut mid-overwrite", (runs["pass"], *against, runs["cut"]), 2,
             "cut short"),
    ]


def should_pass(runs: dict[str, str]) -> Case:
    """The run the cases differ from, within every limit, against its own copy."""
    return Case("should pass", (runs["pass"], "--max-rate", "0.05", "--min-answers", "4",
                                "--baseline", runs["pass-copy"], "--max-increase", "0.02"),
                0, "gate: PASS")
