"""Fixtures of the infra tests: the infra/ folder, and its scripts loaded as modules."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

INFRA = Path(__file__).resolve().parents[2] / "infra"


def _load(path: Path, name: str) -> ModuleType:
    """Import a script of infra/ (not a package) by path, its folder on sys.path."""
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # flex_template/main.py imports its neighbour openai_key
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def infra() -> Path:
    return INFRA


@pytest.fixture(scope="session")
def export_schemas() -> ModuleType:
    return _load(INFRA / "export_schemas.py", "rt4chart_infra_export_schemas")


@pytest.fixture(scope="session")
def launcher() -> ModuleType:
    return _load(INFRA / "flex_template" / "main.py", "rt4chart_infra_flex_main")


@pytest.fixture(scope="session")
def openai_key() -> ModuleType:
    _load(INFRA / "flex_template" / "main.py", "rt4chart_infra_flex_main")  # path set-up
    import openai_key

    return openai_key


@pytest.fixture(scope="session")
def worker_boot() -> ModuleType:
    return _load(INFRA / "flex_template" / "worker_boot.py", "rt4chart_infra_worker_boot")
