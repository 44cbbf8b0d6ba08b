"""Counters a job's launcher can read while the job runs: a Beam counter and a live tally.

Beam's metrics reach the launcher only when the runner reports them: Dataflow does during a
run, the local FnApiRunner only when `run()` returns. So every progress counter
(`judges.runtime.counter`, a :class:`LiveCounter`) also adds to a tally of the process it runs in:

- DoFns run in the launcher's process (FnApiRunner in memory or multi-threaded, the bundle-based
  direct runner): the launcher reads the tally directly.
- DoFns run in local worker processes (`--direct_running_mode multi_processing`): each writes
  its tally, from a thread every `FLUSH_EVERY_S` when it changed, to a small JSON file in the
  launcher's folder, and the launcher sums the files. The folder travels with the counters:
  a :class:`LiveCounter` pickled while the launcher records (`recording`, which the job's run
  is inside) carries the folder and the launcher's process id, and tells its worker's tally
  at its first increment. The thread ends when the launcher removes the folder.
- Remote workers (Dataflow) have no such folder: their tally stays unread, and the launcher
  reads Beam's metrics instead.

The tally is a :class:`LiveTally` object, one per process, owned by the process's worker
runtime (`judges/runtime.py`, held through Beam's `Shared`: one `Shared` token per pipeline,
as Beam's `_SharedMap` keeps only the last acquired object alive); a test makes its own.

Each run counts apart: a launcher runs its job inside `run_scope()` (a context variable, so a
thread's run is its own), a counter made while the graph is built carries that run's id, and
the tally keeps one set of counts per run id. Two audits at once in two threads of a process
(the Python API's) each read their own figures; a counter made outside any run counts under
None, as one run per process did before.

No Beam import beyond the metrics API, no pipeline import: transforms count, the launcher
(`pipeline/run/progress.py`) reads.
"""

from __future__ import annotations

import contextvars
import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from apache_beam.metrics.metric import Metrics

# The variable the folder was once exported in: no process sets it now (the counters carry it).
ENV_DIR = "RT4CHART_LIVE_DIR"
FLUSH_EVERY_S = 0.5
# The run whose graph this thread builds and whose progress it reads (None: outside any run).
_RUN: contextvars.ContextVar[str | None] = contextvars.ContextVar("rt4chart_run", default=None)


def current_run() -> str | None:
    """The id of the run this thread (or task) is inside, None outside any."""
    return _RUN.get()


@contextmanager
def run_scope() -> Iterator[str]:
    """A run of its own for the block: the counters made inside count apart from any other
    run of the process (see the module's docstring). Yields the run's id."""
    run = uuid.uuid4().hex
    token = _RUN.set(run)
    try:
        yield run
    finally:
        _RUN.reset(token)


