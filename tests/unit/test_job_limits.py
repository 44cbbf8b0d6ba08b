"""`--rpm`/`--tpm` are the whole job's limits: the static share per worker process, the choice
of limiter, and the held time reported to Beam's ThrottlingSignaler."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.cli import parsers as cli_args
from rt4chart.schemas.records import TraceKey
from rt4chart.transforms.judge_stage import JudgeCallFn
from rt4chart.transforms.judges import runtime
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.limits.throttling import ThrottleClock
from rt4chart.transforms.judges.limits.workers import (
    machine_vcpus,
    share_limits,
    worker_processes,
)
from rt4chart.transforms.judges.openai.judge import OpenAIConfig, OpenAIJudge
from rt4chart.transforms.judges.openai.limits.envoy import EnvoyLimiter
from rt4chart.transforms.judges.openai.limits.rate import RateLimiter

DATAFLOW = ["--runner", "DataflowRunner", "--project", "p", "--region", "r",
            "--temp_location", "gs://b/tmp"]


def _processes(*argv: str) -> int:
    return worker_processes(PipelineOptions(list(argv)))[0]


def test_local_processes():
    assert _processes() == 1
    assert _processes("--direct_num_workers", "3") == 1  # threads share one limiter
    assert _processes("--direct_num_workers", "3", "--direct_running_mode",
                      "multi_processing") == 3


@pytest.mark.parametrize("extra,processes", [
    (["--max_num_workers", "4", "--machine_type", "n2-standard-2"], 8),
    (["--max_num_workers", "4", "--worker_machine_type", "c3-standard-4-lssd"], 16),
    (["--max_num_workers", "4", "--machine_type", "n2-standard-2",
      "--experiments", "no_use_multiple_sdk_containers"], 4),
    (["--max_num_workers", "3", "--machine_type", "custom-6-23040"], 18),
    (["--max_num_workers", "2", "--machine_type", "e2-medium"], 4),
    (["--max_num_workers", "2", "--machine_type", "n1-standard-2",
      "--sdk_worker_parallelism", "4"], 8),
    # Harness threads share their process's limiter: the count does not change.
    (["--max_num_workers", "2", "--machine_type", "n1-standard-2",
      "--number_of_worker_harness_threads", "12"], 4),
    (["--max_num_workers", "5"], 5),  # batch default n1-standard-1
    (["--max_num_workers", "5", "--streaming"], 20),  # streaming: the larger default, 4 vCPUs
    (["--num_workers", "3", "--autoscaling_algorithm", "NONE",
      "--machine_type", "n2-standard-2"], 6),
])
def test_dataflow_processes(extra, processes):
    assert _processes(*DATAFLOW, *extra) == processes


def test_an_unbounded_or_unknown_dataflow_job_is_refused():
    with pytest.raises(ValueError, match="--max_num_workers"):
        _processes(*DATAFLOW, "--num_workers", "3")
    with pytest.raises(ValueError, match="machine type 'gpu-box'"):
        _processes(*DATAFLOW, "--max_num_workers", "2", "--machine_type", "gpu-box")
    assert machine_vcpus("zones/europe-west1-b/machineTypes/n2-highmem-8") == 8


def test_the_share_never_exceeds_the_total_and_is_logged(caplog):
    spec = JudgeSpec.of("openai", {"rpm": "600", "tpm": "400000"})
    options = PipelineOptions(DATAFLOW + ["--max_num_workers", "2", "--machine_type",
                                          "n2-standard-2"])
    with caplog.at_level(logging.INFO, logger="rt4chart"):
        shared = share_limits(spec, options)
    config = OpenAIConfig.from_options(dict(shared.options))
    assert config.rate_share == 4
    assert config.rpm / config.rate_share * 4 <= 600
    assert ("rate limits: 600 rpm / 400000 tpm for the job, 150 rpm / 100000 tpm per process "
            "(4 processes: 2 workers x 2 SDK processes") in caplog.text
    # The limiter each process builds holds its share.
    judge = OpenAIJudge({**dict(shared.options), "base_url": "http://127.0.0.1:9/v1",
                         "model": "gpt-4o-mini"})
    limiter = judge._new_limiter()
    assert (limiter.rpm, limiter.tpm) == (150, 100_000)


def test_throughput_options_pass_through_the_share_untouched():
    # Reservation and prefix-gate options are the judge's too (throughput.py), not its config's.
    spec = JudgeSpec.of("openai", {"rpm": "600", "tpm": "400000", "prefix_gate": "false",
                                   "output_quantile": "0.95"})
    shared = share_limits(spec, PipelineOptions(["--direct_num_workers", "2",
                                                 "--direct_running_mode", "multi_processing"]))
    assert dict(shared.options) == {**dict(spec.options), "rate_share": "2"}


def test_the_envoy_limiter_keeps_the_totals(caplog):
    spec = JudgeSpec.of("openai", {"rpm": "600", "rate_limiter": "envoy",
                                   "rate_limit_service": "127.0.0.1:8081"})
    with caplog.at_level(logging.INFO, logger="rt4chart"):
        assert share_limits(spec, PipelineOptions(DATAFLOW)) == spec  # no --max_num_workers
    assert "600 rpm / 200000 tpm for the job, held by the Envoy rate-limit service" in (
        caplog.text)
    judge = OpenAIJudge({**dict(spec.options), "base_url": "http://127.0.0.1:9/v1"})
    limiter = judge._new_limiter()
    assert isinstance(limiter, EnvoyLimiter) and (limiter.rpm, limiter.tpm) == (600, 200_000)


@pytest.mark.parametrize("options,message", [
    ({"rate_limiter": "envoy"}, "--rate-limit-service"),
    ({"rate_limiter": "envoy", "rate_limit_service": "nowhere"}, "HOST:PORT"),
    ({"rate_limiter": "magic"}, "static or envoy"),
])
def test_bad_limiter_settings_fail_when_the_judge_is_built(options, message):
    with pytest.raises(ValueError, match=message):
        OpenAIJudge({**options, "base_url": "http://127.0.0.1:9/v1"})


def test_cli_flags_become_judge_options():
    args, _ = cli.parser().parse_known_args(
        ["audit", "x.jsonl", "--judge", "openai", "--rate-limiter", "envoy",
         "--rate-limit-service", "10.0.0.5:8081", "--rate_limit_domain", "team-a",
         "--prices", "gs://b/prices.json", "--rpm", "600"])
    options = dict(cli_args.judge_spec(args).options)
    assert options == {"rate_limiter": "envoy", "rate_limit_service": "10.0.0.5:8081",
                       "rate_limit_domain": "team-a", "prices": "gs://b/prices.json",
                       "rpm": "600"}
    args, _ = cli.parser().parse_known_args(["audit", "x.jsonl", "--judge", "offline",
                                             "--rate-limiter", "static"])
    with pytest.raises(ValueError, match="openai judge"):
        cli_args.judge_spec(args)


def test_throttle_clock_hands_out_whole_seconds():
    clock = ThrottleClock()
    clock.add(0.6)
    assert clock.take() == 0
    clock.add(0.6)
    clock.signal_throttled(2)
    assert clock.take() == 3 and clock.take() == 0
    assert clock.total == pytest.approx(3.2)


def test_time_held_by_the_static_limiter_is_counted():
    THROTTLED = ThrottleClock()  # the clock a judge's limiters share

    async def held() -> None:
        limiter = RateLimiter(rpm=6000, tpm=1e9, clock=THROTTLED)
        limiter.pause(0.3)
        await asyncio.gather(*(limiter.acquire(1) for _ in range(3)))

    before = THROTTLED.total
    asyncio.run(held())
    assert THROTTLED.total - before >= 0.85  # three calls held 0.3 s each


@dataclass(frozen=True)
class _Request:
    key: TraceKey


class _HeldCallFn(JudgeCallFn):
    """A judge stage whose calls each wait 0.8 s for the rate limit."""

    stage = "held"

    def call(self, judge, element):
        async def held():
            # The worker's clock, which the stage reports (a judge's limiters count on it).
            clock = runtime.acquire(runtime.runtime_handle()).throttled
            limiter = RateLimiter(rpm=6000, tpm=1e9, clock=clock)
            limiter.pause(0.8)
            await limiter.acquire(1)
            return element.key.trace_id

        return held()

    def on_result(self, element, result, usage):
        yield result

    def on_error(self, element, reason, usage):
        yield f"error: {reason}"


def test_judge_stages_report_held_time_through_beams_throttling_signaler():
    requests = [_Request(TraceKey(f"t{i}", "r", "2024-01-01")) for i in range(4)]
    pipeline = beam.Pipeline(options=PipelineOptions(["--runner", "FnApiRunner"]))
    _ = (pipeline | beam.Create(requests)
         | beam.ParDo(_HeldCallFn(JudgeSpec.of("offline"))).with_outputs("usage", main="out"))
    result = pipeline.run()
    result.wait_until_finish()
    counters = result.metrics().query(
        MetricsFilter().with_namespace("rt4chart").with_name("cumulativeThrottlingSeconds"))
    held = sum(c.committed or c.attempted for c in counters["counters"])
    assert held >= 3  # four calls held 0.8 s each, reported in whole seconds
