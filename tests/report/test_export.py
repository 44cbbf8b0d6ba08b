"""`rt4chart export`: audited answers back to the labelled JSONL that `eval` reads, with
rt4chart's spans as machine labels, from a run of spans as from a run of trace JSONL."""

from __future__ import annotations

import json

import pytest

from rt4chart.pipeline.cli import eval as eval_cli
from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.results.summary import read_table

import fake_judges
from span_export import write_format

FAITHFUL = {**fake_judges.RUNNING_TRACE, "trace_id": "faithful-1",
            "answer": fake_judges.RUNNING_TRACE["contexts"][0]
            if isinstance(fake_judges.RUNNING_TRACE["contexts"][0], str)
            else fake_judges.RUNNING_TRACE["contexts"][0]["text"]}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    traces = root / "traces.jsonl"
    traces.write_text("".join(json.dumps(t) + "\n" for t in (fake_judges.RUNNING_TRACE,
                                                              FAITHFUL)))
    out = root / "run"
    assert cli.main(["audit", str(traces), "--judge", "offline", "--out", str(out)]) == 0
    return root, out


def _lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_flagged_answers_become_eval_records_with_machine_labels(run, capsys):
    root, out = run
    answers = {a["trace_id"]: a for a in read_table(str(out), "answers").to_pylist()}
    flagged = sorted(t for t, a in answers.items() if a["hallucinated"])
    assert flagged, "the offline judge flags the running example"
    data = root / "flagged.jsonl"
    assert cli.main(["export", str(out), "--flagged", "--out", str(data)]) == 0
    records = _lines(data)
    assert [r["trace_id"] for r in records] == flagged
    for r in records:
        a = answers[r["trace_id"]]
        assert r["label_source"] == "rt4chart" and r["metadata"]["labels"] == "machine"
        assert r["metadata"]["rt4chart_label"] == a["label"]
        assert r["gold_spans"] == [{"start": s["char_start"], "end": s["char_end"],
                                    "label": s["label"]} for s in a["hallucinated_spans"]]
        assert r["question"] == fake_judges.RUNNING_TRACE["question"]
    assert f"{len(flagged)} of {len(flagged)} hallucinated" in capsys.readouterr().out


def test_the_export_is_what_eval_reads(run, tmp_path):
    """eval on the export of --all: the machine labels as gold, so the same offline judge
    agrees with itself on every answer."""
    _, out = run
    data = tmp_path / "all.jsonl"
    assert cli.main(["export", str(out), "--all", "--out", str(data)]) == 0
    records = _lines(data)
    assert {r["trace_id"] for r in records} == {fake_judges.RUNNING_TRACE["trace_id"],
                                                "faithful-1"}
    ev = tmp_path / "eval"
    assert eval_cli.main(["--dataset", "jsonl", "--data", str(data), "--judge", "offline",
                          "--split", "all", "--bootstrap", "20", "--out", str(ev)]) == 0
    items = _lines(ev / "items.jsonl")
    assert len(items) == len(records)
    gold = {r["trace_id"]: bool(r["gold_spans"]) for r in records}
    assert all(it["flagged"] == gold[it["trace_id"]] for it in items)


def test_sample_is_seeded_and_bounded(tmp_path):
    traces = tmp_path / "t.jsonl"
    many = [{**FAITHFUL, "trace_id": f"f-{i}"} for i in range(12)]
    traces.write_text("".join(json.dumps(t) + "\n" for t in many))
    out = tmp_path / "run"
    assert cli.main(["audit", str(traces), "--judge", "offline", "--out", str(out)]) == 0
    picks = []
    for seed in ("1", "1", "2"):
        data = tmp_path / f"s{seed}-{len(picks)}.jsonl"
        assert cli.main(["export", str(out), "--all", "--sample", "5", "--seed", seed,
                         "--out", str(data)]) == 0
        picks.append([r["trace_id"] for r in _lines(data)])
    assert len(picks[0]) == 5 and picks[0] == picks[1] and picks[0] != picks[2]


def test_a_run_of_otlp_spans_exports_its_traces(tmp_path):
    spans = write_format("otlp", [fake_judges.RUNNING_TRACE], tmp_path / "in")
    out = tmp_path / "run"
    assert cli.main(["audit", str(spans), "--judge", "offline", "--out", str(out)]) == 0
    data = tmp_path / "x.jsonl"
    assert cli.main(["export", str(out), "--all", "--out", str(data)]) == 0
    (record,) = _lines(data)
    assert record["answer"] == fake_judges.RUNNING_TRACE["answer"]
    assert len(record["contexts"]) == len(fake_judges.RUNNING_TRACE["contexts"])


def test_answers_without_their_trace_are_counted_not_dropped(run, tmp_path, capsys):
    _, out = run
    empty = tmp_path / "other.jsonl"
    empty.write_text(json.dumps({**FAITHFUL, "trace_id": "unrelated"}) + "\n")
    data = tmp_path / "none.jsonl"
    assert cli.main(["export", str(out), "--all", "--traces", str(empty),
                     "--out", str(data)]) == 1
    assert "answer(s) left out: their trace was not found" in capsys.readouterr().err


def test_one_of_flagged_or_all_is_required(run, tmp_path, capsys):
    _, out = run
    for which in ([], ["--flagged", "--all"]):
        assert cli.main(["export", str(out), *which, "--out", str(tmp_path / "x.jsonl")]) == 2
        assert "give one of --flagged" in capsys.readouterr().err
