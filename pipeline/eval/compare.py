"""`rt4chart eval compare RUN_A RUN_B`: the difference B - A in each measure of the judge, with a
paired source-bootstrap interval, and the answers whose verdict changed.

Both runs are read from their eval directories (items.jsonl, report.json). The answers compared
are those of A's reported part that B also audited, matched by trace_id; their gold must agree
(same data). Each run keeps its own dev-chosen score threshold. Paired: every resample draws
the same sources for both runs. Use it for run-to-run stability (same judge twice) and for A/B
tests of judges and prompts.

It also says what differs between the runs (`config_diff`: every setting of the judge, the
windows, the prompts' hash and the eval's options that is not the same, as A and B) and what
each cost on the common answers (`cost`: judge calls, tokens and USD per 1,000 answers, per
group), so that a change that leaves every verdict as it was but costs 58% more calls shows.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from rt4chart.pipeline.eval import measures
from rt4chart.pipeline.eval.measures_report import _cell, _cost, fmt, groups_of
from rt4chart.pipeline.eval.runner import read_jsonl


def load_run(directory: str | Path) -> tuple[list[dict], dict]:
    directory = Path(directory)
    for name in ("items.jsonl", "report.json"):
        if not (directory / name).is_file():
            raise ValueError(f"{directory} is not an eval run: {name} missing")
    return read_jsonl(directory / "items.jsonl"), json.loads((directory / "report.json")
                                                             .read_text())


def align(items_a: list[dict], items_b: list[dict],
          reported: tuple[str, ...]) -> tuple[list[dict], list[dict]]:
    """The common answers of A's reported part, in A's order; gold must be identical."""
    by_id = {it["trace_id"]: it for it in items_b}
    a, b = [], []
    for it in items_a:
        other = by_id.get(it["trace_id"])
        if it["split"] not in reported or other is None:
            continue
        if other["gold_spans"] != it["gold_spans"]:
            raise ValueError(f"the runs disagree on the gold of {it['trace_id']}: not the same "
                             "data")
        a.append(it)
        b.append(other)
    if not a:
        raise ValueError("the two runs have no answer of the reported part in common")
    return a, b


def _system(items: list[dict], threshold: float | None) -> measures.System:
    none = np.zeros(len(items), dtype=bool)
    return dataclasses.replace(measures.judge_system(items, none), threshold=threshold)


def paired(gold: measures.Gold, a: measures.System, b: measures.System, idx: np.ndarray,
           n_boot: int, seed: int) -> dict:
    """Per measure: A, B, the difference B - A and its paired 95% interval."""
    point_a, point_b = measures.measure(gold, a, idx), measures.measure(gold, b, idx)
    diffs: list[dict] = []
    for sample in measures.resamples(gold.source, idx, n_boot, seed):
        ma, mb = measures.measure(gold, a, sample), measures.measure(gold, b, sample)
        diffs.append({k: None if ma[k] is None or mb[k] is None else mb[k] - ma[k] for k in ma})
    out = {}
    for k in measures.MEASURES:
        diff = None if point_a[k] is None or point_b[k] is None else point_b[k] - point_a[k]
        out[k] = {"a": point_a[k], "b": point_b[k], "diff": diff,
                  "interval": list(measures.interval([d[k] for d in diffs]))}
    return out


def changed(a: list[dict], b: list[dict]) -> list[dict]:
    """The answers whose verdict (flagged or label) differs between the runs."""
    return [{"trace_id": x["trace_id"], "task": x["task"],
             "gold": sorted({s[2] for s in x["gold_spans"]}) or ["faithful"],
             "a": x["label"], "b": y["label"], "a_flagged": x["flagged"],
             "b_flagged": y["flagged"]}
            for x, y in zip(a, b, strict=True)
            if x["flagged"] != y["flagged"] or x["label"] != y["label"]]


def _flat(settings: dict, prefix: str = "") -> dict:
    """Nested settings as {dotted.key: value}."""
    out = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def config_diff(report_a: dict, report_b: dict) -> dict:
    """{setting: {"a": A's value, "b": B's value}} for every setting that differs (the judge,
    model, windows and prompts hash of `judge`, the eval's options of `config`); a setting only
    one run has is None in the other."""
    a = _flat({"judge": report_a.get("judge", {}), "config": report_a.get("config", {})})
    b = _flat({"judge": report_b.get("judge", {}), "config": report_b.get("config", {})})
    return {k: {"a": a.get(k), "b": b.get(k)} for k in sorted({*a, *b}) if a.get(k) != b.get(k)}


def costs(a: list[dict], b: list[dict], groups: dict) -> dict:
    """Per group: A's and B's judge calls, tokens and USD per 1,000 common answers, and B / A."""
    out = {}
    for name, idx in groups.items():
        per_a = _cost([a[i] for i in idx])["per_1000_answers"]
        per_b = _cost([b[i] for i in idx])["per_1000_answers"]
        out[name] = {k: {"a": per_a[k], "b": per_b[k],
                         "ratio": per_b[k] / per_a[k] if per_a[k] and per_b[k] is not None
                         else None} for k in per_a}
    return out


def compare(run_a: str, run_b: str, n_boot: int = 1000, seed: int = 0) -> dict:
    items_a, report_a = load_run(run_a)
    items_b, report_b = load_run(run_b)
    reported = tuple(report_a["reported_parts"])
    a, b = align(items_a, items_b, reported)
    gold = measures.Gold.of(a)
    sys_a = _system(a, report_a["thresholds"]["judge"])
    sys_b = _system(b, report_b["thresholds"]["judge"])
    indices = groups_of(a, reported)
    groups = {name: paired(gold, sys_a, sys_b, idx, n_boot, seed)
              for name, idx in indices.items()}
    flips = changed(a, b)
    return {
        "a": {"run": str(run_a), **report_a["judge"], "data": report_a["data"]["sha256"]},
        "b": {"run": str(run_b), **report_b["judge"], "data": report_b["data"]["sha256"]},
        "reported_parts": list(reported), "answers": len(a), "seed": seed, "bootstrap": n_boot,
        "groups": groups, "changed": flips,
        "agreement": 1 - len(flips) / len(a),
        "config_diff": config_diff(report_a, report_b), "cost": costs(a, b, indices),
    }


def markdown(result: dict) -> str:
    a, b = result["a"], result["b"]
    lines = [
        "# rt4chart eval compare", "",
        f"A: `{a['run']}` (judge `{a['judge_model']}`, prompts `{a['prompt_hash']}`); "
        f"B: `{b['run']}` (judge `{b['judge_model']}`, prompts `{b['prompt_hash']}`).",
        f"{result['answers']} common answers of the {', '.join(result['reported_parts'])} part; "
        f"verdict agreement {fmt(result['agreement'])}; {len(result['changed'])} changed.", "",
    ]
    diff = result.get("config_diff", {})
    lines += ["## What differs", ""]
    lines += ([f"- `{k}`: A `{v['a']}`, B `{v['b']}`" for k, v in diff.items()]
              or ["No setting differs."])
    lines += ["", "## Cost per 1,000 common answers", "",
              "| group | measure | A | B | B / A |", "|---|---|---|---|---|"]
    for name, group in result.get("cost", {}).items():
        for k, m in group.items():
            digits = 4 if k == "cost_usd" else 0
            lines.append(f"| {name} | {k} | {fmt(m['a'], digits)} | {fmt(m['b'], digits)} | "
                         f"{fmt(m['ratio'], 2)} |")
    lines.append("")
    for name, group in result["groups"].items():
        lines += [f"## {name}", "", "| measure | A | B | B - A [95% paired] |", "|---|---|---|---|"]
        for k, m in group.items():
            cell = _cell({"value": m["diff"], "interval": m["interval"]})
            lines.append(f"| {k} | {fmt(m['a'])} | {fmt(m['b'])} | {cell} |")
        lines.append("")
    lines += ["## Changed verdicts", "", "| trace_id | task | gold | A | B |",
              "|---|---|---|---|---|"]
    lines += [f"| {c['trace_id']} | {c['task']} | {','.join(c['gold'])} | {c['a']} | {c['b']} |"
              for c in result["changed"]]
    return "\n".join(lines) + "\n"


def write(result: dict, out: str | Path) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(result, indent=2))
    (out / "compare.md").write_text(markdown(result))
