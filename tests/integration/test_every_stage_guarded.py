"""Every per-element step of the audit graph is guarded: the test walks the graph the CLI
builds and makes each step fail in turn, so that a new stage cannot escape the guard.

A step of the graph is one of:
- a `GuardedDoFn` (transforms/common/guard.py: its `process` is wrapped when the class is defined),
- a callable made by `guard.guarded` (a FlatMap or a Regroup join),
- a `StorageDoFn` (reads or writes storage: a storage failure fails the run, by design),
- one of the projections listed in PROJECTIONS (a field read off a typed element, or a pass-
  through that catches every exception itself; each says why no data can make it raise).
Anything else fails `test_every_step_of_the_graph_is_guarded`.

The injection runs once per configuration, with one trace per guarded step: step i fails on
the elements of trace i (its id and route carry the marker `gNNx`) through the guard's
`fault_hook` (the in-process runner calls the patched module function). The run must complete,
each step must have failed at least once, and trace i must end as the step's guard says:
a dead letter naming the step's stage, or (inside a fan-out) an incomplete answer naming it.
"""

from __future__ import annotations

import re
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.pipeline import PipelineVisitor

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.run import graph
from rt4chart.transforms.common import guard

from testutil import read_tables, write_jsonl

# Map/FlatMap steps that only read fields of typed elements (or wrap them in a row type).
PROJECTIONS = {
    "KeyById": "keys a validated Trace by its trace_id",
    "KeyByTrace": "keys a SourceSpan by its trace_id",
    "Heads": "takes the item of an (item, parts) pair GuardedParts built",
    "Parts": "flattens the parts tuple GuardedParts built",
    "KeyHeads": "keys a head by the trace_id its stage gave it",
    "KeyParts": "keys a part by its trace_id",
    "FailedAsVerdicts": "wraps a FailedClaim in a ClaimVerdict",
    "DeadLetterRows": "a DeadLetter as a row (dead_letter_row, counted)",
    "ReadDeadLetterRows": "a DeadLetter as a row",
    "RatesByRouteCostsByRouteFaultRows": "a DeadLetter as a row",
    "RouteAlertsFaultRows": "a DeadLetter as a row",
    "NoCapAlerts": "yields nothing whatever the element (an audit without a spend cap)",
    "OversizeRows": "a DeadLetter as a row",
    "Messages": "a Beam PubsubMessage as a Message (its data, attributes and times)",
    "DeadLetterTraffic": "a dead letter row as a Traffic record",
    "KeyRoute": "keys a row by its route",
    "Typed": "the identity, with a key type for the stateful step",
    "KeyRouteModel": "keys a usage record by (route, judge model)",
    "Key": "keys a request by its cache key (a hash of the inputs the stage already read)",
    "OfStage": "compares a cache row's stage",
    "KeyStored": "a cache row's key and result",
    "Rows": "a judge_cache Parquet row as its row type, or a DeadLetter as a row",
    "ExpectCalls": "passes the trace on unchanged; counting its expected calls for the progress "
                   "line is inside a try that catches every exception (progress never fails a "
                   "trace: tests/unit/test_progress.py)",
}
# Callables that read or write storage, as StorageDoFn does.
STORAGE_CALLABLES = {"Match", "TempFolder", "Dicts", "Finalize"}

TEXT = "Tokyo is the capital of Japan. Kyoto was the capital until 1868."


def _marker(i: int) -> str:
    return f"g{i:02d}x"


MARKER = re.compile(r"g(\d{2})x")


def _steps(pipeline: beam.Pipeline) -> list[tuple[str, object]]:
    """(label, step) of every ParDo of the graph whose code is rt4chart's."""
    found = []

    class Visitor(PipelineVisitor):
        def visit_transform(self, node):
            if isinstance(node.transform, beam.ParDo):
                found.append((node.full_label, node.transform.fn))

    pipeline.visit(Visitor())
    out = []
    for label, fn in found:
        inner = _callable_of(fn)
        step = fn if inner is None else inner
        module = getattr(step, "__module__", None) or type(step).__module__
        if module.startswith("rt4chart."):
            out.append((label, step))
    return out


def _callable_of(fn) -> object | None:
    """The user callable of a Map/FlatMap/Filter DoFn (unwrapping Beam's own wrappers)."""
    if not isinstance(fn, beam.transforms.core.CallableWrapperDoFn):
        return None
    inner = fn._fn
    while getattr(inner, "__module__", "").startswith("apache_beam") and inner.__closure__:
        cells = [c.cell_contents for c in inner.__closure__ if callable(c.cell_contents)]
        if not cells:
            break
        inner = cells[0]
    return inner


