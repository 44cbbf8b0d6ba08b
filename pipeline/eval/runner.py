"""`rt4chart eval`: labelled records -> traces -> the audit -> items -> the report.

Parts: every source is in the dev or the test part (`datasets.split_of`, a fixed hash of the
source id). Thresholds (the judge score's, the length reference's threshold and direction) are
chosen on dev and the measures reported on `split`: with `test` (default) and `all` both parts
are audited; with `dev` only dev is audited and its thresholds are in-sample (the report says
so). `limit` caps the audited answers, stratified by task (every task gets at least one
answer, the rest in proportion to its answers): per task, whole sources in a seeded random
order until its share, the last source possibly cut.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections import Counter
from dataclasses import MISSING, dataclass, field
from pathlib import Path

from rt4chart.pipeline.eval import loaders, measures_report
from rt4chart.pipeline.eval.items import build_items
from rt4chart.pipeline.results.summary import read_table
from rt4chart.pipeline.run import jobs
from rt4chart.pipeline.run.config import AuditConfig, NestsStages, StagesConfig
from rt4chart.transforms.common.options_spec import option
from rt4chart.transforms.judges.contract import JudgeSpec

logger = logging.getLogger(__name__)

SPLITS = ("test", "dev", "all")
SECRET_WORDS = ("key", "secret", "token", "password")


@dataclass(frozen=True)
class EvalOptions(NestsStages):
    """What to evaluate and how; the judge, segmentation and claims per call are the audit's."""

    dataset: str = option("--dataset", default=MISSING, choices=loaders.FORMATS,
                          help="the data's format")
    data: str = option("--data", default=MISSING,
                       help="ragtruth / ragtruth-plus-plus: the directory of the files; jsonl: "
                            "the file")
    out: str = option("--out", default=MISSING, help="output directory of the eval run")
    split: str = option(
        "--split", default="test", choices=SPLITS,
        help="part to report on (default test; thresholds are chosen on dev, so test and all "
             "audit both parts)")
    tasks: tuple[str, ...] = option(  # parsed from the comma-separated text by eval/cli.py
        "--tasks", default=(), parsed_default=None,
        help="comma-separated task types (default: all), e.g. QA,Summary")
    limit: int | None = option("--limit", parse=int,
                               help="audit at most N answers, stratified by task: one of "
                                    "every task, the rest in proportion to each task's "
                                    "answers; whole sources in a seeded order")
    seed: int = option("--seed", default=0, parse=int, help="limit and bootstrap seed (default 0)")
    bootstrap: int = option("--bootstrap", default=1000, parse=int,
                            help="bootstrap resamples for the intervals (default 1000)")
    overwrite: bool = option("--overwrite", kind="flag", default=False,
                             help="replace an earlier eval in --out")
    label_map: dict[str, str] = option(  # built from the RAW=LABEL items by eval/cli.py
        "--gold-label", dest="gold_label", default_factory=dict, parsed_default=[], kind="append",
        metavar="RAW=CON|NIC", help="map a raw gold label to CON or NIC (repeatable)")
    stages: StagesConfig = StagesConfig(JudgeSpec())  # the audit's judge, windows and stages
    beam_args: tuple[str, ...] = ()
    config: dict = field(default_factory=dict)  # the judge and window settings, for the report

    def __post_init__(self) -> None:
        if self.dataset not in loaders.FORMATS:
            raise ValueError(f"--dataset must be one of {', '.join(loaders.FORMATS)}, "
                             f"got {self.dataset!r}")
        if self.split not in SPLITS:
            raise ValueError(f"--split must be one of {', '.join(SPLITS)}, got {self.split!r}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit must be at least 1, got {self.limit}")
        if self.bootstrap < 1:
            raise ValueError(f"--bootstrap must be at least 1, got {self.bootstrap}")
        bad = {v for v in self.label_map.values() if v not in loaders.LABELS}
        if bad:
            raise ValueError(f"--gold-label maps to CON or NIC, not {', '.join(sorted(bad))}")

    @property
    def audited_parts(self) -> tuple[str, ...]:
        return ("dev",) if self.split == "dev" else ("dev", "test")

    @property
    def reported_parts(self) -> tuple[str, ...]:
        return ("dev", "test") if self.split == "all" else (self.split,)


def select(records: list[loaders.EvalRecord], opts: EvalOptions) -> list[loaders.EvalRecord]:
    """The records to audit: tasks, parts, then the seeded limit, stratified by task (see
    `task_shares`): per task, whole sources in a seeded random order until its share, the
    last source possibly cut."""
    tasks = {t.lower() for t in opts.tasks}
    chosen = [r for r in records if (not tasks or r.task.lower() in tasks)
              and r.split in opts.audited_parts]
    if opts.limit is None or len(chosen) <= opts.limit:
        return chosen
    by_task: dict[str, dict[str, list[loaders.EvalRecord]]] = {}
    for r in chosen:
        by_task.setdefault(r.task, {}).setdefault(r.source_id, []).append(r)
    rng = random.Random(opts.seed)
    shares = task_shares({t: sum(map(len, s.values())) for t, s in by_task.items()},
                         opts.limit, rng)
    picked: list[loaders.EvalRecord] = []
    for task in sorted(by_task):
        sources = by_task[task]
        order = sorted(sources)
        rng.shuffle(order)
        mine: list[loaders.EvalRecord] = []
        for source in order:
            if len(mine) >= shares[task]:
                break
            mine.extend(sources[source])
        picked.extend(mine[:shares[task]])
    return picked


