"""Beam's DoFn specs remembered for a run (pipeline/run/dofn_specs.py): the memo answers what
Beam's `get_dofn_specs` answers for any DoFn, keyed on the DoFn's methods (not its class alone,
not its instance), raises what Beam raises every time, stays within its bound, and is in place
only while a run runs (the audit and the local stream), Beam's own function back after."""

from __future__ import annotations

import threading

import apache_beam as beam
import pytest
from apache_beam.coders import VarIntCoder
from apache_beam.runners.direct import transform_evaluator
from apache_beam.testing.test_stream import TestStream
from apache_beam.transforms import userstate
from apache_beam.transforms.core import CallableWrapperDoFn
from apache_beam.transforms.timeutil import TimeDomain
from hypothesis import given, settings
from hypothesis import strategies as st

from rt4chart.pipeline.run import jobs
from rt4chart.pipeline.run.dofn_specs import memo_of, memoized

BEAM_SPECS = userstate.get_dofn_specs
STATES = [userstate.BagStateSpec(f"bag{i}", VarIntCoder()) for i in range(3)]
TIMERS = [userstate.TimerSpec(f"timer{i}", TimeDomain.WATERMARK) for i in range(2)]
PARAMS = ([beam.DoFn.StateParam(s) for s in STATES]
          + [beam.DoFn.TimerParam(t) for t in TIMERS])


class Planted(Exception):
    pass


def _method(name: str, defaults: list) -> object:
    """`def name(self, element, p0=defaults[0], ...)`: a method whose parameters' defaults are
    the given Beam parameters, as a stateful DoFn writes them."""
    params = "".join(f", p{i}" for i in range(len(defaults)))
    namespace: dict = {}
    exec(f"def {name}(self, element{params}):\n    yield element", namespace)  # noqa: S102
    function = namespace[name]
    function.__defaults__ = tuple(defaults) or None
    return function


def _dofn_class(methods: dict[str, list]) -> type:
    return type("Generated", (beam.DoFn,), {name: _method(name, defaults)
                                            for name, defaults in methods.items()})


def _answer(specs, dofn):
    """What `specs` answers for `dofn`: its two sets, or the type of what it raised."""
    try:
        state, timers = specs(dofn)
    except Exception as error:  # noqa: BLE001 - compared with what Beam raises
        return type(error)
    return frozenset(state), frozenset(timers)


METHODS = st.dictionaries(
    st.sampled_from(["process", "on_expiry", "helper", "start_bundle"]),
    st.lists(st.sampled_from(PARAMS), max_size=4),  # a repeat: Beam refuses the DoFn
    max_size=4)


@settings(max_examples=150, deadline=None)
@given(st.lists(METHODS, min_size=1, max_size=4), st.data())
def test_the_memo_answers_what_beam_answers_for_any_dofn(method_sets, data):
    memo = memo_of(BEAM_SPECS)
    classes = [_dofn_class(methods) for methods in method_sets]
    for _ in range(3):  # fresh, remembered, and for other instances of the same classes
        for cls in data.draw(st.permutations(classes)):
            assert _answer(memo, cls()) == _answer(BEAM_SPECS, cls())


def test_an_error_is_raised_every_time_and_never_remembered():
    refused = _dofn_class({"process": [PARAMS[0], PARAMS[0]]})  # one state twice
    memo = memo_of(BEAM_SPECS)
    for _ in range(2):
        with pytest.raises(ValueError, match="duplicate"):
            memo(refused())
    assert memo.cache_len() == 0


def test_one_entry_per_set_of_methods_not_per_instance_or_class():
    memo = memo_of(BEAM_SPECS)
    stateful = _dofn_class({"process": [PARAMS[0]]})
    for _ in range(5):
        assert memo(stateful()) == ({STATES[0]}, set())
    assert memo.cache_len() == 1
    same_methods = type("Other", (stateful,), {})  # a subclass that adds nothing
    assert memo(same_methods()) == ({STATES[0]}, set())
    assert memo.cache_len() == 1
    with_timer = type("WithTimer", (stateful,), {"on_expiry": _method("on_expiry",
                                                                       [PARAMS[-1]])})
    assert memo(with_timer()) == ({STATES[0]}, {TIMERS[-1]})
    assert memo.cache_len() == 2


class _Holder:
    def stateful(self, element, bag=beam.DoFn.StateParam(STATES[1])):
        yield element

    def plain(self, element):
        yield element


def test_a_method_an_instance_holds_counts_as_the_class_methods_do():
    # beam.Map/ParDo of a bound method: the DoFn's `process` is that method (Beam's wrapper).
    memo = memo_of(BEAM_SPECS)
    holder = _Holder()
    stateful, plain = CallableWrapperDoFn(holder.stateful), CallableWrapperDoFn(holder.plain)
    for _ in range(2):
        assert memo(stateful) == BEAM_SPECS(stateful) == ({STATES[1]}, set())
        assert memo(plain) == BEAM_SPECS(plain) == (set(), set())


def test_each_caller_gets_sets_of_its_own():
    memo = memo_of(BEAM_SPECS)
    cls = _dofn_class({"process": [PARAMS[0]], "on_expiry": [PARAMS[-1]]})
    state, timers = memo(cls())
    state.clear()
    timers.add("not a spec")
    assert memo(cls()) == ({STATES[0]}, {TIMERS[-1]})


