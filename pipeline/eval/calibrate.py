"""`rt4chart eval calibrate`: fit a judge's calibration map on the dev part of a labelled set.

It runs the eval on the dev part only (`--split dev`) with the judge's calibration turned off
(`--judge-option calibration=identity`, so the claim rows hold the raw score on its label's
side of the judge's decision threshold), then fits two isotonic maps, each made strictly
increasing (`probability.strictly_monotone`: a slope of 0.001 added to the isotonic steps) so
that a map never ties scores the judge told apart and ranks them as the raw score does (see
:mod:`rt4chart.transforms.common.probability` for how a run uses them):

- claim map: raw score -> P(the claim is unsupported), a claim being unsupported when the
  answer words it restates overlap a gold hallucination span;
- answer map: the answer's score (`probability.answer_score` of its calibrated claim
  probabilities) -> P(the answer has a gold span), over the decided answers.

The file records the judge model, its decision threshold, the data's hashes, the counts and,
for the offline judge, a fingerprint of its scores on the bundled example
(`judge_fingerprint`): a test checks it against the current judge, so a change to the judge's
text analysis fails until the map is refit with the same command::

    rt4chart eval calibrate --dataset ragtruth --data /work/shared/data/ragtruth \\
        --judge offline --out /tmp/calib --write transforms/judges/calibration_offline.json
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from importlib import resources
from pathlib import Path

import numpy as np

from rt4chart.pipeline.eval import metrics
from rt4chart.pipeline.eval.runner import EvalOptions, read_jsonl, run_eval
from rt4chart.pipeline.results.summary import read_table
from rt4chart.schemas.records import Calibration
from rt4chart.transforms.common import probability
from rt4chart.transforms.judges.base import CALIBRATION_OPTION
from rt4chart.transforms.judges.contract import JudgeSpec

MIN_BLOCK = 25  # smallest block of an isotonic fit: fewer outcomes give a noisy rate
# The block sizes tried, by cross-validation over dev sources, before the final fit: a map with
# small blocks follows dev too closely (dev ECE 0.001, test 0.09 with blocks of 25).
BLOCK_CHOICES = (25, 40, 60, 80, 120)
FOLDS = 5


def judge_fingerprint(judge: str) -> str | None:
    """A hash of the judge's analysis of the bundled example traces (the offline judge's
    decompositions and raw scores, every answer sentence against every context), None for a
    judge without one: it changes exactly when the judge's text analysis does, which
    invalidates a fitted map."""
    examples = resources.files("rt4chart.pipeline").joinpath("examples/traces.jsonl")
    return JudgeSpec.of(judge).kind().fingerprint(examples.read_text())


def _claim_truth(claim: dict, gold_spans: list) -> int:
    spans = [(s["char_start"], s["char_end"]) for s in claim.get("spans") or []] or [
        (claim["answer_start"], claim["answer_end"])]
    return int(any(s < ge and gs < e for s, e in spans for gs, ge, _ in gold_spans))


def _by_trace(claims: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for c in claims:
        if c["status"] == "ok":
            out.setdefault(c["trace_id"], []).append(c)
    return out


def _answer_scores(answered: list[dict], by_trace: dict[str, list[dict]],
                   cal: Calibration) -> list[float]:
    """Each answer's score before the answer map (`probability.answer_score`)."""
    tau = probability.claim_threshold(cal)
    return [probability.answer_score([probability.claim_p(c["label"], c["p_unsupported"], cal)
                                      for c in by_trace.get(it["trace_id"], [])], tau)
            for it in answered]


def _answer_ps(answered: list[dict], scores: list[float], cal: Calibration) -> list[float]:
    """p_hallucinated as a run writes it: the answer map, then the side rule."""
    return [probability.on_side(it["label"] != "ENT", probability.interpolate(cal.answer_map, t),
                                probability.answer_threshold(cal))
            for t, it in zip(scores, answered, strict=True)]


def _answered(items: list[dict]) -> list[dict]:
    return [it for it in items if it["label"] is not None and it["status"] != "missing"]