def _kind(label: str, step: object) -> str:
    if isinstance(step, guard.GuardedDoFn) or callable(getattr(step, "fault", None)):
        return "guarded"
    if isinstance(step, guard.StorageDoFn):
        return "storage"
    name = label.rsplit("/", 1)[-1]
    if name in STORAGE_CALLABLES:
        return "storage"
    if name in PROJECTIONS:
        return "projection"
    return "unguarded"


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _capture_graph(monkeypatch, prepare=None) -> list:
    """Patch graph.build so that each built graph's steps are recorded (and `prepare`d)."""
    graphs: list = []
    original = graph.build

    def build(pipeline, *args, **kwargs):
        tables = original(pipeline, *args, **kwargs)
        steps = _steps(pipeline)
        graphs.append(steps)
        if prepare is not None:
            prepare(steps)
        return tables

    monkeypatch.setattr(graph, "build", build)
    return graphs


def _traces(n: int) -> list[dict]:
    return [{"trace_id": f"trace-{_marker(i)}", "route": f"route-{_marker(i)}",
             # Its own question: each trace's judge calls have their own cache keys.
             "question": f"What is the capital of Japan ({_marker(i)})?", "contexts": [TEXT],
             "answer": TEXT}
            for i in range(n)]


CONFIGS = {
    "prune_claims_per_call": ("--prune-windows", "--claims-per-call", "2"),
    # Every call is in the earlier run's judge_cache: its steps replay (no call is made, so
    # the Call steps, exercised by the other configuration, see no element here).
    "reuse": ("--reuse", "{earlier}"),
}
# NothingRetrieved decides the claims of empty retrievals, which these traces are not (its fault
# is tested in tests/unit/test_empty_retrieval_rules.py).
UNSEEN = {"prune_claims_per_call": ("/NothingRetrieved",),
          "reuse": ("/Judge/Call/", "/NothingRetrieved")}
# A step whose fault is recovered from: a stored answer that cannot be read back is asked
# again (the trace's answer is complete).
RECOVERED = {"reuse"}


def _unguarded(steps) -> list[str]:
    return [label for label, step in steps if _kind(label, step) == "unguarded"]


@pytest.mark.parametrize("input_format", ["json", "otlp"])
def test_every_step_of_the_stream_graph_is_guarded(input_format):
    from apache_beam.options.pipeline_options import PipelineOptions

    from rt4chart.pipeline.run.config import StagesConfig, StreamConfig
    from rt4chart.schemas.records import RunInfo
    from rt4chart.transforms.common.span_mapping import SpanMapping
    from rt4chart.transforms.common.windows import WindowingConfig
    from rt4chart.transforms.judges.contract import JudgeSpec

    stages = StagesConfig(JudgeSpec.of("offline", {}),
                          windowing=WindowingConfig.streaming_default())
    config = StreamConfig("projects/guard-test/subscriptions/traces", stages, out="/tmp/unused",
                          input_format=input_format, spans=SpanMapping())
    pipeline = beam.Pipeline(options=PipelineOptions(flags=[], streaming=True))
    graph.build_stream(pipeline, config, RunInfo("offline", "h"))
    steps = _steps(pipeline)
    assert _unguarded(steps) == []
    names = {type(step).__name__ for _, step in steps}
    assert {"_CheckSizeFn", "_FirstSeenFn", "_CountJoinFn", "_AlertFn"} <= names
    assert input_format != "otlp" or "_AssembleStreamFn" in names


def test_every_step_of_a_span_input_graph_is_guarded(tmp_path, monkeypatch):
    graphs = _capture_graph(monkeypatch)
    example = Path(graph.__file__).parents[1] / "examples" / "spans.otlp.json"
    code = cli.main(["audit", str(example), "--input-format", "otlp", "--judge", "offline",
                     "--out", str(tmp_path / "out")])
    assert code == 0
    (steps,) = graphs
    assert _unguarded(steps) == []
    assert "_AssembleGroupFn" in {type(step).__name__ for _, step in steps}


def _inject(monkeypatch, fired: Path):
    """Patch the guard's hook: step i (its `_fault_index`) fails on trace i's elements, and
    says so in `fired` (a file: a guarded callable is pickled with a copy of the hook)."""

    def hook(step, element):
        index = getattr(step, "_fault_index", None)
        if index is None:
            return
        if index in {int(m) for m in MARKER.findall(repr(element))}:
            with open(fired, "a", encoding="utf-8") as fh:
                fh.write(f"{index}\n")
            raise RuntimeError(f"injected fault {index}")

    monkeypatch.setattr(guard, "fault_hook", hook)


