"""rt4chart: claim-level hallucination auditing of RAG traces (RT4CHART) on Apache Beam.

The Python API (`audit`, `Auditor`, `open_run`, `AuditResult`, `AuditFailed`) is imported on
first use, so that `import rt4chart` stays light (no Beam until an audit runs).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rt4chart import _quiet_beam

__version__ = "0.1.0"

_quiet_beam.install()  # Beam's import-time notices never reach the host's logging

# name -> the module that defines it
_LAZY = {
    "audit": "rt4chart.pipeline.api",
    "Auditor": "rt4chart.pipeline.api",
    "AuditFailed": "rt4chart.pipeline.api",
    "open_run": "rt4chart.pipeline.results.runs",
    "AuditResult": "rt4chart.pipeline.results.runs",
}

__all__ = ["AuditFailed", "AuditResult", "Auditor", "__version__", "audit", "open_run"]

if TYPE_CHECKING:
    from rt4chart.pipeline.api import AuditFailed, Auditor, audit
    from rt4chart.pipeline.results.runs import AuditResult, open_run


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'rt4chart' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
