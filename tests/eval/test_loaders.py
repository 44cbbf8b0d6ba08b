"""Loaders: real RAGTruth records, hand-written RAGTruth++ and JSONL files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rt4chart.pipeline.eval import loaders
from rt4chart.pipeline.eval.datasets import ragtruth_traces

DATA = Path(__file__).parent / "data"
# The project's shared data: next to the checkout, else where this workplace keeps it.
SHARED = next((p for p in (Path(__file__).resolve().parents[3] / "shared" / "data" / "ragtruth",
                           Path("/work/shared/data/ragtruth")) if p.exists()),
              Path("/work/shared/data/ragtruth"))


def test_ragtruth_sample_offsets_and_labels():
    loaded = loaders.load_ragtruth(DATA / "ragtruth")
    assert len(loaded.records) == 31
    assert {r.task for r in loaded.records} == {"QA", "Summary", "Data2txt"}
    assert {r.split for r in loaded.records} == {"dev", "test"}
    raw = {json.loads(line)["id"]: json.loads(line)
           for line in (DATA / "ragtruth" / "response.jsonl").read_text().splitlines()}
    for r in loaded.records:
        response = raw[r.trace_id.removeprefix("ragtruth-")]
        assert r.trace["answer"] == response["response"]  # unchanged: offsets stay exact
        texts = sorted(lb["text"] for lb in response["labels"])
        assert sorted(r.trace["answer"][s.start:s.end] for s in r.gold_spans) == texts
        for s, lb in zip(r.gold_spans, sorted(response["labels"], key=lambda x: x["start"]),
                         strict=True):
            assert s.label == ("CON" if "Conflict" in lb["label_type"] else "NIC")
        assert "gold_spans" not in r.trace and "gold" not in json.dumps(r.trace["metadata"])


def test_ragtruth_implicit_true_stays_hallucinated():
    loaded = loaders.load_ragtruth(DATA / "ragtruth")
    raw = [json.loads(line) for line in (DATA / "ragtruth" / "response.jsonl").open()]
    implicit = {f"ragtruth-{r['id']}" for r in raw
                if r["labels"] and all(lb["implicit_true"] for lb in r["labels"])}
    assert implicit
    assert all(r.hallucinated for r in loaded.records if r.trace_id in implicit)


def test_ragtruth_contexts_match_the_audit_datasets_loader():
    ours = {r.trace_id: r.trace for r in loaders.load_ragtruth(DATA / "ragtruth").records}
    theirs = {t["trace_id"]: t for t in ragtruth_traces(DATA / "ragtruth")}
    assert ours.keys() == theirs.keys()
    for tid, trace in ours.items():
        for key in ("question", "contexts", "answer", "task", "route"):
            assert trace[key] == theirs[tid][key]
    data2txt = next(t for t in ours.values() if t["task"] == "Data2txt")
    assert data2txt["contexts"][0]["doc_id"] == "record"
    assert data2txt["contexts"][0]["text"].startswith("{\n  ")  # indented JSON


def test_ragtruth_shared_data_counts():
    assert SHARED.exists(), f"the project's shared RAGTruth data is missing: {SHARED}"
    loaded = loaders.load_ragtruth(SHARED)
    records = loaded.records
    assert len(records) == 578 and len({r.source_id for r in records}) == 166
    by_task = {t: [r for r in records if r.task == t] for t in ("QA", "Summary", "Data2txt")}
    assert {t: len(v) for t, v in by_task.items()} == {"QA": 412, "Summary": 94, "Data2txt": 72}
    assert {t: sum(r.hallucinated for r in v) for t, v in by_task.items()} == {
        "QA": 78, "Summary": 18, "Data2txt": 46}
    assert loaded.files["response.jsonl"].startswith("ae05c452")


def test_ragtruth_skips_other_official_splits(tmp_path):
    for name in ("response.jsonl", "source_info.jsonl"):
        (tmp_path / name).write_text((DATA / "ragtruth" / name).read_text())
    lines = (tmp_path / "response.jsonl").read_text().splitlines()
    first = json.loads(lines[0]) | {"split": "train"}
    (tmp_path / "response.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    loaded = loaders.load_ragtruth(tmp_path)
    assert len(loaded.records) == 30 and loaded.skipped == {"official split train": 1}


def test_ragtruth_pp_threads():
    loaded = loaders.load_ragtruth_pp(DATA / "ragtruth_pp")
    by_id = {r.trace_id: r for r in loaded.records}
    assert sorted(by_id) == ["ragtruth-pp-t1-a", "ragtruth-pp-t2-a", "ragtruth-pp-t3-a"]
    t1 = by_id["ragtruth-pp-t1-a"]
    assert t1.task == "QA" and t1.source_id == "s-qa-1" and t1.trace["generator"] == "gpt-4-0613"
    assert [t1.trace["answer"][s.start:s.end] for s in t1.gold_spans] == [
        "30 days", "and refunds take a week"]
    assert [s.label for s in t1.gold_spans] == ["CON", "CON"]
    assert "passage 1: The free trial lasts 14 days." in t1.trace["contexts"][0]["text"]
    # no meta: task from the prompt's wording, source from the thread
    t2 = by_id["ragtruth-pp-t2-a"]
    assert (t2.task, t2.source_id) == ("Summary", "t2")
    assert [(s.label, t2.trace["answer"][s.start:s.end]) for s in t2.gold_spans] == [
        ("NIC", "and a cafe")]
    assert not by_id["ragtruth-pp-t3-a"].hallucinated
    assert loaded.skipped == {"spans of no assistant message": 1}
    assert set(loaded.files) == {"messages.csv", "hallucination_spans.csv"}


def test_ragtruth_pp_wide_file_other_column_names():
    records = loaders.load_ragtruth_pp(DATA / "ragtruth_pp_wide").records
    m1, m2 = records
    assert m1.trace["question"] == "How long is the free trial?"
    assert m1.trace["contexts"] == [{"doc_id": "context", "text": "The free trial lasts 14 days."}]
    assert [(m1.trace["answer"][s.start:s.end], s.label) for s in m1.gold_spans] == [
        ("30 days", "CON")]
    assert not m2.gold_spans and m2.source_id == "m2"


def test_label_mapping_rules():
    assert loaders.map_label("Evident Conflict") == "CON"
    assert loaders.map_label("Subtle Baseless Info") == "NIC"
    assert loaders.map_label("nic") == "NIC" and loaders.map_label("CON") == "CON"
    assert loaders.map_label("contradiction") == "CON"
    assert loaders.map_label("hallucination") == "NIC"  # unsupported by the context
    assert loaders.map_label("hallucination", {"hallucination": "CON"}) == "CON"
    assert loaders.map_label("constructed") == "NIC"  # "con" only as a whole word


def test_jsonl_gold_and_evidence():
    loaded = loaders.load_jsonl(DATA / "gold_traces.jsonl")
    by_id = {r.trace_id: r for r in loaded.records}
    j1 = by_id["j1"]
    assert [(j1.trace["answer"][s.start:s.end], s.label) for s in j1.gold_spans] == [
        ("30 days", "CON")]
    assert j1.gold_evidence == (loaders.GoldEvidence("policy", 0, 29),)
    assert j1.source_id == "src-3" and j1.split == "dev"
    assert "gold_spans" not in j1.trace and "gold_evidence" not in j1.trace
    assert {r.split for r in loaded.records} == {"dev", "test"}
    assert not by_id["j2"].hallucinated and by_id["j2"].gold_evidence == ()


def test_jsonl_requires_gold_spans(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"trace_id": "x", "contexts": ["c"], "answer": "a"}) + "\n")
    with pytest.raises(ValueError, match="no gold_spans"):
        loaders.load_jsonl(path)
    with pytest.raises(ValueError, match="not found"):
        loaders.load("ragtruth", tmp_path)
