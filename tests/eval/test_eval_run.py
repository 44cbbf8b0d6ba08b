"""`rt4chart eval` end to end with the offline judge, `eval compare`, and determinism."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from rt4chart.pipeline.cli import eval as eval_cli
from rt4chart.pipeline.eval.measures import MEASURES
from rt4chart.pipeline.eval.metrics import auroc
from rt4chart.pipeline.results.summary import read_table

from fake_openai_server import FakeOpenAI, tag

DATA = Path(__file__).parent / "data"
ARGS = ["--dataset", "ragtruth", "--data", str(DATA / "ragtruth"), "--judge", "offline",
        "--bootstrap", "200", "--seed", "7"]


def _eval(out: Path, *extra: str) -> int:
    return eval_cli.main([*ARGS, "--out", str(out), *extra])


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("eval")
    a, b = base / "a", base / "b"
    assert _eval(a, "--limit", "25") == 0
    assert _eval(b, "--limit", "25") == 0
    return a, b


def _without_timing(report: dict) -> dict:
    return {k: v for k, v in report.items() if k not in ("timing",)} | {
        "config": {k: v for k, v in report["config"].items() if k != "beam_args"}}


def test_eval_writes_report_audit_tables_and_plots(runs):
    out, _ = runs
    report = json.loads((out / "report.json").read_text())
    items = [json.loads(line) for line in (out / "items.jsonl").open()]
    assert len(items) == 25 and report["timing"]["audited_answers"] == 25
    assert {it["split"] for it in items} == {"dev", "test"}  # both parts audited
    answers = read_table(str(out / "audit"), "answers").to_pylist()
    assert sorted(a["trace_id"] for a in answers) == sorted(it["trace_id"] for it in items)
    assert (out / "audit" / "summary.json").exists() and (out / "traces.jsonl").exists()
    assert "gold" not in (out / "traces.jsonl").read_text()  # the auditor never sees the gold
    test_items = [it for it in items if it["split"] == "test"]
    overall = report["groups"]["overall"]
    assert report["reported_parts"] == ["test"]
    assert overall["counts"]["answers"] == len(test_items)
    assert set(report["groups"]) == {"overall"} | {it["task"] for it in test_items}
    for system in ("judge", "flag_all", "length"):
        assert list(overall["systems"][system]) == list(MEASURES)
    assert overall["systems"]["flag_all"]["answer.recall"]["value"] == 1.0
    assert report["data"]["sha256"]["response.jsonl"] == _sha(DATA / "ragtruth" / "response.jsonl")
    assert report["judge"]["judge_model"] == answers[0]["judge_model"]
    assert report["judge"]["judge_model"].startswith("offline-lexical")
    assert report["judge"]["prompt_hash"] == answers[0]["prompt_hash"]
    assert len(report["judge"]["prompt_hash"]) >= 16
    assert report["config"]["seed"] == 7 and report["config"]["limit"] == 25
    md = (out / "report.md").read_text()
    for plot in ("roc.svg", "pr.svg", "calibration.svg"):
        root = ET.fromstring((out / plot).read_bytes())  # well-formed, standalone SVG
        assert root.tag == "{http://www.w3.org/2000/svg}svg" and f"]({plot})" in md
        assert list(root.iter("{http://www.w3.org/2000/svg}g"))  # marks drawn
    assert "| answer.f1 |" in md and "sha256" in md


def test_eval_numbers_match_the_items(runs):
    out, _ = runs
    report = json.loads((out / "report.json").read_text())
    items = [json.loads(line) for line in (out / "items.jsonl").open()]
    test = [it for it in items if it["split"] == "test"]
    tp = sum(bool(it["gold_spans"]) and it["flagged"] for it in test)
    flagged = sum(it["flagged"] for it in test)
    judge = report["groups"]["overall"]["systems"]["judge"]
    assert judge["answer.precision"]["value"] == pytest.approx(tp / flagged)
    assert judge["flag_rate"]["value"] == pytest.approx(flagged / len(test))
    low, high = judge["answer.precision"]["interval"]
    assert low <= judge["answer.precision"]["value"] <= high
    cost = report["groups"]["overall"]["cost"]
    calls = sum(it["judge_calls"] for it in test)
    assert calls > 0 and cost["per_1000_answers"]["judge_calls"] == pytest.approx(
        calls * 1000 / len(test))


def test_same_seed_same_numbers(runs):
    a, b = runs
    ra, rb = (json.loads((d / "report.json").read_text()) for d in (a, b))
    assert _without_timing(ra) == _without_timing(rb)
    assert (a / "items.jsonl").read_text() == (b / "items.jsonl").read_text()


def test_compare_identical_runs(runs, tmp_path, capsys):
    a, b = runs
    code = eval_cli.main(["compare", str(a), str(b), "--out", str(tmp_path), "--bootstrap", "50"])
    assert code == 0
    result = json.loads((tmp_path / "compare.json").read_text())
    assert result["agreement"] == 1.0 and result["changed"] == []
    f1 = result["groups"]["overall"]["answer.f1"]
    assert f1["diff"] == 0.0 and f1["interval"] == [0.0, 0.0]
    assert "# rt4chart eval compare" in capsys.readouterr().out


def test_compare_writes_files_only_with_out_as_the_docs_say(runs, tmp_path, capsys,
                                                             monkeypatch):
    a, b = runs
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    assert eval_cli.main(["compare", str(a), str(b), "--bootstrap", "20"]) == 0
    assert "# rt4chart eval compare" in capsys.readouterr().out
    assert list(here.iterdir()) == [] and not (a / "compare.json").exists()
    assert eval_cli.main(["compare", str(a), str(b), "--bootstrap", "20", "--out", "cmp"]) == 0
    assert sorted(p.name for p in (here / "cmp").iterdir()) == ["compare.json", "compare.md"]
    doc = (Path(__file__).parents[2] / "docs" / "evaluation.md").read_text()
    assert "with `--out DIR` it also writes `DIR/compare.json` and `DIR/compare.md`" in doc


def test_compare_reports_changed_verdicts(runs, tmp_path):
    a, b = runs
    changed = tmp_path / "changed"
    shutil.copytree(b, changed)
    items = [json.loads(line) for line in (changed / "items.jsonl").open()]
    flip = next(it for it in items if it["split"] == "test" and it["gold_spans"]
                and not it["flagged"])
    flip.update(flagged=True, label="NIC", score=1.0)
    (changed / "items.jsonl").write_text("".join(json.dumps(it) + "\n" for it in items))
    assert eval_cli.main(["compare", str(a), str(changed), "--out", str(tmp_path / "cmp"),
                          "--bootstrap", "50"]) == 0
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert [c["trace_id"] for c in result["changed"]] == [flip["trace_id"]]
    recall = result["groups"]["overall"]["answer.recall"]
    assert recall["diff"] > 0 and recall["b"] > recall["a"]
    assert flip["trace_id"] in (tmp_path / "cmp" / "compare.md").read_text()


def test_compare_says_what_changed_and_what_it_cost(runs, tmp_path):
    """Smaller windows with more overlap: the diff names the window settings, and the calls
    per 1,000 common answers are each run's own, from its items."""
    a, _ = runs
    small = tmp_path / "small"
    assert _eval(small, "--limit", "25", "--window-size", "2", "--window-overlap", "1") == 0
    assert eval_cli.main(["compare", str(a), str(small), "--out", str(tmp_path / "cmp"),
                          "--bootstrap", "20"]) == 0
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    diff = result["config_diff"]
    assert diff["judge.window_size"] == {"a": 25, "b": 2}
    assert diff["judge.window_overlap"] == {"a": 10, "b": 1}
    assert "judge.judge_model" not in diff  # the same offline judge
    items = {d: [json.loads(line) for line in (d / "items.jsonl").open()] for d in (a, small)}
    test_ids = {it["trace_id"] for it in items[a] if it["split"] == "test"}
    calls = {d: sum(it["judge_calls"] for it in items[d] if it["trace_id"] in test_ids)
             for d in (a, small)}
    overall = result["cost"]["overall"]["judge_calls"]
    assert overall["a"] == pytest.approx(calls[a] * 1000 / len(test_ids))
    assert overall["b"] == pytest.approx(calls[small] * 1000 / len(test_ids))
    assert overall["b"] > overall["a"] and overall["ratio"] == pytest.approx(
        calls[small] / calls[a])
    assert {c["trace_id"] for c in result["changed"]} <= test_ids
    md = (tmp_path / "cmp" / "compare.md").read_text()
    assert "`judge.window_size`: A `25`, B `2`" in md and "| overall | judge_calls |" in md