def test_the_memo_stays_within_its_bound_and_still_answers_right():
    memo = memo_of(BEAM_SPECS, entries=3)
    classes = [_dofn_class({"process": [PARAMS[i]]}) for i in range(5)]
    for _ in range(2):
        for cls in classes:
            assert memo(cls()) == BEAM_SPECS(cls())
            assert memo.cache_len() <= 3
    assert memo.cache_len() == 3


def test_the_memo_answers_many_threads_at_once():
    memo = memo_of(BEAM_SPECS, entries=4)
    classes = [_dofn_class({"process": [PARAMS[i % len(PARAMS)]]}) for i in range(8)]
    wrong = []

    def ask() -> None:
        for _ in range(30):
            for cls in classes:
                if memo(cls()) != BEAM_SPECS(cls()):
                    wrong.append(cls)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not wrong
    assert memo.cache_len() <= 4


def test_in_place_while_the_block_runs_and_beams_own_back_after():
    with memoized() as placed:
        assert placed  # the installed Beam has the function where the memo looks
        assert userstate.get_dofn_specs is transform_evaluator.get_dofn_specs
        assert userstate.get_dofn_specs.rt4chart_memo_of is BEAM_SPECS
    assert userstate.get_dofn_specs is transform_evaluator.get_dofn_specs is BEAM_SPECS


def test_beams_own_is_back_after_a_failure_too():
    with pytest.raises(Planted), memoized():
        raise Planted
    assert userstate.get_dofn_specs is transform_evaluator.get_dofn_specs is BEAM_SPECS


def test_a_second_run_shares_the_memo_in_place_and_leaves_it_to_the_first():
    with memoized() as first:
        memo = userstate.get_dofn_specs
        with memoized() as second:
            assert first and not second
            assert userstate.get_dofn_specs is memo
        assert userstate.get_dofn_specs is memo  # the second left it in place
    assert userstate.get_dofn_specs is BEAM_SPECS


def test_a_host_that_replaced_one_of_the_two_keeps_its_own(monkeypatch):
    def theirs(dofn):
        return BEAM_SPECS(dofn)

    monkeypatch.setattr(transform_evaluator, "get_dofn_specs", theirs)
    with memoized() as placed:
        assert not placed
        assert userstate.get_dofn_specs is BEAM_SPECS
        assert transform_evaluator.get_dofn_specs is theirs
    assert transform_evaluator.get_dofn_specs is theirs


class _CountFn(beam.DoFn):
    """A stateful DoFn with an event-time timer: sums each key's values, emits at the end."""

    BAG = userstate.BagStateSpec("values", VarIntCoder())
    END = userstate.TimerSpec("end", TimeDomain.WATERMARK)

    def process(self, element, bag=beam.DoFn.StateParam(BAG), end=beam.DoFn.TimerParam(END),
                window=beam.DoFn.WindowParam):
        bag.add(element[1])
        end.set(window.end)

    @userstate.on_timer(END)
    def emit(self, bag=beam.DoFn.StateParam(BAG), key=beam.DoFn.KeyParam):
        yield key, sum(bag.read())
        bag.clear()


def _append(element, path: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(f"{element[0]} {element[1]}\n")


def _stream_counts(path) -> list[str]:
    """The counts a streaming TestStream pipeline on the local runner writes (to `path`)."""
    events = (TestStream().advance_watermark_to(0)
              .add_elements([beam.window.TimestampedValue(("a", 1), 1),
                             beam.window.TimestampedValue(("b", 2), 2)])
              .add_elements([beam.window.TimestampedValue(("a", 3), 3)])
              .advance_watermark_to_infinity())
    options = beam.options.pipeline_options.PipelineOptions(streaming=True)
    with beam.Pipeline(runner="BundleBasedDirectRunner", options=options) as pipeline:
        (pipeline | events | beam.WindowInto(beam.window.FixedWindows(60))
         | beam.ParDo(_CountFn()) | beam.Map(_append, str(path)))
    return sorted(path.read_text().splitlines())


def test_the_local_streaming_runner_asks_the_memo_and_gets_the_same_results(tmp_path):
    assert _stream_counts(tmp_path / "beams") == ["a 4", "b 2"]
    with memoized():
        memo = userstate.get_dofn_specs
        assert _stream_counts(tmp_path / "memo") == ["a 4", "b 2"]
        assert memo.cache_len() > 0  # the runner asked it


def test_the_library_audit_runs_with_beams_own_function(monkeypatch):
    seen = []

    def audit_runs(*_args):
        seen.append(getattr(userstate.get_dofn_specs, "rt4chart_memo_of", None))
        raise Planted
        yield  # a generator, as the real one

    monkeypatch.setattr(jobs, "audit_runs", audit_runs)
    with pytest.raises(Planted):
        jobs._run_pipelines(None, None, None, 1.0)
    assert seen == [None]
    assert userstate.get_dofn_specs is BEAM_SPECS


def test_the_library_local_stream_runs_with_beams_own_function(monkeypatch):
    seen = []

    def local_subscription(_config):
        seen.append(getattr(userstate.get_dofn_specs, "rt4chart_memo_of", None))
        raise Planted

    monkeypatch.setattr(jobs, "local_subscription", local_subscription)
    with pytest.raises(Planted):
        jobs._run_local_stream(None, None, None, None, "BundleBasedDirectRunner")
    assert seen == [None]
    assert userstate.get_dofn_specs is BEAM_SPECS



def test_the_command_line_runs_under_the_memo_and_gives_it_back():
    with jobs.cli_process_tuning():
        assert getattr(userstate.get_dofn_specs, "rt4chart_memo_of", None) is BEAM_SPECS
    assert userstate.get_dofn_specs is BEAM_SPECS