def _stage_of(step) -> str:
    return getattr(step, "stage", None) or getattr(step, "rt4chart_stage", "")


def _ended_as_guarded(tables: dict, marker: str, stage: str, label: str) -> bool:
    """Whether the trace (or route) of `marker` ended as the guard of `stage` says."""
    if stage in RECOVERED:
        return any(marker in a["trace_id"] and a["status"] == "ok" for a in tables["answers"])
    named = [d for d in tables["dead_letters"] if marker in (d["trace_id"] or "")
             or marker in (d["route"] or "")]
    if any(stage in d["stage"] or stage in d["reason"] for d in named):
        return True
    answers = [a for a in tables["answers"] if marker in a["trace_id"]]
    if any(a["status"] == "incomplete" and stage in (a["reason"] or "") for a in answers):
        return True
    # A sink's redaction withholds the failed row's text columns: the row is still written.
    return label.rsplit("/", 1)[-1].startswith("Redact_")


N_TRACES = 40  # more than the guarded steps of any configuration: the rest fail nowhere


@pytest.mark.parametrize("config", list(CONFIGS))
def test_a_fault_in_each_step_dead_letters_its_trace_and_the_run_goes_on(
        tmp_path, monkeypatch, config):
    labels: list[str] = []

    def prepare(steps):  # step i of the graph's guarded steps fails on trace i
        for label, step in steps:
            if _kind(label, step) == "guarded":
                step._fault_index = len(labels)
                labels.append(label)

    fired_file = tmp_path / "fired"
    _inject(monkeypatch, fired_file)
    args = CONFIGS[config]
    if "--reuse" in args:
        earlier = tmp_path / "earlier"
        first = write_jsonl(tmp_path / "first.jsonl", _traces(N_TRACES))
        assert cli.main(["audit", str(first), "--judge", "offline",
                         "--out", str(earlier)]) == 0
        args = tuple(a.format(earlier=earlier) for a in args)
    graphs = _capture_graph(monkeypatch, prepare)
    path = write_jsonl(tmp_path / "t.jsonl", _traces(N_TRACES))
    out = tmp_path / "out"
    # The run goes on (not 1); where a fault hit a judge step, the answers it left incomplete
    # are said by the exit status (3), as a cron job would read it.
    assert cli.main(["audit", str(path), "--judge", "offline", *args,
                     "--out", str(out)]) in (0, 3)
    n = len(labels)
    assert 15 <= n < N_TRACES
    assert _unguarded(graphs[0]) == []
    tables = read_tables(Path(out))
    steps = dict(graphs[0])
    fired = {int(line) for line in fired_file.read_text().split()}
    missed = [labels[i] for i in range(n) if i not in fired]
    # The judge_cache and dead_letters sinks see no row of a marked trace in a clean run.
    assert [m for m in missed if not m.endswith(("Redact_judge_cache", "Redact_dead_letters"))
            and not any(part in m for part in UNSEEN[config])] == []
    wrong = [labels[i] for i in fired
             if not _ended_as_guarded(tables, _marker(i), _stage_of(steps[labels[i]]),
                                      labels[i])]
    assert wrong == []
    clean = {a["trace_id"] for a in tables["answers"] if a["status"] == "ok"}
    assert {f"trace-{_marker(i)}" for i in range(n, N_TRACES)} <= clean


def test_a_fault_in_the_fault_handling_still_ends_as_a_dead_letter():
    class Broken(guard.GuardedDoFn):
        stage = "broken"

        def fault(self, element, reason):
            raise KeyError("no trace here")

        def process(self, element):
            raise ValueError("bad element")

    (out,) = Broken().process({"trace_id": "t1", "route": "r"})
    assert out.tag == "dead"
    letter = out.value
    assert letter.stage == "broken" and letter.trace_id is None
    assert "broken failed: ValueError: bad element" in letter.reason
    assert "then KeyError" in letter.reason and '"trace_id":"t1"' in letter.raw


def test_a_new_dofn_is_guarded_without_doing_anything():
    from rt4chart.schemas.records import Document, Trace

    class NewStep(guard.GuardedDoFn):
        stage = "new_step"

        def process(self, trace):
            yield "an output produced before the fault"
            raise RuntimeError("boom")

    trace = Trace("t9", "r9", 0, "q", (Document("d", "c"),), "a")
    (out,) = NewStep().process(trace)  # the earlier output is held back
    assert out.tag == "dead"
    assert (out.value.stage, out.value.trace_id, out.value.route) == ("new_step", "t9", "r9")
    assert out.value.reason == "new_step failed: RuntimeError: boom"
