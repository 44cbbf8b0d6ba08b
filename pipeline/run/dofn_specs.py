"""Beam's per-bundle look at a DoFn's state and timer parameters, remembered for a run.

The local runners ask `apache_beam.transforms.userstate.get_dofn_specs` which state and timer
parameters a DoFn declares each time they start a bundle, several times a bundle: the direct
runner to schedule it (`should_execute_serially`), to start it (`is_stateful_dofn`) and in the
`DoFnRunner` it builds (`validate_stateful_dofn`, `DoFnSignature`). Each ask wraps every method
of the DoFn and reads its signature with `inspect.signature`; on the local streaming runner,
where a bundle is a trace or a few, this was over half the process's CPU (py-spy on
`rt4chart stream`, docs/benchmarks.md, "Streaming latency"), so that at 2 traces/s the runner
was saturated and a verdict took about 3 s from publish.

The answer depends on nothing but the DoFn's methods: for each name in `dir(dofn)` that is a
bound method, the function behind it (the parameters' defaults carry the specs). `memoized()`
keys it on exactly those (name, function) pairs, so two DoFns with the same methods share one
answer, a DoFn whose class or instance has other methods gets its own, and an error (a DoFn
with a duplicate parameter) is raised every time, never remembered. The memo is bounded (a
DoFn class made anew for each bundle, as cloudpickle makes a class defined in `__main__`, is
not kept without end) and lives in the `memoized()` call, not in this module.

`memoized()` puts the memo in place of Beam's function for the length of a run and puts Beam's
back after, whether the run ends or fails. Where another run of the same process is under way
with its memo in place, that memo is left alone and shared (the first run to end puts Beam's
back; the other runs on without a memo: slower, never wrong). If the installed Beam no longer
has the function where this module looks, or the two places Beam reads it from disagree (the
host replaced one), the run goes on without the memo.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import types
from collections.abc import Callable, Iterator

logger = logging.getLogger(__name__)

MEMO_ENTRIES = 1024  # distinct DoFn method sets remembered; a run's graph has a few hundred


def method_key(dofn: object) -> tuple:
    """What Beam's answer for `dofn` depends on: (name, function) of each bound method, in
    `dir` order, which is the order Beam reads them in."""
    key = []
    for name in dir(dofn):
        method = getattr(dofn, name, None)
        if isinstance(method, types.MethodType):
            key.append((name, method.__func__))
    return tuple(key)


class _Methods:
    """A DoFn as the memo sees it: equal to and hashed as its `method_key`, carrying the DoFn
    only until Beam has been asked about it (a remembered key keeps no DoFn alive)."""

    __slots__ = ("dofn", "key")

    def __init__(self, dofn: object):
        self.dofn, self.key = dofn, method_key(dofn)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Methods) and self.key == other.key


def memo_of(specs: Callable, entries: int = MEMO_ENTRIES) -> Callable:
    """`specs` (Beam's `get_dofn_specs`) remembered per `method_key`, for at most `entries`
    method sets, least recently used out first (`functools.lru_cache`, which remembers no
    error). Each caller gets sets of its own."""

    @functools.lru_cache(maxsize=entries)
    def frozen(methods: _Methods) -> tuple[frozenset, frozenset]:
        dofn, methods.dofn = methods.dofn, None
        state, timers = specs(dofn)
        return frozenset(state), frozenset(timers)

    def dofn_specs(dofn):
        state, timers = frozen(_Methods(dofn))
        return set(state), set(timers)

    dofn_specs.rt4chart_memo_of = specs  # what it remembers; marks it as ours
    dofn_specs.cache_len = lambda: frozen.cache_info().currsize
    return dofn_specs


def _beam_modules() -> tuple[types.ModuleType, types.ModuleType] | None:
    """Beam's `userstate` (whose `is_stateful_dofn` and `validate_stateful_dofn` call
    `get_dofn_specs` through the module) and the direct runner's evaluators (which import it by
    name), if the installed Beam has the function in both, as 2.77 does."""
    try:
        from apache_beam.runners.direct import transform_evaluator
        from apache_beam.transforms import userstate
    except ImportError:
        return None
    original = getattr(userstate, "get_dofn_specs", None)
    if not callable(original) or getattr(transform_evaluator, "get_dofn_specs",
                                         None) is not original:
        return None
    return userstate, transform_evaluator


@contextlib.contextmanager
def memoized(entries: int = MEMO_ENTRIES) -> Iterator[bool]:
    """Beam's `get_dofn_specs` remembered while the block runs (module docstring). Yields
    whether this call put the memo in place."""
    modules = _beam_modules()
    if modules is None:
        logger.debug("Beam's get_dofn_specs is not where it was: running without the memo")
        yield False
        return
    userstate, evaluators = modules
    original = userstate.get_dofn_specs
    if hasattr(original, "rt4chart_memo_of"):  # another run's memo is in place: share it
        yield False
        return
    memo = memo_of(original, entries)
    userstate.get_dofn_specs = evaluators.get_dofn_specs = memo
    try:
        yield True
    finally:
        for module in modules:
            if getattr(module, "get_dofn_specs", None) is memo:
                module.get_dofn_specs = original
