"""The audit graph: read, validate, segment, decompose, verify locally and globally, join, write.

Stage labels are stable verbs: a runner's in-place update depends on them.
"""

from __future__ import annotations

from typing import NamedTuple

import apache_beam as beam

from rt4chart.pipeline.config import AuditConfig
from rt4chart.pipeline.io import ReadTraces, WriteTable, dead_letter_row
from rt4chart.schemas.records import RunInfo
from rt4chart.transforms.aggregate import AggregateAnswers
from rt4chart.transforms.decompose import DecomposeClaims
from rt4chart.transforms.rates import CostsByRoute, RatesByRoute
from rt4chart.transforms.segment import Segment
from rt4chart.transforms.validate import ValidateTraces
from rt4chart.transforms.verify_global import VerifyGlobal
from rt4chart.transforms.verify_local import VerifyLocal


class AuditTables(NamedTuple):
    answers: beam.PCollection[dict]
    claims: beam.PCollection[dict]
    route_rates: beam.PCollection[dict]
    costs: beam.PCollection[dict]
    dead_letters: beam.PCollection[dict]


class Audit(beam.PTransform):
    """Raw trace records -> the five output tables (as rows)."""

    def __init__(self, config: AuditConfig, run: RunInfo):
        super().__init__()
        self._config = config
        self._run = run

    def expand(self, records: beam.PCollection) -> AuditTables:
        spec = self._config.judge
        valid = records | "ValidateTraces" >> ValidateTraces()
        segmented = valid.traces | "Segment" >> Segment(self._config.segment)
        decomposed = segmented.prepared | "DecomposeClaims" >> DecomposeClaims(spec)
        local = decomposed.claim_sets | "VerifyLocal" >> VerifyLocal(spec)
        final = local.pending | "VerifyGlobal" >> VerifyGlobal(spec)
        usage = (decomposed.usage, local.usage, final.usage) | "AllUsage" >> beam.Flatten()
        answers = {
            "claim_sets": decomposed.claim_sets, "verdicts": final.verdicts,
            "failed": local.failed, "usage": usage,
        } | "AggregateAnswers" >> AggregateAnswers(self._run)
        dead = (
            (valid.dead_letters, segmented.dead_letters)
            | "DeadLetters" >> beam.Flatten()
            | "DeadLetterRows" >> beam.Map(dead_letter_row)
        )
        return AuditTables(
            answers.answers,
            answers.claims,
            answers.answers | "RatesByRoute" >> RatesByRoute(),
            usage | "CostsByRoute" >> CostsByRoute(),
            dead,
        )


def build(pipeline: beam.Pipeline, config: AuditConfig, run: RunInfo) -> AuditTables:
    """Add the batch audit, from files to Parquet tables, to a pipeline."""
    tables = (
        pipeline
        | "ReadTraces" >> ReadTraces(config.inputs, config.input_format)
        | "Audit" >> Audit(config, run)
    )
    for name, rows in tables._asdict().items():
        rows | f"Write_{name}" >> WriteTable(config.out, name)
    return tables
