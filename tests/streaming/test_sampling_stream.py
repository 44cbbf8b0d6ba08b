"""A stream replay of the sampling tests' 1,000 traces (TestStream, the whole audit graph)
audits the same traces a batch run does: the decision is the trace's alone."""

from __future__ import annotations

import os
import pickle
import tempfile
from datetime import datetime

import apache_beam as beam
import orjson
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_stream import TestStream
from apache_beam.testing.util import assert_that
from sampled_traces import SAMPLING, expected_ids, sampled_records

from rt4chart.pipeline.run.config import StagesConfig
from rt4chart.pipeline.run.graph import Audit
from rt4chart.schemas.records import (
    Message,
    RunInfo,
)
from rt4chart.transforms.common.windows import WindowingConfig
from rt4chart.transforms.judges.contract import JudgeSpec

RUN = RunInfo("keyword", "test")
SPEC = JudgeSpec.of("fake_judges:keyword", {})
# The bundle-based direct runner, named: the default would first try to download Prism.
STREAMING = PipelineOptions(flags=[], streaming=True, runner="BundleBasedDirectRunner")


def _keep(path: str):
    def keep(items):
        with open(path, "wb") as fh:
            pickle.dump(list(items), fh)
    return keep


def test_a_stream_replay_audits_the_traces_a_batch_run_picks():
    records = sampled_records(1000)
    stamp = [datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00")).timestamp()
             for r in records]
    stream = TestStream(coder=beam.coders.PickleCoder()).add_elements([
        beam.window.TimestampedValue(Message(orjson.dumps(r), (), int(t * 1e6)), t)
        for r, t in zip(records, stamp, strict=True)]).advance_watermark_to_infinity()
    windowing = WindowingConfig.streaming_default(3600, early_firing_s=None,
                                                  allowed_lateness_s=0)
    stages = StagesConfig(SPEC, windowing=windowing, sampling=SAMPLING)
    folder = tempfile.mkdtemp()
    answers, rates = os.path.join(folder, "answers"), os.path.join(folder, "rates")
    with beam.Pipeline(options=STREAMING) as p:
        tables = p | stream | Audit(stages, RUN)
        assert_that(tables.answers | beam.Map(lambda a: a.trace_id), _keep(answers),
                    label="Answers")
        assert_that(tables.route_rates, _keep(rates), label="Rates")
    with open(answers, "rb") as fh:
        audited = pickle.load(fh)
    with open(rates, "rb") as fh:
        rows = pickle.load(fh)
    assert len(audited) == len(set(audited))  # each once
    assert set(audited) == expected_ids(records)
    assert 60 < len(audited) < 160  # ~10% plus the always rule's 20
    # Every trace seen, once, in the windows of its event time; the rule's all audited.
    final = [r for r in rows if r.pane == "ON_TIME"]
    assert sum(r.seen for r in final) == 1000
    assert sum(r.always for r in final) == sum(r["metadata"]["feedback"] == "down"
                                               for r in records)
    assert sum(r.sampled + r.always for r in final) == sum(r.audited for r in final) == len(
        audited)
