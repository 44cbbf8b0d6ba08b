"""Misread numbers (issue 46, point 3): how many of the hallucinated answers of
tests/data/exemptions/misread_numbers.jsonl end ENT when the judge obeys (ENT for everything,
quoting the best-overlapping context sentence: `lucky_judge:factory`), and how many faithful
restatements in another format are flagged when it is honest (`number_judges:honest`), with
this checkout's code and with another revision's ("before"; default main).

    .venv/bin/python tests/bench/bench_misread_numbers.py [--before main] [--cases FILE]

The other revision's tree is taken with `git archive` into a temporary folder, laid out as the
installed `rt4chart` package (pyproject's package-dir) and put first on PYTHONPATH of a child
process, which runs the same audit (the real transforms, FnApiRunner, no network). The case
file and the judges are this checkout's. Prints, per code: hallucinated answers ENT / all, and
faithful answers not ENT / all, then the cases whose verdict changed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FAKES = HERE.parent / "fakes"
CASES = HERE.parent / "data" / "exemptions" / "misread_numbers.jsonl"


def _labels(spec: str, cases: list[dict], options: dict[str, str] | None = None
            ) -> dict[str, str]:
    """Each case's answer label from one in-process audit with the judge `spec`."""
    import apache_beam as beam
    from apache_beam.testing.test_pipeline import TestPipeline

    from rt4chart.pipeline.run.config import AuditConfig, StagesConfig
    from rt4chart.pipeline.run.graph import Audit
    from rt4chart.schemas.records import RunInfo
    from rt4chart.transforms.judges.contract import JudgeSpec

    import number_judges

    out_file = Path(tempfile.mkdtemp(prefix="rt4chart-bench-")) / "labels.jsonl"
    judge = JudgeSpec.of(spec, options)
    config = AuditConfig(inputs=("-",), out="-", stages=StagesConfig(judge=judge))

    def write(rows) -> None:
        with open(out_file, "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps([r.trace_id, r.label]) + "\n" for r in rows)

    with TestPipeline(runner="FnApiRunner") as p:
        lines = p | beam.Create([json.dumps(number_judges.trace(c), ensure_ascii=False)
                                 for c in cases])
        answers = (lines | Audit(config.stages, RunInfo("bench-numbers", "bench"))).answers
        _ = (answers | beam.combiners.ToList() | beam.Map(write))
    return dict(json.loads(line) for line in out_file.read_text().splitlines())


def run_here(cases_file: Path) -> dict[str, str]:
    """Every case's label with the code on sys.path: hallucinated ones under the obeying
    judge, faithful ones under the honest judge."""
    sys.path.insert(0, str(FAKES))
    import number_judges

    cases = number_judges.load_cases(cases_file)
    labels = _labels("lucky_judge:factory", [c for c in cases if c["label"] == "hallucinated"])
    labels |= _labels("number_judges:honest", [c for c in cases if c["label"] == "faithful"],
                      {"cases": str(cases_file)})
    return labels


def _layout(ref: str, folder: Path) -> Path:
    """`ref`'s tree under folder/src, and folder/pkg/rt4chart/... linked as pyproject maps it."""
    src, pkg = folder / "src", folder / "pkg"
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True,
                             capture_output=True).stdout
    src.mkdir(parents=True)
    tar_path = folder / "tree.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(src, filter="data")
    dirs = tomllib.loads((src / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"]
    for name, path in sorted(dirs.items(), key=lambda kv: kv[0].count(".")):
        target = pkg / name.replace(".", "/")
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(src / path, target_is_directory=True)
    return pkg


def run_before(ref: str, cases_file: Path) -> dict[str, str]:
    with tempfile.TemporaryDirectory(prefix="rt4chart-before-") as tmp:
        pkg = _layout(ref, Path(tmp))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(pkg), str(FAKES)]))
        out = subprocess.run([sys.executable, __file__, "--child", "--cases", str(cases_file)],
                             check=True, capture_output=True, text=True, env=env, cwd=tmp)
        return json.loads(out.stdout.strip().splitlines()[-1])


def _counts(cases: list[dict], labels: dict[str, str]) -> str:
    bad = [c for c in cases if c["label"] == "hallucinated" and labels.get(c["id"]) == "ENT"]
    lost = [c for c in cases if c["label"] == "faithful" and labels.get(c["id"]) != "ENT"]
    n_h = sum(c["label"] == "hallucinated" for c in cases)
    return (f"hallucinated answers ENT {len(bad)}/{n_h}, faithful answers flagged "
            f"{len(lost)}/{len(cases) - n_h}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="main", help="the revision to compare with")
    parser.add_argument("--cases", type=Path, default=CASES)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_here(args.cases)))
        return
    cases = [json.loads(line) for line in args.cases.read_text(encoding="utf-8").splitlines()]
    before, after = run_before(args.before, args.cases), run_here(args.cases)
    print(f"before ({args.before}): {_counts(cases, before)}")
    print(f"after (this checkout): {_counts(cases, after)}")
    for case in cases:
        if before.get(case["id"]) != after.get(case["id"]):
            print(f"  {case['id']} ({case['label']}, {case['form']}): "
                  f"{before.get(case['id'])} -> {after.get(case['id'])}")


if __name__ == "__main__":
    main()
