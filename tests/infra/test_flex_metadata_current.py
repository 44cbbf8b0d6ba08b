"""The committed Flex Template metadata is what the options' declarations give
(`python infra/flex_template/metadata.py` rewrites it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

FLEX = Path(__file__).resolve().parents[2] / "infra" / "flex_template"


def _generator():
    spec = importlib.util.spec_from_file_location("flex_metadata", FLEX / "metadata.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_metadata_is_current():
    generator = _generator()
    assert (FLEX / "metadata.json").read_text() == generator.render(), (
        "infra/flex_template/metadata.json is stale: run python infra/flex_template/metadata.py")
    assert generator.main(["--check"]) == 0
