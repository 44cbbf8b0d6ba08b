"""The streaming audit under Beam's TestStream: dedupe, dead letters, windows, triggers,
lateness and alerts, deterministic and in process (no Pub/Sub)."""

from __future__ import annotations

import threading
from collections import defaultdict
from datetime import UTC, datetime

import apache_beam as beam
import orjson
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_stream import TestStream
from apache_beam.utils.timestamp import Timestamp

from rt4chart.pipeline.run.config import StagesConfig
from rt4chart.pipeline.run.graph import Audit
from rt4chart.schemas.columns import to_dict
from rt4chart.schemas.records import Message, RunInfo
from rt4chart.schemas.rows import RouteRateRow
from rt4chart.transforms.alerts import AlertConfig, RouteAlerts, check
from rt4chart.transforms.common.windows import WindowingConfig
from rt4chart.transforms.judges.contract import JudgeSpec

BASE = 1_717_200_000  # 2024-06-01T00:00:00Z, the start of a 300 s window
CONTEXT = "The sky is blue today. Grass is green in spring."
RUN = RunInfo("keyword", "test")
SPEC = JudgeSpec.of("fake_judges:keyword", {})

# The bundle-based direct runner, named: the default would first try to download Prism.
STREAMING = PipelineOptions(flags=[], streaming=True, runner="BundleBasedDirectRunner")
_SINK: dict[str, list] = defaultdict(list)
_LOCK = threading.Lock()


class _Collect(beam.DoFn):
    """Gather a PCollection's rows in this process (the direct runner runs in process), as the
    dicts a sink writes."""

    def __init__(self, name: str):
        self._name = name

    def process(self, element):
        with _LOCK:
            _SINK[self._name].append(to_dict(element))


def _iso(offset_s: float) -> str:
    return datetime.fromtimestamp(BASE + offset_s, tz=UTC).isoformat()


def trace(trace_id: str, offset_s: float, answer: str = "The sky is blue today.",
          route: str = "bot") -> dict:
    return {"trace_id": trace_id, "route": route, "timestamp": _iso(offset_s),
            "question": "What colour is the sky?", "contexts": [CONTEXT], "answer": answer}


def message(record: dict | bytes, published_s: float, **attributes: str) -> Message:
    data = record if isinstance(record, bytes) else orjson.dumps(record)
    return Message(data, tuple(sorted(attributes.items())), int((BASE + published_s) * 1e6))


def event(msg: Message) -> beam.window.TimestampedValue:
    return beam.window.TimestampedValue(msg, msg.publish_time_us / 1e6)


def run_stream(stream: TestStream, windowing: WindowingConfig, name: str,
               alerts: AlertConfig | None = None) -> dict[str, list]:
    for key in [k for k in _SINK if k.startswith(name)]:
        del _SINK[key]
    stages = StagesConfig(SPEC, windowing=windowing)
    with beam.Pipeline(options=STREAMING) as p:
        tables = p | stream | Audit(stages, RUN)
        outputs = tables.written()
        if alerts is not None:
            outputs["alerts"] = (tables.route_rates | RouteAlerts(alerts)).alerts
        for table, rows in outputs.items():
            rows | f"Collect_{table}" >> beam.ParDo(_Collect(f"{name}/{table}"))
    return {t: list(_SINK.get(f"{name}/{t}", [])) for t in (*outputs,)}


WINDOWING = WindowingConfig.streaming_default(300, early_firing_s=10, allowed_lateness_s=600)


