"""Every command's `--help` and the bundled example's outputs, normalised, into one folder:
diff two checkouts' dumps to show that a refactoring changed no surface.

    python tests/bench/surface_dump.py OUT [--rt4chart PATH]

Runs `rt4chart` (the one next to this Python, or --rt4chart) for: the root help, each
command's and sub-command's help, the example audit (offline judge), its report, export,
gate and estimate. Writes each command's output (timestamps, temporary paths and timings
replaced by placeholders) and each table of the example run as sorted JSON lines without the
columns that record when a row was written. Nothing here reaches the network.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

COMMANDS = ("audit", "stream", "eval", "report", "annotate", "check-judge", "export", "gate")
SUBCOMMANDS = (("eval", "calibrate"), ("eval", "compare"), ("eval", "phoenix-labels"))
WHEN_COLUMNS = {"emitted_at", "received_at", "created_at", "run_id", "audited_at",
                "written_at", "started_at", "finished_at"}
VARIABLE = ((re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ ", re.M), "TS "),
            (re.compile(r"/tmp/[\w.]+"), "TMP"),
            (re.compile(r"\S+(?=/pipeline/examples/)"), "ROOT"),
            (re.compile(r"\$[0-9.]+, \d+s \(final\)"), "$X, Ns (final)"),
            (re.compile(r"\([0-9.]+ answers/s\)"), "(X answers/s)"),
            (re.compile(r"\b\d+\.\d+ ?s\b"), "N s"))


def _normalised(text: str, tmp: str) -> str:
    text = text.replace(tmp, "TMP")
    for pattern, placeholder in VARIABLE:
        text = pattern.sub(placeholder, text)
    return text


def _run(exe: str, args: list[str], out: Path, name: str, tmp: str) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "AZURE_OPENAI_"))}  # the offline judge
    env["COLUMNS"] = "100"
    done = subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=600)
    text = done.stdout + done.stderr + f"exit {done.returncode}\n"
    (out / f"{name}.txt").write_text(_normalised(text, tmp), encoding="utf-8")


def _tables(run: Path, out: Path) -> None:
    for table in sorted(p for p in run.iterdir() if p.is_dir()):
        rows = [row for f in sorted(table.rglob("*.parquet"))
                for row in pq.read_table(f).to_pylist()]
        lines = sorted(json.dumps({k: v for k, v in row.items() if k not in WHEN_COLUMNS},
                                  sort_keys=True, default=str) for row in rows)
        (out / f"table-{table.name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--rt4chart", default=str(Path(sys.executable).with_name("rt4chart")))
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    exe = args.rt4chart
    with tempfile.TemporaryDirectory() as tmp:
        _run(exe, ["--help"], args.out, "help-root", tmp)
        for command in COMMANDS:
            _run(exe, [command, "--help"], args.out, f"help-{command}", tmp)
        for command, sub in SUBCOMMANDS:
            _run(exe, [command, sub, "--help"], args.out, f"help-{command}-{sub}", tmp)
        run = Path(tmp, "run")
        _run(exe, ["audit", "--example", "--out", str(run), "--overwrite"], args.out, "audit", tmp)
        _run(exe, ["report", str(run), "--out", f"{tmp}/report.html"], args.out, "report", tmp)
        _run(exe, ["export", str(run), "--all", "--out", f"{tmp}/export.jsonl"], args.out,
             "export", tmp)
        _run(exe, ["gate", str(run), "--max-rate", "0.5"], args.out, "gate", tmp)
        _run(exe, ["audit", "--example", "--estimate"], args.out, "estimate", tmp)
        _tables(run, args.out)
        export = Path(tmp, "export.jsonl")
        if export.exists():
            (args.out / "export.jsonl").write_text(export.read_text(encoding="utf-8"),
                                                   encoding="utf-8")
    print(f"wrote {len(list(args.out.iterdir()))} files to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
