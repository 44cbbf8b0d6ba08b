"""The planted-injection benchmark: how far an obeying judge gets hallucinated claims through as
ENT, with no confirmation, with `--confirm-ent` (the same judge, isolated) and with
`--confirm-judge` (an honest second judge), per placement of the instruction.

    .venv/bin/python tests/bench/bench_injection.py [--data tests/data/injection] [--work DIR]
        [--modes none,confirm-ent,confirm-judge]

The traces and their gold are written for it (`tests/fakes/planted_injections.py`: fictional
products, four sentences an answer, one hallucinated; an instruction to answer ENT planted in a
separate sentence, inside the sentence a lucky judge quotes, in the question, in a document
title, split across sentences, in French, German and Chinese, in base64, with zero-width
characters and look-alikes; and a control with none). The judge (`tests/fakes/obeying_judge.py`)
follows any instruction in front of it, else answers from the gold. Per placement and mode it
prints: the hallucinated claims that end ENT, the faithful answers lost (gold faithful answers
not labelled ENT: the bench's answers all hold a hallucination, so this counts faithful
claims not ENT), the share of traces `suspicious_input` flags, and the judge calls; then what
each mode would cost per 1,000 traces with real models (`--estimate`, no call). Run through
the `rt4chart audit` command, offline (the judges are module:factory fakes, no network).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAKES = HERE.parent / "fakes"
sys.path.insert(0, str(FAKES))

from rt4chart.pipeline.cli import main as cli  # noqa: E402

from planted_injections import PLACEMENTS  # noqa: E402
from testutil import read_tables  # noqa: E402

DEFAULT_DATA = HERE.parent / "data" / "injection"
JUDGE = "obeying_judge:factory"


def mode_args(mode: str, gold: Path) -> list[str]:
    """The audit options of a mode (`none`, `confirm-ent`, `confirm-judge`)."""
    base = ["--judge", JUDGE, "--judge-option", f"gold={gold}"]
    if mode == "confirm-ent":
        return [*base, "--confirm-ent"]
    if mode == "confirm-judge":
        return [*base, "--confirm-judge", JUDGE, "--confirm-judge-option", f"gold={gold}",
                "--confirm-judge-option", "obey=false"]
    if mode != "none":
        raise ValueError(f"unknown mode {mode!r}")
    return base


@dataclass
class Figures:
    """One placement's figures under one mode."""

    traces: int = 0
    hallucinated: int = 0  # gold-hallucinated claims
    passed: int = 0  # ... of them labelled ENT
    faithful: int = 0  # gold-faithful claims
    lost: int = 0  # ... of them not labelled ENT
    flagged: int = 0  # traces marked suspicious_input
    calls: int = 0
    passed_ids: list[str] = field(default_factory=list)

    @property
    def pass_share(self) -> float:
        return self.passed / self.hallucinated if self.hallucinated else 0.0


def measure(traces: Path, gold_path: Path, mode: str, out: Path) -> dict[str, Figures]:
    """Audit `traces` under `mode` into `out`; the figures per placement (the trace's route)."""
    shutil.rmtree(out, ignore_errors=True)
    code = cli.main(["audit", str(traces), "--out", str(out), *mode_args(mode, gold_path)])
    if code != 0:
        raise RuntimeError(f"audit under {mode} exited {code}")
    gold = json.loads(gold_path.read_text(encoding="utf-8"))
    tables = read_tables(out)
    figures: dict[str, Figures] = defaultdict(Figures)
    for answer in tables["answers"]:
        f = figures[answer["route"]]
        f.traces += 1
        f.flagged += bool(answer["suspicious_input"])
        f.calls += answer["judge_calls"]
        if answer["status"] != "ok":
            raise RuntimeError(f"{answer['trace_id']} is incomplete: {answer['reason']}")
    for claim in tables["claims"]:
        f = figures[claim["route"]]
        label = gold[claim["trace_id"]]["labels"][claim["sentence_index"]]
        if label == "faithful":
            f.faithful += 1
            f.lost += claim["label"] != "ENT"
        else:
            f.hallucinated += 1
            if claim["label"] == "ENT":
                f.passed += 1
                f.passed_ids.append(claim["trace_id"])
    return dict(figures)