def test_each_trace_is_audited_once_and_bad_messages_are_dead_lettered():
    stream = (
        TestStream(coder=beam.coders.PickleCoder())
        .add_elements([
            event(message(trace("t1", 1), 2)),
            event(message(trace("t2", 3, "The sky is WRONG today."), 4)),
            # the trace_id and route may come as attributes only
            event(message({k: v for k, v in trace("t3", 5, "MADEUP claims abound.").items()
                           if k not in ("trace_id", "route")}, 6, trace_id="t3", route="faq")),
            event(message(trace("t1", 1), 7)),  # a redelivery of t1
            event(message(b"{not json", 8, trace_id="bad1")),
            event(message({k: v for k, v in trace("bad2", 9).items() if k != "answer"}, 9)),
        ])
        .advance_watermark_to_infinity()
    )
    out = run_stream(stream, WINDOWING, "once")
    answers = {a["trace_id"]: a for a in out["answers"]}
    assert sorted(a["trace_id"] for a in out["answers"]) == ["t1", "t2", "t3"]
    assert {t: a["label"] for t, a in answers.items()} == {"t1": "ENT", "t2": "CON", "t3": "NIC"}
    assert answers["t3"]["route"] == "faq"
    assert not any(a["late"] for a in out["answers"])
    dead = sorted((d["stage"], d["trace_id"], d["reason"]) for d in out["dead_letters"])
    assert [(s, t) for s, t, _ in dead] == [("dedupe", "t1"), ("validate", "bad1"),
                                            ("validate", "bad2")]
    assert "not valid JSON" in dead[1][2] and "'answer'" in dead[2][2]
    assert {d["raw"] for d in out["dead_letters"] if d["trace_id"] == "bad1"} == {"{not json"}
    # Claims stream out with the answers: one per answer sentence here, with evidence for CON.
    claims = {c["trace_id"]: c for c in out["claims"]}
    assert claims["t2"]["label"] == "CON" and claims["t2"]["evidence"][0]["text"].startswith(
        "The sky is blue today")


def _panes(rows: list[dict], route: str = "bot") -> list[tuple]:
    return sorted(
        (r["window_start"].timestamp() - BASE, r["pane_index"], r["pane"], r["traces"],
         r["hallucinated"], r["late"])
        for r in rows if r["route"] == route
    )


def test_rates_fire_early_then_on_time_then_late_and_accumulate():
    stream = (
        TestStream(coder=beam.coders.PickleCoder())
        .advance_watermark_to(BASE)
        .add_elements([event(message(trace("a", 10), 11)),
                       event(message(trace("b", 20, "The sky is WRONG today."), 21))])
        .advance_processing_time(30)  # past the early-firing delay: an EARLY pane
        .add_elements([event(message(trace("c", 40), 41))])
        .advance_watermark_to(BASE + 300)  # the window closes: the ON_TIME pane
        .add_elements([event(message(trace("d", 50, "MADEUP and late."), 400))])  # allowed late
        .advance_watermark_to(BASE + 420)
        .add_elements([event(message(trace("e", 310), 311))])  # the next window
        .advance_watermark_to_infinity()
    )
    out = run_stream(stream, WINDOWING, "panes")
    panes = _panes(out["route_rates"])
    window0 = [p for p in panes if p[0] == 0]
    # Accumulating panes: each firing holds the whole window so far.
    assert window0[0][2] == "EARLY" and window0[0][3:5] == (2, 1)
    on_time = [p for p in window0 if p[2] == "ON_TIME"]
    assert [p[3:] for p in on_time] == [(3, 1, 0)]
    late = [p for p in window0 if p[2] == "LATE"]
    assert late and late[-1][3:] == (4, 2, 1)  # d added as a late trace
    assert [p[1] for p in window0] == list(range(len(window0)))
    assert [p[3:5] for p in panes if p[0] == 300][-1] == (1, 0)
    # Costs come in the same windows and panes.
    costs = [c for c in out["costs"] if c["window_start"].timestamp() == BASE]
    assert max(c["calls"] for c in costs) == 4 * 3  # 1 sentence: decompose, local, global


def test_a_trace_arriving_after_its_window_closed_is_audited_marked_late_and_not_counted():
    stream = (
        TestStream(coder=beam.coders.PickleCoder())
        .advance_watermark_to(BASE)
        .add_elements([event(message(trace("on-time", 10), 11))])
        .advance_watermark_to(BASE + 2000)
        # event time in window [0, 300), published 2000 s later: past the 600 s lateness
        .add_elements([event(message(trace("too-late", 20, "The sky is WRONG."), 2000))])
        .advance_watermark_to_infinity()
    )
    out = run_stream(stream, WINDOWING, "late")
    answers = {a["trace_id"]: a for a in out["answers"]}
    assert answers["too-late"]["late"] is True and answers["too-late"]["label"] == "CON"
    assert answers["on-time"]["late"] is False
    assert {p[3:5] for p in _panes(out["route_rates"])} == {(1, 0)}  # never counts too-late


def test_publish_time_is_the_event_time_when_the_trace_has_none():
    record = trace("nots", 0)
    del record["timestamp"]
    stream = (TestStream(coder=beam.coders.PickleCoder())
              .add_elements([event(message(record, 123))])
              .advance_watermark_to_infinity())
    out = run_stream(stream, WINDOWING, "nots")
    (answer,) = out["answers"]
    assert answer["event_time"].timestamp() == BASE + 123


