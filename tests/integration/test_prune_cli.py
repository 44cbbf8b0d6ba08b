"""`rt4chart audit --prune-windows`: fewer local calls, counted, and the same verdicts here."""

from __future__ import annotations

import json

from testutil import write_jsonl

CONTEXT = ("The museum opened in 1998 on the harbour front. "
           "Tickets cost 12 euros for adults. "
           "The café serves breakfast and lunch.")
TRACE = {"trace_id": "museum", "route": "guide", "timestamp": "2024-05-01T09:30:00Z",
         "question": "Tell me about the museum.", "task": "QA",
         "contexts": [{"doc_id": "d", "text": CONTEXT}],
         "answer": "The museum opened in 1998. Tickets cost 15 euros."}


def test_prune_windows_saves_calls_and_reports_them(tmp_path, audit, capsys):
    traces = write_jsonl(tmp_path / "t.jsonl", [TRACE])
    runs = {}
    for name, extra in (("full", ()), ("pruned", ("--prune-windows",))):
        code, tables, out = audit(str(traces), "--judge", "offline", "--window-size", "1",
                                  "--window-overlap", "0", *extra, out=tmp_path / name)
        assert code == 0
        runs[name] = (tables, json.loads((out / "summary.json").read_text()))
    printed = capsys.readouterr()
    (full_tables, full), (pruned_tables, pruned) = runs["full"], runs["pruned"]
    # 2 claims x 3 windows; each claim shares words or numbers with one window only.
    assert (full["pruned_calls"], pruned["pruned_calls"]) == (0, 4)
    assert full["judge_calls"] - pruned["judge_calls"] == 4
    assert "--prune-windows: 4 local calls saved" in printed.out + printed.err
    labels = {n: sorted((c["claim_index"], c["local_label"], c["label"])
                        for c in t["claims"]) for n, (t, _) in runs.items()}
    assert labels["full"] == labels["pruned"]
    assert [a["label"] for a in full_tables["answers"]] == [
        a["label"] for a in pruned_tables["answers"]]