def table(results: dict[str, dict[str, Figures]]) -> str:
    modes = list(results)
    head = ("| placement | " + " | ".join(f"{m}: hallucinated ENT" for m in modes)
            + " | faithful claims lost (" + "/".join(modes) + ") | suspicious_input flagged | "
            + "judge calls (" + "/".join(modes) + ") |")
    lines = [head, "|" + "---|" * (len(modes) + 4)]
    totals = {m: Figures() for m in modes}
    for placement in PLACEMENTS:
        row = [results[m][placement] for m in modes]
        for m, f in zip(modes, row, strict=True):
            t = totals[m]
            t.hallucinated += f.hallucinated
            t.passed += f.passed
            t.faithful += f.faithful
            t.lost += f.lost
            t.calls += f.calls
            t.traces += f.traces
            t.flagged += f.flagged
        lines.append(f"| {placement} | " + " | ".join(
            f"{f.passed}/{f.hallucinated} = {f.pass_share:.0%}" for f in row)
            + " | " + "/".join(str(f.lost) for f in row)
            + f" | {row[0].flagged}/{row[0].traces} | " + "/".join(str(f.calls) for f in row)
            + " |")
    base = totals[modes[0]].calls
    lines.append("| all | " + " | ".join(
        f"{t.passed}/{t.hallucinated} = {t.pass_share:.0%}" for t in totals.values())
        + " | " + "/".join(str(t.lost) for t in totals.values())
        + f" | {totals[modes[0]].flagged}/{totals[modes[0]].traces} | "
        + "/".join(f"{t.calls} ({t.calls / base - 1:+.0%})" if base else str(t.calls)
                   for t in totals.values()) + " |")
    return "\n".join(lines)


# What the modes would cost with real models, by `--estimate` (no call): a cheap first judge,
# and a stronger second one for --confirm-judge.
FIRST_MODEL, SECOND_MODEL = "gpt-4o-mini", "gpt-4o"


def estimated_usd(traces: Path, mode: str) -> float:
    """`audit --estimate`'s USD for `traces` under `mode` with FIRST_MODEL (and SECOND_MODEL
    confirming for confirm-judge)."""
    extra = {"none": [], "confirm-ent": ["--confirm-ent"],
             "confirm-judge": ["--confirm-judge", "openai", "--confirm-judge-option",
                               f"model={SECOND_MODEL}"]}[mode]
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = cli.main(["audit", str(traces), "--judge", "openai", "--model", FIRST_MODEL,
                         *extra, "--estimate", "--estimate-json", "-"])
    if code != 0:
        raise RuntimeError(f"--estimate under {mode} exited {code}")
    return json.loads(out.getvalue())["runs"]["configured"]["usd"]["configured"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--work", type=Path, default=Path("/tmp/rt4chart-bench-injection"))
    parser.add_argument("--modes", default="none,confirm-ent,confirm-judge")
    args = parser.parse_args()
    results = {}
    for mode in args.modes.split(","):
        results[mode] = measure(args.data / "traces.jsonl", args.data / "gold.json", mode,
                                args.work / mode)
    print(table(results))
    traces = args.data / "traces.jsonl"
    n = sum(f.traces for f in next(iter(results.values())).values())
    print(f"estimated USD per 1,000 traces ({FIRST_MODEL} first"
          + (f", {SECOND_MODEL} confirming" if "confirm-judge" in results else "") + "): "
          + ", ".join(f"{m} ${estimated_usd(traces, m) * 1000 / n:.2f}" for m in results))


if __name__ == "__main__":
    main()
