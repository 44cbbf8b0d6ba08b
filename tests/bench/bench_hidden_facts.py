"""Hidden facts (issue 46): how many planted false facts escape when their form (a heading, a
greeting before them, a question tag, a lead-in with a colon, an advice clause, "Here is how
...", in several languages) once made them exempt from checking.

    .venv/bin/python tests/bench/bench_hidden_facts.py [--data FILE.jsonl]
        [--work DIR] [--show]

Each trace of the case file is one answer: a faithful sentence copied from the context, then
either a planted false fact (`metadata.planted` "true") or a discourse-only remark ("I hope
this helps!", "Vielen Dank!": a control that must stay exempt). The audit runs through the
`rt4chart audit` command, offline, twice: with the honest judge of `tests/fakes/honest_judge.py`
returning each sentence as its claim (`claims=sentence`), and with the same judge returning no
claim at all (`claims=none`). A planted answer *escapes* when it ends ENT (the false fact was
never verified: `no_claim`, or not re-added by coverage); a control is *lost* when it does not
end ENT. Prints both counts per judge and per form, and with `--show` the escaped traces.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAKES = HERE.parent / "fakes"
sys.path.insert(0, str(FAKES))

from rt4chart.pipeline.cli import main as cli  # noqa: E402

from testutil import read_tables  # noqa: E402

DEFAULT_DATA = HERE.parent / "data" / "exemptions" / "hidden_facts.jsonl"
JUDGE = "honest_judge:factory"
MODES = ("sentence", "none")


@dataclass
class Figures:
    """One judge mode's figures over the case file."""

    planted: int = 0
    escaped: int = 0  # planted answers that end ENT
    controls: int = 0
    lost: int = 0  # faithful controls that do not end ENT
    escaped_ids: list[str] = field(default_factory=list)
    lost_ids: list[str] = field(default_factory=list)
    by_form: Counter = field(default_factory=Counter)  # escaped per form


def measure(data: Path, mode: str, out: Path) -> Figures:
    """Audit `data` with the honest judge in `mode` into `out`; the figures."""
    shutil.rmtree(out, ignore_errors=True)
    args = ["audit", str(data), "--out", str(out), "--judge", JUDGE,
            "--judge-option", f"claims={mode}"]
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(args)
    if code != 0:
        raise RuntimeError(f"audit with claims={mode} exited {code}")
    traces = {r["trace_id"]: r for r in map(json.loads, data.read_text("utf-8").splitlines())}
    figures = Figures()
    for answer in read_tables(out)["answers"]:
        meta = traces[answer["trace_id"]]["metadata"]
        if answer["status"] != "ok":
            raise RuntimeError(f"{answer['trace_id']} is incomplete: {answer['reason']}")
        if meta["planted"] == "true":
            figures.planted += 1
            if answer["label"] == "ENT":
                figures.escaped += 1
                figures.escaped_ids.append(answer["trace_id"])
                figures.by_form[meta["form"]] += 1
        else:
            figures.controls += 1
            if answer["label"] != "ENT":
                figures.lost += 1
                figures.lost_ids.append(answer["trace_id"])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="hidden-facts-"))
    for mode in MODES:
        f = measure(args.data, mode, work / mode)
        print(f"claims={mode}: escaped {f.escaped}/{f.planted} planted false facts; "
              f"faithful controls lost {f.lost}/{f.controls}")
        print("  escaped by form: " + (", ".join(f"{k} {v}" for k, v in
                                                 sorted(f.by_form.items())) or "none"))
        if args.show:
            print("  escaped: " + ", ".join(f.escaped_ids))
            print("  lost: " + ", ".join(f.lost_ids))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
