"""The package declares the Python versions it supports and uses nothing newer than the oldest.

Two checks: `vermin` (the minimum version each construct and standard-library API needs) on
the package folders, and the test suite itself running on the oldest declared version, which
catches what no static tool can see (a method of a type a value only sometimes has, such as
`int.is_integer`, new in 3.12: issue 32).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_FOLDERS = ("rt4chart", "pipeline", "transforms", "schemas", "prompts")


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def oldest() -> tuple[int, int]:
    found = re.fullmatch(r">=\s*3\.(\d+)", _project()["requires-python"].strip())
    assert found, "requires-python must be a lower bound, >=3.N"
    return 3, int(found.group(1))


def _vermin(*paths: str) -> subprocess.CompletedProcess:
    major, minor = oldest()
    return subprocess.run(
        [sys.executable, "-c", "import sys, vermin; sys.exit(vermin.main())",
         f"-t={major}.{minor}-", "--no-tips", "--violations",
         "--eval-annotations", "--no-parse-comments", *paths],
        capture_output=True, text=True, cwd=ROOT, check=False)


def test_the_classifiers_name_the_oldest_supported_version():
    major, minor = oldest()
    classifiers = _project()["classifiers"]
    assert f"Programming Language :: Python :: {major}.{minor}" in classifiers
    assert "Programming Language :: Python :: 3 :: Only" in classifiers


def test_no_module_needs_a_python_newer_than_the_oldest_supported():
    result = _vermin(*PACKAGE_FOLDERS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Target versions not met" not in result.stdout


def test_vermin_rejects_a_construct_newer_than_the_oldest(tmp_path):
    newer = tmp_path / "newer.py"
    newer.write_text("type Pair = tuple[int, int]\n")  # a 3.12 statement
    result = _vermin(str(newer))
    assert result.returncode != 0
    assert "3.12" in result.stdout


def test_the_suite_runs_on_the_oldest_supported_version():
    # What a static check cannot see (int.is_integer on a value that is an int only for
    # some inputs) fails the tests when they run on the oldest version, as CI runs them.
    assert sys.version_info[:2] == oldest(), (
        f"run the tests on Python {'.'.join(map(str, oldest()))}, the oldest supported")