def test_eval_jsonl_with_gold_evidence(tmp_path):
    out = tmp_path / "jsonl"
    code = eval_cli.main(["--dataset", "jsonl", "--data", str(DATA / "gold_traces.jsonl"),
                          "--judge", "offline", "--bootstrap", "50", "--split", "all",
                          "--out", str(out)])
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    items = {it["trace_id"]: it for it in map(json.loads, (out / "items.jsonl").open())}
    assert report["reported_parts"] == ["dev", "test"]
    assert report["groups"]["overall"]["counts"]["with_gold_evidence"] == 8
    assert any("in-sample" in note for note in report["method"])
    # the offline judge catches the number contradictions and quotes the context sentence
    for tid in ("j1", "j5"):
        assert items[tid]["label"] == "CON" and items[tid]["pred_evidence"]
    assert items["j1"]["pred_evidence"] == [["policy", 0, 28]]  # the quote, without its "."
    judge = report["groups"]["overall"]["systems"]["judge"]
    # gold evidence: policy[0, 29) and history[0, 33); predicted [0, 28) and [0, 32)
    assert judge["evidence.precision"]["value"] == 1.0
    assert judge["evidence.recall"]["value"] == pytest.approx(60 / 62)


def test_eval_refuses_to_overwrite_and_checks_usage(runs, tmp_path, capsys):
    out, _ = runs
    assert _eval(out) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert eval_cli.main(["--dataset", "ragtruth", "--out", str(tmp_path)]) == 2
    assert "--data" in capsys.readouterr().err
    assert _eval(tmp_path / "x", "--limit", "0") == 2
    assert _eval(tmp_path / "y", "--gold-label", "Evident Conflict=XYZ") == 2


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_wired_into_rt4chart_cli():
    from rt4chart.pipeline.cli import main as cli

    sub = next(a for a in cli.parser()._actions if a.dest == "command")
    assert "eval" in sub.choices
    args = cli.parser().parse_args(["eval", "compare", "A", "B"])
    assert (args.eval_command, args.run_a, args.run_b) == ("compare", "A", "B")


