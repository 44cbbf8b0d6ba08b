"""Through a real audit: a custom judge that blocks its event loop on one claim (time.sleep or a
CPU loop inside `async def`) costs that claim a judge_error at its deadline; the batch goes on
and every other answer is audited."""

from __future__ import annotations

import time

import pytest

from testutil import write_jsonl

CTX = "Tokyo is the capital of Japan. It has about 14 million inhabitants."
RECORDS = [
    {"trace_id": "bad", "contexts": [CTX],
     "answer": "Tokyo is the capital of Japan. Kyoto has about 14 million inhabitants."},
    *({"trace_id": f"good{i}", "contexts": [CTX], "answer": "Tokyo is the capital of Japan."}
      for i in range(4)),
]


@pytest.mark.parametrize("how", ["sleep", "spin"])
def test_a_judge_blocking_its_loop_stalls_only_its_own_call(tmp_path, audit, how):
    traces = write_jsonl(tmp_path / "t.jsonl", RECORDS)
    started = time.monotonic()
    code, tables, _ = audit(str(traces), "--judge", "blocking_judge:factory",
                            "--judge-option", f"how={how}", "--judge-option", "block_s=60",
                            "--judge-option", "call_deadline_s=1")
    elapsed = time.monotonic() - started
    assert code == 3  # answers left incomplete
    answers = {a["trace_id"]: a for a in tables["answers"]}
    assert all(answers[f"good{i}"]["status"] == "ok" for i in range(4))
    assert answers["bad"]["status"] == "incomplete" and answers["bad"]["label"] is None
    kyoto = [c for c in tables["claims"] if "Kyoto" in c["claim"]]
    assert kyoto and all(c["status"] == "judge_error" and c["label"] is None for c in kyoto)
    assert "did not answer within 1 s" in kyoto[0]["note"]
    assert elapsed < 50, elapsed  # not the 60 s the judge blocks for
