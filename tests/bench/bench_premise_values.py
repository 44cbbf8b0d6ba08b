"""Premise-only passes: hallucinated answers whose wrong value comes from the user's question and
that end ENT only because of the premise rule (issue 46).

    .venv/bin/python tests/bench/bench_premise_values.py [--cases FILE] [--work DIR] [--show]

Each case of `tests/data/exemptions/premise_values.jsonl` is audited twice through the
`rt4chart audit` command, under its own question and under a neutral one
(`premise_value_judges.NEUTRAL_QUESTION`), with two judges plugged in through the public
contract: the obeying judge (`lucky_judge:factory`, ENT to everything with the best-overlapping
context sentence as its quote) and an honest one (`premise_value_judges:honest`). A hallucinated
case is a premise-only pass when its answer ends ENT under its question but not under the
neutral one: only the question made the difference. A faithful case should end ENT under its
question with the honest judge. Printed per form, then in total, with the code that ran
(`rt4chart`'s folder and commit): run it with another tree's interpreter for "before", e.g.

    git -C /work/main worktree add --detach /tmp/base <commit>   # its own .venv, pip -e .
    /tmp/base/.venv/bin/python tests/bench/bench_premise_values.py
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAKES = HERE.parent / "fakes"
sys.path.insert(0, str(FAKES))

from premise_value_judges import CASES, FORMS, NEUTRAL_QUESTION, load_cases, trace  # noqa: E402

import rt4chart  # noqa: E402
from rt4chart.pipeline.cli import main as cli  # noqa: E402

from testutil import read_tables, write_jsonl  # noqa: E402

OBEYING, HONEST = "lucky_judge:factory", "premise_value_judges:honest"
NEUTRAL = "~neutral"
PREMISE_NOTE = "premise, not demanded from the quotes"  # specifics.supported_verdict's note


def labels(cases: list[dict], judge: str, work: Path) -> tuple[dict, set[str]]:
    """Each trace's answer label (both questions) under `judge`, through `rt4chart audit`, and
    the traces one of whose claims kept its ENT as the question's premise."""
    traces = [t for c in cases for t in (trace(c), trace(c, NEUTRAL_QUESTION, NEUTRAL))]
    name = judge.split(":")[0]
    path = write_jsonl(work / f"{name}.jsonl", traces)
    out = work / f"{name}-out"
    shutil.rmtree(out, ignore_errors=True)
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["audit", str(path), "--out", str(out), "--judge", judge])
    if code != 0:
        raise RuntimeError(f"audit with {judge} exited {code}")
    tables = read_tables(out)
    answers = tables["answers"]
    if len(answers) != len(traces) or any(a["status"] != "ok" for a in answers):
        bad = [(a["trace_id"], a["reason"]) for a in answers if a["status"] != "ok"]
        raise RuntimeError(f"{judge}: {len(traces)} traces, incomplete answers: {bad}")
    kept = {c["trace_id"] for c in tables["claims"] if PREMISE_NOTE in (c["note"] or "")}
    return {a["trace_id"]: a["label"] for a in answers}, kept


def code_version() -> str:
    folder = Path(rt4chart.__file__).resolve().parents[1]
    commit = subprocess.run(["git", "-C", str(folder), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(folder), "status", "--porcelain", "--", "transforms"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return f"{folder} @ {commit or '?'}{' (transforms modified)' if dirty else ''}"


def report(cases: list[dict], obeying: dict, honest: dict, kept: set[str], show: bool) -> None:
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    passes, lost = [], []
    for c in cases:
        row = rows[c["form"]]
        with_q, neutral = obeying[c["id"]], obeying[c["id"] + NEUTRAL]
        if c["gold"] == "hallucinated":
            row[0] += 1
            row[1] += with_q == "ENT"
            if with_q == "ENT" and neutral != "ENT":
                row[2] += 1
                passes.append(c["id"])
        else:
            row[3] += 1
            if honest[c["id"]] != "ENT":
                lost.append(c["id"])
    print("| form | hallucinated | ENT (obeying) | premise-only passes | faithful |")
    print("|---|---|---|---|---|")
    for form in FORMS:
        if form in rows:
            n, ent, only, faithful = rows[form]
            print(f"| {form} | {n} | {ent} | {only} | {faithful} |")
    hallucinated = sum(r[0] for r in rows.values())
    faithful = sum(r[3] for r in rows.values())
    print(f"\npremise-only passes: {len(passes)}/{hallucinated}")
    print(f"hallucinated ENT under their question (obeying): "
          f"{sum(r[1] for r in rows.values())}/{hallucinated}")
    print(f"faithful settings ENT under their question (honest): {faithful - len(lost)}/"
          f"{faithful}")
    by_rule = sum(honest[c["id"]] == "ENT" and c["id"] in kept
                  for c in cases if c["gold"] == "faithful")
    print(f"  of which kept by the premise rule (a claim's note names it): {by_rule}")
    if show:
        print("premise-only:", ", ".join(passes) or "-")
        print("faithful lost:", ", ".join(lost) or "-")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=Path, default=CASES)
    parser.add_argument("--work", type=Path, help="folder for the runs (default: a temp dir)")
    parser.add_argument("--show", action="store_true", help="name the cases behind the figures")
    args = parser.parse_args(argv)
    cases = load_cases(args.cases)
    print(f"code: {code_version()}")
    with tempfile.TemporaryDirectory(prefix="premise-values-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        obeying, _ = labels(cases, OBEYING, work)
        honest, kept = labels(cases, HONEST, work)
    report(cases, obeying, honest, kept, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