def test_incomplete_answers_counted_and_flagged_only_when_decided(tmp_path):
    out = tmp_path / "flaky"
    code = eval_cli.main(["--dataset", "jsonl", "--data", str(DATA / "gold_traces.jsonl"),
                          "--judge", "fake_judges:flaky", "--judge-option", "fail_on=museum",
                          "--bootstrap", "20", "--split", "all", "--tasks", "qa",
                          "--out", str(out)])
    assert code == 0
    items = {it["trace_id"]: it for it in map(json.loads, (out / "items.jsonl").open())}
    assert set(items) == {"j1", "j2", "j3", "j4", "j5", "j6"}  # --tasks qa: no Summary
    incomplete = [it for it in items.values() if it["status"] == "incomplete"]
    assert {it["trace_id"] for it in incomplete} >= {"j4"}
    for it in incomplete:
        assert it["flagged"] == (it["label"] in ("CON", "NIC"))
    report = json.loads((out / "report.json").read_text())
    assert report["groups"]["overall"]["counts"]["incomplete"] == len(incomplete)
    assert set(report["groups"]) == {"overall", "QA"}


def test_options_pass_judge_flags_and_hide_secrets():
    import argparse

    root = argparse.ArgumentParser()
    eval_cli.add_parsers(root.add_subparsers(dest="command"))
    args = root.parse_args(["eval", "--dataset", "jsonl", "--data", "d", "--out", "o",
                            "--judge", "offline", "--judge-option", "api_key=sk-secret",
                            "--window-size", "12", "--tasks", "QA, Summary"])
    opts = eval_cli.options(args, ["--direct_num_workers", "2"])
    assert dict(opts.judge.options)["api_key"] == "sk-secret"  # the audit gets the real value
    assert opts.judge.name == "offline" and opts.segment.window_size == 12
    assert "sk-secret" not in json.dumps(opts.config)  # the report does not
    assert opts.tasks == ("QA", "Summary") and opts.beam_args == ("--direct_num_workers", "2")


def test_eval_takes_the_confirming_judge_and_hides_its_secrets():
    import argparse

    root = argparse.ArgumentParser()
    eval_cli.add_parsers(root.add_subparsers(dest="command"))
    args = root.parse_args(["eval", "--dataset", "jsonl", "--data", "d", "--out", "o",
                            "--judge", "lucky_judge:factory", "--confirm-judge",
                            "gold_judge:factory", "--confirm-judge-option", "api_key=sk-second"])
    opts = eval_cli.options(args, [])
    second = opts.stages.confirm.judge_spec()
    assert (second.name, dict(second.options)) == ("gold_judge:factory", {"api_key": "sk-second"})
    assert "sk-second" not in json.dumps(opts.config)
    assert opts.config["confirm_judge"] == "gold_judge:factory"
    assert "--confirm-judge" in opts.config["audit_args"]


def test_eval_through_the_openai_client_scores_answers_from_log_probabilities(tmp_path,
                                                                               monkeypatch):
    """The judge's label-token log-probabilities (local server) become p_hallucinated, and the
    threshold-free measures are computed from those graded scores."""
    def label_probs(body: dict, label: str) -> dict[str, float]:
        # A hesitant model: the longer the claim, the less sure it is that it is entailed.
        claim = tag(body["messages"][-1]["content"], "claim") or ""
        doubt = min(0.9, 0.05 + len(claim) / 400)
        if label == "ENT":
            return {"ENT": 1 - doubt, "NIC": doubt}
        return {label: 0.6 + doubt / 3, "ENT": 0.4 - doubt / 3}

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-eval-0123456789")
    out = tmp_path / "openai"
    with FakeOpenAI(label_probs=label_probs) as server:
        code = eval_cli.main(["--dataset", "ragtruth", "--data", str(DATA / "ragtruth"),
                              "--judge", "openai", "--base-url", server.base_url,
                              "--bootstrap", "100", "--limit", "12", "--out", str(out)])
    assert code == 0
    assert any(b.get("logprobs") for b in server.requests)
    items = [json.loads(line) for line in (out / "items.jsonl").open()]
    scores = [it["score"] for it in items]
    assert len(set(scores)) > 3 and all(0 < s < 1 for s in scores)  # graded, not 0/1
    report = json.loads((out / "report.json").read_text())
    test = [it for it in items if it["split"] == "test"]
    expected = auroc(np.array([bool(it["gold_spans"]) for it in test]),
                     np.array([it["score"] for it in test]))
    got = report["groups"]["overall"]["systems"]["judge"]["auroc"]["value"]
    assert (got is None and expected is None) or got == pytest.approx(expected)
