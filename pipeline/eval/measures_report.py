"""The evaluation report (eval's report.json and report.md; the HTML report of a run is
`pipeline/report/`): every measure per task type and overall, for the judge and the
references, with intervals; cost and speed; configuration and data hashes. JSON and Markdown."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np

from rt4chart.pipeline.eval import measures, plots
from rt4chart.pipeline.eval.items import USAGE
from rt4chart.schemas.usage import total_cost

SYSTEMS = ("judge", "flag_all", "length")
METHOD = (
    "Answer level: an answer is hallucinated when it has a gold span; CON (NIC) detection: the "
    "answer has a gold CON (NIC) span, and the judge flagged a CON (NIC) claim span (or gave the "
    "answer that label). The references flag every label.",
    "Span level: characters of the union of gold spans against the union of predicted spans, "
    "per answer, summed over answers (micro); faithful answers count their flagged characters "
    "as false positives.",
    "Evidence: characters of the evidence of the answer's CON claims against the gold evidence, "
    "per document, on answers with a gold CON span that the judge flagged CON; n/a without gold "
    "evidence.",
    "Precision, recall and F1 are TP/(TP+FP), TP/(TP+FN), 2TP/(2TP+FP+FN); n/a when the "
    "denominator is 0.",
    "Intervals: 95% percentile bootstrap resampling whole sources (every answer to one question "
    "or article together); the same resamples for every system.",
    "Threshold: the score threshold with the best F1 on the whole dev part (ties: the higher; "
    "one threshold for every task type, as a deployed auditor has), applied to the reported "
    "part; the length reference's direction and threshold likewise. ECE: 10 equal-width "
    "bins. PPV/NPV at a prevalence: Bayes' rule from "
    "the verdict's measured true and false positive rates.",
    "Incomplete answers (a judge call failed) count as flagged only when their label is CON or "
    "NIC; missing answers (no answer row, e.g. dead-lettered) as not flagged.",
)


def _counts(items: list[dict]) -> dict:
    gold_labels = [{s[2] for s in it["gold_spans"]} for it in items]
    n = len(items)
    hallucinated = sum(bool(lb) for lb in gold_labels)
    return {
        "answers": n, "sources": len({it["source_id"] for it in items}),
        "hallucinated": hallucinated, "prevalence": hallucinated / n if n else None,
        "with_con": sum("CON" in lb for lb in gold_labels),
        "with_nic": sum("NIC" in lb for lb in gold_labels),
        "incomplete": sum(it["status"] == "incomplete" for it in items),
        "missing": sum(it["status"] == "missing" for it in items),
        "with_gold_evidence": sum(it.get("gold_evidence") is not None for it in items),
        "score_from": dict(Counter(it["score_from"] for it in items)),
    }


def _cost(items: list[dict]) -> dict:
    n = len(items)
    totals = {k: float(sum(it[k] for it in items)) for k in USAGE if k != "cost_usd"}
    totals["cost_usd"] = total_cost(it["cost_usd"] for it in items)  # None: no price
    per_1000 = {k: (v * 1000 / n if n and v is not None else None) for k, v in totals.items()}
    return {"answers": n, "total": totals, "per_1000_answers": per_1000}


def systems_of(items: list[dict]) -> tuple[list[measures.System], dict]:
    """The judge and the references over all items, thresholds chosen on the dev items."""
    dev = np.array([it["split"] == "dev" for it in items], dtype=bool)
    judge = measures.judge_system(items, dev)
    length, chosen = measures.length_system(items, dev)
    thresholds = {"judge": judge.threshold, "flag_all": 1.0, "length": chosen,
                  "dev_answers": int(dev.sum())}
    return [judge, measures.flag_all_system(items), length], thresholds


def groups_of(items: list[dict], reported: tuple[str, ...]) -> dict[str, np.ndarray]:
    idx = np.array([i for i, it in enumerate(items) if it["split"] in reported], dtype=int)
    tasks = sorted({items[i]["task"] for i in idx})
    out = {"overall": idx}
    for task in tasks:
        out[task] = np.array([i for i in idx if items[i]["task"] == task], dtype=int)
    return out


def build(items: list[dict], data: dict, run: dict, reported: tuple[str, ...], seed: int,
          n_boot: int) -> dict:
    """The report as a JSON-ready dict."""
    systems, thresholds = systems_of(items)
    gold = measures.Gold.of(items)
    groups = {}
    for name, idx in groups_of(items, reported).items():
        chosen = [items[i] for i in idx]
        groups[name] = {"counts": _counts(chosen), "cost": _cost(chosen),
                        "systems": measures.evaluate(gold, systems, idx, n_boot, seed)}
    notes = list(METHOD)
    if "dev" in reported:
        notes.append("The reported part includes dev: thresholds and the length reference's "
                     "direction are in-sample there.")
    audited = run["audited_answers"]
    return {
        "rt4chart_eval": 1, "data": data, "config": run["config"],
        "judge": {k: run["audit"].get(k) for k in ("judge", "judge_model", "prompt_hash",
                                                   "window_size", "window_overlap")},
        "probability": run["audit"].get("probability"),
        "calibration": _calibration(groups),
        "reported_parts": list(reported), "thresholds_from": "dev", "thresholds": thresholds,
        "groups": groups, "measures": list(measures.MEASURES), "systems": list(SYSTEMS),
        "timing": {"audit_seconds": run["audit_seconds"], "audited_answers": audited,
                   "answers_per_second": audited / run["audit_seconds"]
                   if run["audit_seconds"] else None},
        "method": notes,
    }


def _calibration(groups: dict) -> dict:
    """The judge's answer-level ECE (p_hallucinated, 10 bins) per group, with its plot."""
    return {name: {"ece": g["systems"]["judge"]["ece"], "answers": g["counts"]["answers"],
                   "plot": plots.calibration_file(name)} for name, g in groups.items()}


