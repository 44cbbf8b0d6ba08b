"""Helpers shared by tests."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path


def read_tables(out: Path) -> dict[str, list[dict]]:
    """Every output table of a run, as lists of rows."""
    from rt4chart.pipeline.results.summary import read_table
    from rt4chart.schemas.tables import TABLES

    return {name: read_table(str(out), name).to_pylist() for name in TABLES}


def load_traces(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def answer_row(**columns):
    """An answer row as AggregateAnswers emits it, for tests that feed a transform: a complete
    ENT answer of route "r" on 2024-06-01, with `columns` replaced."""
    from datetime import UTC, datetime

    from rt4chart.schemas.rows import AnswerRow

    day = datetime(2024, 6, 1, tzinfo=UTC)
    label = columns.get("label", "ENT")
    values = dict(
        trace_id="t", route="r", event_time=day, label=label,
        hallucinated=None if label is None else label != "ENT", p_hallucinated=None,
        status="ok", n_claims=1, hallucinated_spans=(), reason=None, input_tokens=10,
        cached_tokens=4, output_tokens=2, judge_calls=3, reused_calls=0, cost_usd=0.5,
        judge_model="m", prompt_hash="h", task=None, generator=None, audited_at=day, late=False,
        partial=False, partial_reason=None, suspicious_input=False, suspicious_snippets=(),
        p_threshold=None, sample_weight=None, empty_retrieval=False,
    )
    return AnswerRow(**{**values, **columns})


def wait_for(condition, deadline: float, process: subprocess.Popen, log: Path, what: str,
             every_s: float = 0.5) -> None:
    """Poll `condition` until it holds or the monotonic `deadline` passes, failing early (with
    the end of `log`) when the process under test exits first."""
    while time.monotonic() < deadline:
        if condition():
            return
        if process.poll() is not None:
            raise AssertionError(f"stream exited early ({process.returncode}):\n"
                                 f"{log.read_text()[-3000:]}")
        time.sleep(every_s)
    raise AssertionError(f"timed out waiting for {what}:\n{log.read_text()[-3000:]}")