def fit(items: list[dict], claims: list[dict], judge_model: str, decision: float,
        min_block: int = MIN_BLOCK) -> tuple[Calibration, dict]:
    """The calibration fitted on the items (one per answer, with gold) and the claim rows of
    an identity-calibrated audit; and the fit's figures (counts, dev ECE before and after)."""
    by_trace = _by_trace(claims)
    gold = {it["trace_id"]: it for it in items}
    decided = [c for c in claims if c["status"] == "ok" and c["trace_id"] in gold]
    claim_map = probability.strictly_monotone(probability.isotonic(
        [c["p_unsupported"] for c in decided],
        [_claim_truth(c, gold[c["trace_id"]]["gold_spans"]) for c in decided], min_block))
    partial = Calibration(judge_model, decision, claim_map)
    answered = _answered(items)
    tops = _answer_scores(answered, by_trace, partial)
    truth = [int(bool(it["gold_spans"])) for it in answered]
    cal = replace(partial, answer_map=probability.strictly_monotone(
        probability.isotonic(tops, truth, min_block)))
    y = np.array(truth, dtype=bool)
    after = _answer_ps(answered, tops, cal)
    figures = {"claims": len(decided), "answers": len(answered),
               "dev_answer_ece_raw": metrics.ece(y, np.array([it["score"] for it in answered])),
               "dev_answer_ece": metrics.ece(y, np.array(after, dtype=float)),
               "claim_threshold": probability.claim_threshold(cal),
               "answer_threshold": probability.answer_threshold(cal)}
    return cal, figures


def _held_out_ece(items: list[dict], claims: list[dict], judge_model: str, decision: float,
                  min_block: int, fold: int) -> tuple[float, int]:
    """ECE on one fold's answers of a map fitted on the other folds (folds by source id)."""
    def part(it: dict) -> int:
        return int(hashlib.sha256(str(it["source_id"]).encode()).hexdigest(), 16) % FOLDS

    train = [it for it in items if part(it) != fold]
    test = _answered([it for it in items if part(it) == fold])
    ids = {it["trace_id"] for it in train}
    cal, _ = fit(train, [c for c in claims if c["trace_id"] in ids], judge_model, decision,
                 min_block)
    p = _answer_ps(test, _answer_scores(test, _by_trace(claims), cal), cal)
    y = np.array([bool(it["gold_spans"]) for it in test], dtype=bool)
    return (metrics.ece(y, np.array(p, dtype=float)) if len(test) else 0.0), len(test)


def choose_min_block(items: list[dict], claims: list[dict], judge_model: str,
                     decision: float) -> tuple[int, dict[str, float]]:
    """The block size with the lowest answer ECE over FOLDS folds of dev (weighted by answers;
    ties: the larger block), and each candidate's figure."""
    scores: dict[str, float] = {}
    for block in BLOCK_CHOICES:
        parts = [_held_out_ece(items, claims, judge_model, decision, block, f)
                 for f in range(FOLDS)]
        total = sum(n for _, n in parts)
        scores[str(block)] = round(sum(e * n for e, n in parts) / max(total, 1), 4)
    best = min(BLOCK_CHOICES, key=lambda b: (scores[str(b)], -b))
    return best, scores


def calibrate(opts: EvalOptions, write: str | None) -> dict:
    """Run the eval on dev with the identity calibration, fit, and write the file (if
    `write`); the file's content."""
    spec = opts.judge
    options = dict(spec.options) | {CALIBRATION_OPTION: "identity"}
    opts = replace(opts, split="dev",
                   stages=replace(opts.stages, judge=JudgeSpec.of(spec.name, options)))
    code, report = run_eval(opts)
    if code != 0:
        raise RuntimeError("the dev audit judged no answer: nothing to fit")
    out = Path(opts.out)
    items = read_jsonl(out / "items.jsonl")
    claims = read_table(str(out / "audit"), "claims").to_pylist()
    summary = json.loads((out / "audit" / "summary.json").read_text())
    used = summary["probability"]
    block, cv = choose_min_block(items, claims, used["judge_model"],
                                 used["judge_decision_threshold"])
    cal, figures = fit(items, claims, used["judge_model"], used["judge_decision_threshold"],
                       block)
    fitted = {"data": {"dataset": opts.dataset, "sha256": report["data"]["sha256"],
                       "part": "dev", "records": report["data"]["audited"]},
              "judge": spec.name, "judge_fingerprint": judge_fingerprint(spec.name),
              "prompt_hash": summary.get("prompt_hash"), "min_block": block,
              "min_block_cv_ece": cv, **figures}
    content = probability.to_json(replace(cal, fit=json.dumps(fitted, sort_keys=True)))
    if write:
        Path(write).write_text(json.dumps(content, indent=1) + "\n", encoding="utf-8")
    return content