def _calibration_md(report: dict) -> list[str]:
    prob = report.get("probability") or {}
    lines = ["## Calibration of p_hallucinated", ""]
    if prob:
        lines += [f"Claim threshold {fmt(prob['claim_threshold'])} (ENT <=> p_unsupported "
                  f"below it), answer threshold {fmt(prob['answer_threshold'])} (hallucinated "
                  f"<=> p_hallucinated at or above it); calibration `{prob['calibration']}`.", ""]
    lines += ["| group | answers | ECE (judge) | reliability plot |", "|---|---|---|---|"]
    for name, c in report["calibration"].items():
        lines.append(f"| {name} | {c['answers']} | {_cell(c['ece'])} | [{c['plot']}]"
                     f"({c['plot']}) |")
    return lines + [""]


def write(report: dict, items: list[dict], out: Path) -> None:
    """report.json, report.md and the plots under `out`."""
    systems, _ = systems_of(items)
    groups = groups_of(items, tuple(report["reported_parts"]))
    report["plots"] = plots.write_all(measures.Gold.of(items), systems, groups, out)
    (out / "report.json").write_text(json.dumps(report, indent=2, sort_keys=False))
    (out / "report.md").write_text(markdown(report))


def fmt(v: float | None, digits: int = 3) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def _cell(m: dict) -> str:
    low, high = m["interval"]
    if m["value"] is None:
        return "n/a"
    return fmt(m["value"]) + ("" if low is None else f" [{fmt(low)}, {fmt(high)}]")


def measures_table(systems: dict, names: list[str]) -> list[str]:
    sys_names = list(systems)
    lines = ["| measure | " + " | ".join(sys_names) + " |",
             "|---|" + "---|" * len(sys_names)]
    for name in names:
        lines.append(f"| {name} | " + " | ".join(_cell(systems[s][name]) for s in sys_names)
                     + " |")
    return lines


def _group_md(name: str, group: dict, names: list[str]) -> list[str]:
    c, cost = group["counts"], group["cost"]
    per = cost["per_1000_answers"]
    return [
        f"## {name}", "",
        f"{c['answers']} answers from {c['sources']} sources; {c['hallucinated']} hallucinated "
        f"(prevalence {fmt(c['prevalence'])}; with CON {c['with_con']}, with NIC "
        f"{c['with_nic']}); incomplete {c['incomplete']}, missing {c['missing']}; score from "
        f"{c['score_from']}.", "",
        *measures_table(group["systems"], names), "",
        f"Per 1,000 answers: {fmt(per['judge_calls'], 0)} judge calls, "
        f"{fmt(per['input_tokens'], 0)} input ({fmt(per['cached_tokens'], 0)} cached) / "
        f"{fmt(per['output_tokens'], 0)} output tokens, ${fmt(per['cost_usd'], 4)}.", "",
    ]


def markdown(report: dict) -> str:
    cfg, judge, data, t = report["config"], report["judge"], report["data"], report["timing"]
    length = report["thresholds"]["length"]
    lines = [
        "# rt4chart evaluation", "",
        f"Dataset `{data['dataset']}` at `{data['path']}`; reported part: "
        f"{', '.join(report['reported_parts'])}; thresholds chosen on dev "
        f"({report['thresholds']['dev_answers']} answers); audited parts: "
        f"{', '.join(data['audited_parts'])} ({data['audited']} answers).", "",
        f"Judge `{judge['judge']}` (model `{judge['judge_model']}`), prompt hash "
        f"`{judge['prompt_hash']}`, window {judge['window_size']}/{judge['window_overlap']}; "
        f"seed {cfg['seed']}, limit {cfg['limit']}, tasks {cfg['tasks'] or 'all'}, "
        f"{cfg['bootstrap']} bootstrap resamples.", "",
        "Data files (sha256): " + ", ".join(f"`{k}` `{v}`" for k, v in data["sha256"].items()),
        "", f"Judge: flagged at p_hallucinated >= {fmt(report['thresholds']['judge'])} for "
        f"the threshold measures. Length reference: answers of "
        f"{'at least' if length['direction'] == 'longer' else 'at most'} "
        f"{fmt(length['threshold_chars'], 0)} characters flagged (dev AUROC of length "
        f"{fmt(length['dev_auroc'])}).", "",
        f"Audit wall time {fmt(t['audit_seconds'], 1)} s for {t['audited_answers']} answers "
        f"({fmt(t['answers_per_second'], 2)} answers/s); eval total "
        f"{fmt(t.get('eval_seconds'), 1)} s.", "",
    ]
    for name, group in report["groups"].items():
        lines += _group_md(name, group, report["measures"])
    lines += _calibration_md(report)
    lines += ["## Plots (reported part)", ""]
    lines += [f"![{p}]({p})" for p in report.get("plots", [])] + [""]
    lines += ["## Method", ""] + [f"- {n}" for n in report["method"]]
    lines += [f"- Gold label mapping seen: {data['label_mapping'] or 'none'}.", ""]
    return "\n".join(lines)