def _rate(route: str, window: int, hallucinated: int, traces: int,
          pane: int = 0) -> RouteRateRow:
    from rt4chart.transforms.common.joins import wilson

    low, high = wilson(hallucinated, traces)
    start = datetime.fromtimestamp(BASE + 300 * window, tz=UTC)
    return RouteRateRow(
        route=route, window_start=start,
        window_end=datetime.fromtimestamp(BASE + 300 * (window + 1), tz=UTC),
        day=start.strftime("%Y-%m-%d"), pane="EARLY" if pane else "ON_TIME", pane_index=pane,
        emitted_at=start, traces=traces, hallucinated=hallucinated, rate=hallucinated / traces,
        rate_low=low, rate_high=high, con=hallucinated, nic=0, incomplete=0, late=0,
        input_tokens=0, cached_tokens=0, output_tokens=0, cost_usd=0.0,
        sample_trace_ids=tuple(f"{route}-{window}-{i}" for i in range(min(hallucinated, 5))),
        suspicious=0, seen=traces, sampled=traces, always=0, audited=traces, skipped_cap=0,
        dead_lettered=0, rate_weighted=hallucinated / traces, rate_weighted_low=low,
        rate_weighted_high=high)


def test_relative_alert_needs_a_baseline_a_jump_and_enough_traces():
    config = AlertConfig(absolute=None, relative=2.0, min_traces=20, baseline_windows=3)
    history: dict = {}
    alerted: set = set()
    for w in range(3):
        assert check(_rate("r", w, 2, 25), history, alerted, config) == []
    # A jump on too few traces does not alert; one on enough traces does, once per window.
    assert check(_rate("r", 3, 9, 10), history, alerted, config) == []
    history.pop(_rate("r", 3, 0, 1).window_start)
    (alert,) = check(_rate("r", 3, 12, 30), history, alerted, config)
    assert alert.rule == "relative" and alert.baseline == pytest.approx(6 / 75)
    assert alert.threshold == pytest.approx(12 / 75)
    assert alert.sample_trace_ids == tuple(f"r-3-{i}" for i in range(5))
    assert check(_rate("r", 3, 14, 32, pane=1), history, alerted, config) == []
    # Not significantly above the baseline: no alert, even at twice the rate.
    config2 = AlertConfig(absolute=None, relative=1.5, min_traces=5, baseline_windows=3)
    assert check(_rate("q", 0, 5, 50), {}, set(), config2) == []
    h: dict = {}
    check(_rate("q", 0, 5, 50), h, set(), config2)
    assert check(_rate("q", 1, 2, 8), h, set(), config2) == []  # 25% vs 10%, but n=8


def test_absolute_alert_is_published_once_per_route_and_window_through_the_pipeline():
    rows = [_rate("a", 0, 3, 25), _rate("a", 0, 15, 30, pane=1), _rate("a", 0, 16, 31, pane=2),
            _rate("b", 0, 15, 30), _rate("a", 1, 20, 22)]
    stream = TestStream(coder=beam.coders.PickleCoder()).add_elements(
        [beam.window.TimestampedValue(r, r.window_start.timestamp()) for r in rows]
    ).advance_watermark_to_infinity()
    config = AlertConfig(absolute=0.4, relative=None, min_traces=20)
    _SINK.pop("alerts", None)
    with beam.Pipeline(options=STREAMING) as p:
        (p | stream | RouteAlerts(config)).alerts | beam.ParDo(_Collect("alerts"))
    got = sorted((a["route"], a["window_start"].timestamp() - BASE, a["traces"])
                 for a in _SINK["alerts"])
    assert got == [("a", 0, 30), ("a", 300, 22), ("b", 0, 30)]


def test_sliding_windows_and_the_lateness_rule():
    sliding = WindowingConfig.streaming_default(300, period_s=60, allowed_lateness_s=0)
    assert sliding.last_window_end_s(BASE + 61) == BASE + 60 + 300
    assert not sliding.too_late(int((BASE + 61) * 1e6), int((BASE + 360) * 1e6))
    assert sliding.too_late(int((BASE + 61) * 1e6), int((BASE + 361) * 1e6))
    assert not WindowingConfig().too_late(0, 10**18)  # batch: nothing is late
    with pytest.raises(ValueError, match="sliding"):
        WindowingConfig.streaming_default(300, period_s=600)
    assert Timestamp.of(BASE).micros == BASE * 1_000_000