class LiveTally:
    """One process's tally: counts by run and counter name, thread-safe. A local worker
    process also writes a run's counts out (see above) from a thread started with its first
    count."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str | None, dict[str, int]] = {}
        self._flushers: dict[str, threading.Thread] = {}
        # run id -> (folder, launcher's pid) while this process launches it (see `recording`)
        self.recordings: dict[str | None, tuple[str, int]] = {}

    @property
    def recording(self) -> tuple[str, int] | None:
        """Where the launcher records the run of this thread, if it does."""
        return self.recordings.get(current_run())

    def add(self, name: str, n: int = 1, run: str | None = None) -> None:
        with self._lock:
            counts = self._counts.setdefault(run, {})
            counts[name] = counts.get(name, 0) + n

    def local(self, run: str | None = None) -> dict[str, int]:
        """The counts of `run` so far (None: those made outside any run)."""
        with self._lock:
            return dict(self._counts.get(run, {}))

    def forget(self, run: str | None) -> None:
        """Drop a run's counts once its launcher has read them (None's are kept)."""
        if run is not None:
            with self._lock:
                self._counts.pop(run, None)

    def write_to(self, launcher: tuple[str, int] | None, run: str | None = None) -> None:
        """In a local worker process of the launcher `launcher` (its folder and process id),
        write the counts of `run` to that folder from now on; in the launcher's own process
        (or with no launcher recording) nothing: the launcher reads it directly."""
        if launcher is None or launcher[1] == os.getpid():
            return
        folder = launcher[0]
        with self._lock:
            flusher = self._flushers.get(folder)
            if flusher is None or not flusher.is_alive():
                # The thread holds the tally: a worker's counts live as long as its process.
                self._flushers[folder] = threading.Thread(
                    target=self._flush_often, args=(folder, run), name="rt4chart-tally",
                    daemon=True)
                self._flushers[folder].start()

    def _flush_often(self, folder: str, run: str | None) -> None:
        written: dict[str, int] = {}
        while os.path.isdir(folder):
            counts = self.local(run)
            if counts != written:
                _flush(folder, counts)
                written = counts
            time.sleep(FLUSH_EVERY_S)


def _flush(folder: str, counts: dict[str, int]) -> None:
    text = json.dumps(counts)
    path = os.path.join(folder, f"{os.getpid()}.json")
    try:
        with open(path + ".tmp", "w") as fh:
            fh.write(text)
        os.replace(path + ".tmp", path)  # a reader sees the old file or the new one, whole
    except OSError:  # the launcher has gone (folder removed): the job's counts are in Beam's
        pass


class LiveCounter:
    """A Beam counter (`namespace:name`) whose increments also go to a process's tally, under
    the run it was made in (`current_run()` when it is made: where the graph is built).

    Picklable: it carries `tally_of`, which finds the tally of the process it counts in at its
    first increment (the worker runtime's, see `judges/runtime.py` `counter`), its run's id,
    and, pickled while its launcher records the run, where that launcher reads the tallies of
    its local worker processes (`LiveTally.recordings`)."""

    def __init__(self, namespace: str, name: str, tally_of: Callable[[], LiveTally]):
        self._beam = Metrics.counter(namespace, name)
        self._name = name
        self._tally_of = tally_of
        self._run = current_run()
        self._live: LiveTally | None = None
        self._launcher: tuple[str, int] | None = None

    def __getstate__(self) -> dict:
        # A worker counts in its own process's tally, and writes it where the launcher reads.
        return {**self.__dict__, "_live": None,
                "_launcher": self._tally_of().recordings.get(self._run) or self._launcher}

    def inc(self, n: int = 1) -> None:
        self._beam.inc(n)
        if self._live is None:
            self._live = self._tally_of()
            self._live.write_to(self._launcher, self._run)
        self._live.add(self._name, n, self._run)


def _worker_files(folder: str) -> Iterator[Mapping[str, int]]:
    for name in os.listdir(folder) if os.path.isdir(folder) else ():
        if name.endswith(".json"):
            try:
                with open(os.path.join(folder, name)) as fh:
                    yield json.load(fh)
            except (OSError, ValueError):  # replaced or removed as we read: skip it this time
                continue


class Tally:
    """The counts of one run, as the launcher reads them: its own process's since the job
    started, plus those its local worker processes wrote to `folder`."""

    def __init__(self, folder: str, live: LiveTally, run: str | None = None):
        self.folder = folder
        self._live = live  # the process's: its counters count here meanwhile
        self._run = run
        self._baseline = self._live.local(run)

    def snapshot(self) -> dict[str, int]:
        counts = self._live.local(self._run)
        totals = {k: v - self._baseline.get(k, 0) for k, v in counts.items()
                  if v != self._baseline.get(k, 0)}
        for counts in _worker_files(self.folder):
            for k, v in counts.items():
                totals[k] = totals.get(k, 0) + int(v)
        return totals


@contextmanager
def recording(folder: str, live: LiveTally) -> Iterator[Tally]:
    """Count the run of this thread (`current_run()`), started inside: `live` is this
    process's tally, and its local worker processes write theirs to `folder` (an existing,
    empty local folder, the caller's to remove): the counters pickled meanwhile carry it to
    them (`LiveCounter`)."""
    run = current_run()
    saved = live.recordings.get(run)
    live.recordings[run] = (folder, os.getpid())
    try:
        yield Tally(folder, live, run)
    finally:
        if saved is None:
            live.recordings.pop(run, None)
        else:
            live.recordings[run] = saved
