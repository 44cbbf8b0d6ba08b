"""Faithful quotes on ordinary Unicode (issue 46, point 4): how many faithful answers whose
context is written with ligatures, soft hyphens, zero-width or bidi characters, decomposed
accents, full-width forms or look-alike letters are flagged, and how many hallucinated controls
on the same contexts pass, with an honest and an obeying judge
(tests/fakes/unicode_judges.py) on tests/data/exemptions/unicode_quotes.jsonl, through the
`rt4chart audit` command, offline.

    python tests/bench/bench_unicode_quotes.py [--data FILE] [--work DIR] [--show]

It imports whichever rt4chart the interpreter has: run it with main's environment for the
"before" figure (the judges and cases come from this file's folder), e.g.
`cd ../main-checkout && .venv/bin/python ../rt4chart/tests/bench/bench_unicode_quotes.py`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAKES = HERE.parent / "fakes"
DATA = HERE.parent / "data" / "exemptions" / "unicode_quotes.jsonl"
sys.path.insert(0, str(FAKES))

from rt4chart.pipeline.cli import main as cli  # noqa: E402

from testutil import read_tables  # noqa: E402


def _run(data: Path, judge: str, out: Path) -> dict[str, dict]:
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["audit", str(data), "--judge", f"unicode_judges:{judge}",
                         "--judge-option", f"cases={data}", "--out", str(out)])
    if code != 0:
        raise SystemExit(f"audit with {judge} exited {code}")
    return read_tables(out)


def figures(data: Path, tables: dict[str, list[dict]]) -> dict[str, list[str]]:
    """The faithful answers flagged and the hallucinated answers passed, by trace id."""
    gold = {}
    for line in data.read_text(encoding="utf-8").splitlines():
        if line.strip():
            trace = json.loads(line)
            gold[trace["trace_id"]] = trace["metadata"]["hallucinated"] == "true"
    answers = {a["trace_id"]: a for a in tables["answers"]}
    flagged = [t for t, bad in gold.items() if not bad and answers[t]["label"] != "ENT"]
    passed = [t for t, bad in gold.items() if bad and answers[t]["label"] == "ENT"]
    return {"faithful": [t for t, bad in gold.items() if not bad],
            "hallucinated": [t for t, bad in gold.items() if bad],
            "faithful flagged": flagged, "hallucinated passed": passed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--show", action="store_true", help="print each flagged claim's note")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        for judge in ("honest", "obeying"):
            tables = _run(args.data, judge, work / judge)
            found = figures(args.data, tables)
            print(f"{judge}: faithful flagged {len(found['faithful flagged'])}/"
                  f"{len(found['faithful'])}, hallucinated passed "
                  f"{len(found['hallucinated passed'])}/{len(found['hallucinated'])}")
            for key in ("faithful flagged", "hallucinated passed"):
                if found[key]:
                    print(f"  {key}: {', '.join(found[key])}")
            if args.show:
                bad = set(found["faithful flagged"])
                for c in tables["claims"]:
                    if c["trace_id"] in bad and c["label"] != "ENT":
                        print(f"    {c['trace_id']}: {c['claim']!r} {c['label']} {c['note']}")


if __name__ == "__main__":
    main()