def task_shares(sizes: dict[str, int], limit: int, rng: random.Random) -> dict[str, int]:
    """How many answers of each task a limit takes (`limit` < the sum of `sizes`): one of
    every task (of `limit` tasks drawn at random when there are more tasks than that), the
    rest in proportion to the tasks' answers beyond that one (largest remainders first, ties
    by name)."""
    tasks = sorted(sizes)
    if limit < len(tasks):
        drawn = set(rng.sample(tasks, limit))
        return {t: int(t in drawn) for t in tasks}
    rest, beyond = limit - len(tasks), {t: sizes[t] - 1 for t in tasks}
    total = sum(beyond.values()) or 1  # 0 only when the limit takes every answer
    ideal = {t: rest * beyond[t] / total for t in tasks}
    shares = {t: 1 + int(ideal[t]) for t in tasks}
    left = limit - sum(shares.values())
    for t in sorted(tasks, key=lambda t: (int(ideal[t]) - ideal[t], t))[:left]:
        shares[t] += 1
    return shares


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _prepare(out: Path, overwrite: bool) -> None:
    if (out / "report.json").exists() and not overwrite:
        raise FileExistsError(f"{out} already holds an eval report; pass --overwrite to replace "
                              "it or choose another --out")
    out.mkdir(parents=True, exist_ok=True)


def run_audit(traces: Path, audit_out: Path, opts: EvalOptions) -> tuple[int, float, dict]:
    """The audit of `rt4chart audit`: (exit code, seconds, its summary.json)."""
    config = AuditConfig(inputs=(str(traces),), out=str(audit_out), stages=opts.stages,
                         overwrite=True)
    started = time.monotonic()
    result = jobs.run_audit(config, jobs.beam_options(list(opts.beam_args)))
    seconds = time.monotonic() - started
    code = 1 if jobs.no_answer_judged(result) else 0
    summary = json.loads((audit_out / "summary.json").read_text())
    return code, seconds, summary


def _data_section(loaded: loaders.Loaded, selected: list[loaders.EvalRecord],
                  opts: EvalOptions) -> dict:
    raw = Counter(f"{lb} -> {loaders.map_label(lb, opts.label_map)}"
                  for r in selected for lb in r.raw_labels)
    return {"dataset": opts.dataset, "path": str(opts.data), "sha256": loaded.files,
            "records": len(loaded.records), "skipped": loaded.skipped,
            "audited": len(selected), "audited_parts": list(opts.audited_parts),
            "reported_parts": list(opts.reported_parts), "label_mapping": dict(sorted(raw.items()))}


def run_eval(opts: EvalOptions) -> tuple[int, dict]:
    """Run an evaluation; returns (exit code, report). Writes under `opts.out`: traces.jsonl,
    audit/ (every table of the audit), items.jsonl, report.json, report.md and the plots."""
    started = time.monotonic()
    out = Path(opts.out)
    _prepare(out, opts.overwrite)
    loaded = loaders.load(opts.dataset, opts.data, opts.label_map)
    selected = select(loaded.records, opts)
    if not selected:
        raise ValueError(f"no record to evaluate in {opts.data} (tasks {opts.tasks or 'all'}, "
                         f"parts {', '.join(opts.audited_parts)})")
    traces = out / "traces.jsonl"
    _write_jsonl(traces, [r.trace for r in selected])
    code, audit_seconds, summary = run_audit(traces, out / "audit", opts)
    if code != 0:
        return code, {}
    items = build_items(selected, read_table(str(out / "audit"), "answers").to_pylist(),
                        read_table(str(out / "audit"), "claims").to_pylist())
    _write_jsonl(out / "items.jsonl", items)
    run = {"audit_seconds": audit_seconds, "audited_answers": len(selected), "audit": summary,
           "config": {**opts.config, "seed": opts.seed, "limit": opts.limit,
                      "tasks": list(opts.tasks), "split": opts.split,
                      "bootstrap": opts.bootstrap, "beam_args": list(opts.beam_args)}}
    result = measures_report.build(items, _data_section(loaded, selected, opts), run,
                                   opts.reported_parts, opts.seed, opts.bootstrap)
    result["timing"]["eval_seconds"] = time.monotonic() - started
    measures_report.write(result, items, out)
    return 0, result


def redact(options: list[str]) -> list[str]:
    """Judge options as KEY=VALUE, with the values of secret-looking keys hidden."""
    out = []
    for item in options:
        key, sep, _ = item.partition("=")
        secret = any(w in key.lower() for w in SECRET_WORDS)
        out.append(f"{key}{sep}***" if secret else item)
    return out
