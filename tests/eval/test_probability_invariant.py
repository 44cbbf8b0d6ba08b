"""No row's probability contradicts its label: the bundled example audit and an eval subset,
against the thresholds the run records (rows, summary.json), and the eval's calibration part."""

from __future__ import annotations

import json
from pathlib import Path

from rt4chart.pipeline.cli import eval as eval_cli
from rt4chart.pipeline.results.summary import read_table

DATA = Path(__file__).parent / "data"


def _wrong_side(answers: list[dict], claims: list[dict], prob: dict) -> list[str]:
    """Every row whose p is on the wrong side of the recorded threshold from its label."""
    tau, t_answer = prob["claim_threshold"], prob["answer_threshold"]
    bad = []
    for c in claims:
        p = c["p_unsupported"]
        assert c["p_threshold"] == tau
        if c["label"] is None:
            bad += [] if p is None else [f"claim without verdict has p {p}"]
        elif p is None or (c["label"] == "ENT") != (p < tau):
            bad.append(f"claim {c['trace_id']}#{c['claim_index']} {c['label']} p={p}")
    for a in answers:
        p = a["p_hallucinated"]
        assert a["p_threshold"] == t_answer
        if a["label"] is None:
            bad += [] if p is None else [f"undecided answer has p {p}"]
        elif p is None or (a["label"] != "ENT") != (p >= t_answer):
            bad.append(f"answer {a['trace_id']} {a['label']} p={p}")
    return bad


def test_the_example_audit_has_no_probability_against_its_label(audit):
    code, tables, out = audit("--example")
    assert code == 0
    prob = json.loads((out / "summary.json").read_text())["probability"]
    assert prob["calibration"] == "package:calibration_offline.json"
    assert 0 < prob["claim_threshold"] < 1 and 0 < prob["answer_threshold"] < 1
    assert any(c["label"] == "CON" for c in tables["claims"])
    assert _wrong_side(tables["answers"], tables["claims"], prob) == []


def test_an_eval_subset_has_no_probability_against_its_label_and_reports_ece_per_task(
        tmp_path):
    out = tmp_path / "eval"
    assert eval_cli.main(["--dataset", "ragtruth", "--data", str(DATA / "ragtruth"),
                          "--judge", "offline", "--bootstrap", "50", "--limit", "30",
                          "--out", str(out)]) == 0
    answers = read_table(str(out / "audit"), "answers").to_pylist()
    claims = read_table(str(out / "audit"), "claims").to_pylist()
    report = json.loads((out / "report.json").read_text())
    assert _wrong_side(answers, claims, report["probability"]) == []
    tasks = {a["task"] for a in answers if a["trace_id"] in
             {json.loads(x)["trace_id"] for x in (out / "items.jsonl").open()
              if json.loads(x)["split"] == "test"}}
    assert set(report["calibration"]) == {"overall", *tasks}
    for name, part in report["calibration"].items():
        assert "value" in part["ece"] and (out / part["plot"]).stat().st_size > 0, name
    md = (out / "report.md").read_text()
    assert "## Calibration of p_hallucinated" in md and "answer threshold" in md
