"""The audit job's configuration: one frozen dataclass, validated once."""

from __future__ import annotations

from dataclasses import dataclass

from rt4chart.transforms.judges.base import JudgeSpec
from rt4chart.transforms.segment import SegmentConfig


@dataclass(frozen=True)
class AuditConfig:
    """What to read, how to judge, where to write."""

    inputs: tuple[str, ...]
    out: str
    judge: JudgeSpec
    segment: SegmentConfig = SegmentConfig()
    overwrite: bool = False
    input_format: str = "auto"

    def __post_init__(self) -> None:
        if self.input_format not in ("auto", "jsonl", "parquet"):
            raise ValueError(f"--input-format must be auto, jsonl or parquet, "
                             f"got {self.input_format!r}")
        if not self.inputs:
            raise ValueError("no input given: pass trace files (JSONL or Parquet) or --example")
        if not self.out:
            raise ValueError("--out is required")
