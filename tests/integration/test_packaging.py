"""The distribution installs one `rt4chart` namespace with its prompts and examples."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_holds_only_the_rt4chart_namespace(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )
    (wheel,) = tmp_path.glob("rt4chart-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"rt4chart", next(t for t in tops if t.endswith(".dist-info"))}
    for expected in ("rt4chart/prompts/verify_system.txt", "rt4chart/prompts/verify.schema.json",
                     "rt4chart/pipeline/examples/traces.jsonl",
                     "rt4chart/transforms/judges/openai/judge.py",
                     "rt4chart/schemas/tables.py", "rt4chart/prompts/verify_many.schema.json",
                     "rt4chart/pipeline/eval/metrics.py",
                     "rt4chart/pipeline/report/static/report.js",
                     "rt4chart/pipeline/report/static/report.css",
                     "rt4chart/transforms/judges/prices.json"):
        assert expected in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "rt4chart = rt4chart.pipeline.launcher:main" in zipfile.ZipFile(wheel).read(
        entry_points).decode()
