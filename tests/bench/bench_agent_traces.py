"""Agent traces written by real frameworks, audited (issue 50).

    .venv/bin/python tests/bench/bench_agent_traces.py [--rt4chart EXE] [--work DIR]

Writes the traces of `tests/fakes/agent_traces.py` with this interpreter (a LangGraph and a
LlamaIndex agent with their frameworks' fake models, OpenInference's instrumentors, the
OpenTelemetry SDK's OTLP encoder; needs `pip install -e ".[test]"`), then audits the file with
`EXE audit` (default: this interpreter's `python -m rt4chart`) and two judges plugged in through
the public contract, both ENT only when a context sentence holds the claim's words:
`honest_judge:factory`, and for the conversation `premise_value_judges:honest` (which, as a
careful model does, reads the words the user gave in the question as given). Prints:

- traces dead-lettered (before issue 50: every one, "no retriever span");
- single-turn faithful answers ENT with the tool's result as their evidence (doc ids
  `tool:NAME#CALL`), answers that add a fact flagged;
- the same answers as rt4chart's own records with the tool result as a context (the control);
- the session: the follow-up restating the model year the user gave in an earlier turn not
  flagged (and flagged when read alone, without the conversation), the turn repeating a fact
  only the assistant said flagged, no quote ever from an assistant turn.

"Before", with another tree's command (its traces audited by its own code):

    .venv/bin/python tests/bench/bench_agent_traces.py --rt4chart /work/main/.venv/bin/rt4chart
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAKES = HERE.parent / "fakes"
sys.path.insert(0, str(FAKES))

import agent_traces  # noqa: E402
from agent_traces import ASSISTANT_ONLY, CASE_ATTRIBUTE, CASES, SESSION  # noqa: E402
from testutil import read_tables, write_jsonl  # noqa: E402

HONEST, PREMISE = "honest_judge:factory", "premise_value_judges:honest"


def audit(exe: list[str], path: Path, judge: str, out: Path) -> dict[str, list[dict]]:
    """`EXE audit PATH` with `judge`; the run's tables."""
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(FAKES), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([*exe, "audit", str(path), "--out", str(out), "--judge", judge,
                           "--trace-id-attribute", CASE_ATTRIBUTE],
                          env=env, capture_output=True, text=True, timeout=1800)
    if not (out / "answers").exists():
        raise RuntimeError(f"audit exited {done.returncode}: {done.stderr[-2000:]}")
    return read_tables(out)


def _labels(tables: dict) -> dict[str, str | None]:
    return {row["trace_id"]: row["label"] for row in tables["answers"]}


def _tool_evidence(tables: dict, trace_id: str) -> bool:
    """Whether every ENT claim of the trace rests on a tool's result."""
    claims = [c for c in tables["claims"] if c["trace_id"] == trace_id and c["label"] == "ENT"]
    return bool(claims) and all(c["evidence"] and all(e["doc_id"].startswith("tool:")
                                                      for e in c["evidence"]) for c in claims)


def single_turn(tables: dict, plain: dict) -> None:
    labels, plain_labels = _labels(tables), _labels(plain)
    faithful = [c.case_id for c in CASES if c.faithful]
    added = [c.case_id for c in CASES if not c.faithful]
    ok = sum(labels.get(i) == "ENT" and _tool_evidence(tables, i) for i in faithful)
    flagged = sum(labels.get(i) not in (None, "ENT") and i in labels for i in added)
    print(f"  faithful answers ENT with a tool result as evidence: {ok}/{len(faithful)}")
    print(f"  answers adding a fact flagged:                      {flagged}/{len(added)}")
    plain_ok = sum(plain_labels.get(i) == "ENT" for i in faithful)
    plain_flagged = sum(plain_labels.get(i) not in (None, "ENT") and i in plain_labels
                        for i in added)
    print(f"  control, own records: faithful ENT {plain_ok}/{len(faithful)}, "
          f"flagged {plain_flagged}/{len(added)}")


def session(tables: dict, alone: dict) -> None:
    labels = _labels(tables)
    premise, repeat = SESSION[1].case_id, SESSION[2].case_id
    print(f"  follow-up restating the user's earlier setting ({premise}): "
          f"{labels.get(premise, 'not audited')} (read alone: "
          f"{_labels(alone).get(premise, 'not audited')})")
    print(f"  turn repeating what only the assistant said ({repeat}): "
          f"{labels.get(repeat, 'not audited')}")
    quotes = [e for c in tables["claims"] if c["trace_id"].startswith("session-")
              for e in c["evidence"]]
    from_assistant = [e for e in quotes if not e["doc_id"].startswith("tool:")
                      or ASSISTANT_ONLY in e["text"]]
    print(f"  quotes from an assistant turn: {len(from_assistant)} of {len(quotes)} quotes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rt4chart", help="the rt4chart command to audit with "
                        "(default: this interpreter's python -m rt4chart)")
    parser.add_argument("--work", type=Path, help="folder for the traces and runs")
    args = parser.parse_args()
    exe = [args.rt4chart] if args.rt4chart else [sys.executable, "-m", "rt4chart"]
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-agents-"))
    work.mkdir(parents=True, exist_ok=True)
    spans = work / "agents.otlp.jsonl"
    spans.unlink(missing_ok=True)
    agent_traces.write(spans)
    n = len(CASES) + len(SESSION)
    print(f"{n} agent traces ({len(CASES)} single-turn, a {len(SESSION)}-turn session), "
          f"audited with {' '.join(exe)}")
    honest = audit(exe, spans, HONEST, work / "honest")
    dead = [d for d in honest["dead_letters"] if d["stage"] == "assemble"]
    reasons = sorted({d["reason"].split(":")[0] for d in dead})
    print(f"  dead-lettered: {len(dead)}/{n} {reasons if reasons else ''}")
    plain = audit(exe, write_jsonl(work / "plain.jsonl", agent_traces.plain_records()),
                  HONEST, work / "plain")
    single_turn(honest, plain)
    premise = audit(exe, spans, PREMISE, work / "premise")
    follow_up = SESSION[1]
    alone = audit(exe, write_jsonl(work / "alone.jsonl", [{
        "trace_id": follow_up.case_id, "question": follow_up.question,
        "answer": follow_up.answer, "timestamp": "2026-12-01T10:00:00Z",
        "contexts": [{"tool": follow_up.tool, "text": follow_up.result}]}]),
        PREMISE, work / "alone")
    session(premise, alone)
    print(json.dumps({"work": str(work)}))


if __name__ == "__main__":
    main()
