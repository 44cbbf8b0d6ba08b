"""A fault in any stage on one trace dead-letters that trace only; the run and the others go on.

Each case makes one stage's per-trace function raise for the trace "boom" (in process: the
FnApiRunner runs in this interpreter, so a patched module function is the one called).

Where the trace is whole (validation, segmentation, building the decomposition or local
requests, numbering the claims, assembling the answer) it becomes one dead letter naming the
stage and carrying the raw trace. Where it has already fanned out (the local OR-join, a global
verdict) it ends as an `incomplete` answer whose reason names the stage, kept once in the
dead letters for `--redo` (stage "judge"), like a judge failure.
"""

from __future__ import annotations

import pytest

from rt4chart.transforms import aggregate, decompose, segment, validate, verify_global, verify_local

from testutil import write_jsonl

CTX = "Tokyo is the capital of Japan. Kyoto was the capital until 1868."
TRACES = [
    {"trace_id": tid, "question": "What is the capital of Japan?", "contexts": [CTX],
     "answer": "Tokyo is the capital of Japan. Kyoto was the capital until 1868."}
    for tid in ("good1", "boom", "good2")
]


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _trace_id(value):
    """The trace id of a Trace, PreparedTrace, ClaimSet or GlobalRequest (None otherwise)."""
    for path in (("trace_id",), ("trace", "trace_id"), ("key", "trace_id"),
                 ("claim", "trace_id")):
        v = value
        for name in path:
            v = getattr(v, name, None)
        if isinstance(v, str):
            return v
    return None


def _boom_on(original):
    def patched(*args, **kwargs):
        out = original(*args, **kwargs)
        if "boom" in [_trace_id(a) for a in (*args, out)]:
            raise RuntimeError("injected fault")
        return out

    return patched


# (owner of the function, its name, the stage named, whether the trace ends as a dead letter)
CASES = {
    "validate": (validate, "parse_trace", "validate", True),
    "segment": (segment, "prepare", "segment", True),
    "decompose_requests": (decompose, "requests_for", "decompose", True),
    "decompose_numbering": (decompose, "number_claims", "decompose", True),
    "local_requests": (verify_local, "requests_for", "verify_local", True),
    "local_or_join": (verify_local, "plan_global", "verify_local", False),
    "global_verdict": (verify_global._GlobalFn, "on_result", "verify_global", False),
    "aggregate": (aggregate, "answer_rows", "aggregate", True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_fault_in_one_stage_dead_letters_only_that_trace(tmp_path, audit, monkeypatch, case):
    owner, name, stage, dead_lettered = CASES[case]
    monkeypatch.setattr(owner, name, _boom_on(getattr(owner, name)))
    path = write_jsonl(tmp_path / "t.jsonl", TRACES)
    code, tables, _ = audit(str(path))
    assert code == (0 if dead_lettered else 3)  # 3: an answer left incomplete
    answers = {a["trace_id"]: a for a in tables["answers"]}
    assert answers["good1"]["status"] == answers["good2"]["status"] == "ok"
    dead = tables["dead_letters"]
    assert [d["trace_id"] for d in dead] == ["boom"]
    (letter,) = dead
    if dead_lettered:
        assert set(answers) == {"good1", "good2"}
        assert letter["stage"] == stage
        assert "RuntimeError" in letter["reason"] and "injected fault" in letter["reason"]
    else:
        assert set(answers) == {"good1", "boom", "good2"}
        assert answers["boom"]["status"] == "incomplete"
        assert stage in answers["boom"]["reason"] and "injected fault" in answers["boom"]["reason"]
        assert letter["stage"] == aggregate.REDO_STAGE
    assert '"trace_id": "boom"' in letter["raw"] or '"trace_id":"boom"' in letter["raw"]
    assert {c["trace_id"] for c in tables["claims"]} >= {"good1", "good2"}
