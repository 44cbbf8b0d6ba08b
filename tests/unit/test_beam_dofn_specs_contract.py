"""What the `rt4chart` command's speed-up relies on in Beam (`pipeline/run/dofn_specs.py`), so
that a Beam release that changes it fails here, loudly, instead of the memo going quietly
wrong or quietly away. The pin (`apache-beam>=2.77,<3`) lets every minor release in; the memo
replaces `apache_beam.transforms.userstate.get_dofn_specs`, which Beam marks internal, in the
command's own process only (never through the Python API: test_api_leaves_host_alone.py).

What it relies on:
- the function's signature, `(dofn)`, and its answer, `(set of StateSpec, set of TimerSpec)`;
- that the answer depends on nothing but the DoFn's bound methods in `dir` order (the memo's
  key): the function's body is the one read when the memo was written (its fingerprint below);
- where Beam reads it: through the `userstate` module everywhere but the direct runner's
  evaluators, which import it by name (the two places the memo is put); a module that took its
  own reference would run Beam's own function, unmemoized.

When a new Beam fails here: read the new `get_dofn_specs` and its callers, check the memo's
key against them (dofn_specs.py's docstring), then update KNOWN_BODIES or the module lists.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
from pathlib import Path

import apache_beam as beam
from apache_beam.coders import VarIntCoder
from apache_beam.runners.direct import transform_evaluator
from apache_beam.transforms import userstate
from apache_beam.transforms.timeutil import TimeDomain

from rt4chart.pipeline.run import dofn_specs

# sha256 of `inspect.getsource(userstate.get_dofn_specs)` of the releases checked by hand.
KNOWN_BODIES = {
    "eeb36145d3115aa02ec8d05667f4190084047c5229734d49250d6a950db0e923": "2.78.0",
}
# Beam's modules that import the function by name (each holds its own reference).
BY_NAME = {"apache_beam.runners.direct.transform_evaluator"}

BAG = userstate.BagStateSpec("seen", VarIntCoder())
TIMER = userstate.TimerSpec("flush", TimeDomain.WATERMARK)


class _Stateful(beam.DoFn):
    def __init__(self, note: str = ""):
        self.note = note  # an attribute that is not a method: not part of the answer

    def process(self, element, seen=beam.DoFn.StateParam(BAG),
                flush=beam.DoFn.TimerParam(TIMER)):
        yield element

    @userstate.on_timer(TIMER)
    def on_flush(self):
        return []


def test_the_function_is_where_the_memo_puts_it_with_its_signature():
    assert dofn_specs._beam_modules() is not None, (
        f"Beam {beam.__version__}: get_dofn_specs is no longer in userstate and the direct "
        "runner's evaluators alike; the command runs without its memo")
    assert list(inspect.signature(userstate.get_dofn_specs).parameters) == ["dofn"]


def test_its_body_is_one_checked_by_hand():
    body = inspect.getsource(userstate.get_dofn_specs)
    digest = hashlib.sha256(body.encode()).hexdigest()
    assert digest in KNOWN_BODIES, (
        f"Beam {beam.__version__} changed get_dofn_specs ({digest}): check that its answer "
        "still depends on the DoFn's methods alone (pipeline/run/dofn_specs.py), then add "
        "the digest to KNOWN_BODIES")


def test_its_answer_is_the_specs_of_the_methods_and_nothing_else():
    state, timers = userstate.get_dofn_specs(_Stateful("a"))
    assert (state, timers) == ({BAG}, {TIMER})
    assert isinstance(state, set) and isinstance(timers, set)
    assert userstate.get_dofn_specs(_Stateful("b")) == (state, timers)  # not its attributes
    assert userstate.get_dofn_specs(beam.DoFn()) == (set(), set())
    memo = dofn_specs.memo_of(userstate.get_dofn_specs)
    assert memo(_Stateful("c")) == (state, timers)


def test_beams_callers_read_it_through_the_module(monkeypatch):
    asked = []
    original = userstate.get_dofn_specs

    def spy(dofn):
        asked.append(type(dofn).__name__)
        return original(dofn)

    monkeypatch.setattr(userstate, "get_dofn_specs", spy)
    assert userstate.is_stateful_dofn(_Stateful())
    userstate.validate_stateful_dofn(_Stateful())
    assert asked == ["_Stateful", "_Stateful"]
    assert transform_evaluator.get_dofn_specs is original  # by name: the memo's second place


def _binds_by_name(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.ImportFrom) and any(
        alias.name == "get_dofn_specs" for alias in node.names) for node in ast.walk(tree))


def test_no_other_module_of_beam_holds_its_own_reference():
    root = Path(beam.__file__).parent
    holders = set()
    for path in root.rglob("*.py"):
        if path.name.endswith("_test.py") or "get_dofn_specs" not in path.read_text(
                encoding="utf-8", errors="replace"):
            continue
        if _binds_by_name(path):
            holders.add(".".join(("apache_beam", *path.relative_to(root).with_suffix("").parts)))
    assert holders == BY_NAME, (
        f"Beam {beam.__version__}: modules importing get_dofn_specs by name are {holders}; "
        "the memo replaces it in userstate and the direct runner's evaluators only")
