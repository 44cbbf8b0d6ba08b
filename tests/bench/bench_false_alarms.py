"""Why faithful answers are flagged: the restated question, a judge's non-claim, or else.

Reads the folders `rt4chart eval` wrote (`DIR/items.jsonl`, `DIR/traces.jsonl`,
`DIR/audit/claims`) and prints, per folder, as JSON: the faithful answers, those flagged, and
the cause of each flagged one, read from its claims that are not ENT:

- `restated_question`: a claim the support check overturned ("ENT overturned: evidence lacks
  ...") whose missing specifics the question states;
- `non_claim`: a claim whose text asserts nothing checkable (`text.assertion.classify`);
- `other`: anything else (the judge's own NIC or CON, a quote that shares no word, ...).

An answer counts under the first cause one of its claims shows, in that order.

    PYTHONPATH=tests/fakes rt4chart eval --dataset ragtruth --data ../shared/data/ragtruth \
        --split all --judge gold_judge:factory --out /tmp/gold
    .venv/bin/python tests/bench/bench_false_alarms.py /tmp/gold [/tmp/quote ...] [--show]
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

from rt4chart.pipeline.results.summary import read_table
from rt4chart.transforms.checks.support import check_support, claim_body
from rt4chart.transforms.text.assertion import classify

_LACKS_RE = re.compile(r"ENT overturned: evidence lacks (?P<what>[^;]*)")


def _jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def cause(claim: dict, question: str) -> str:
    """The cause a non-ENT claim of a faithful answer shows (see the module docstring)."""
    match = _LACKS_RE.search(claim.get("note") or "")
    if match:
        lacking = set(match.group("what").split(", "))
        unstated = set(check_support(claim_body(claim["claim"]), [question]).missing)
        if lacking and not lacking & unstated:
            return "restated_question"
    if not classify(claim["claim"]).checkable:
        return "non_claim"
    return "other"


def false_alarms(out: Path) -> dict:
    """The faithful answers of one eval folder, those flagged, and their causes."""
    items = _jsonl(out / "items.jsonl")
    questions = {t["trace_id"]: t.get("question", "") for t in _jsonl(out / "traces.jsonl")}
    claims: dict[str, list[dict]] = {}
    for c in read_table(str(out / "audit"), "claims").to_pylist():
        claims.setdefault(c["trace_id"], []).append(c)
    faithful = [i for i in items if not i["gold_spans"]]
    flagged = [i for i in faithful if i["flagged"]]
    causes: Counter[str] = Counter()
    shown = []
    order = ("restated_question", "non_claim", "other")
    for item in flagged:
        tid = item["trace_id"]
        bad = [c for c in claims.get(tid, []) if c["status"] == "ok" and c["label"] != "ENT"]
        found = {cause(c, questions.get(tid, "")) for c in bad} or {"other"}
        first = next(k for k in order if k in found)
        causes[first] += 1
        shown.append({"trace_id": tid, "cause": first, "claims": [
            {"claim": c["claim"], "label": c["label"], "note": c["note"]} for c in bad]})
    no_claims = sum(c["status"] == "no_claim" for rows in claims.values() for c in rows)
    return {"out": str(out), "faithful": len(faithful), "flagged_faithful": len(flagged),
            "causes": {k: causes.get(k, 0) for k in order}, "no_claim_rows": no_claims,
            "answers": shown}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="folders `rt4chart eval` wrote")
    parser.add_argument("--show", action="store_true", help="list each flagged answer's claims")
    args = parser.parse_args()
    for out in args.dirs:
        figures = false_alarms(out)
        if not args.show:
            figures.pop("answers")
        print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
