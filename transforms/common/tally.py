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

No Beam import beyond the metrics API, no pipeline import: transforms count, the launcher
(`pipeline/run/progress.py`) reads.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from apache_beam.metrics.metric import Metrics

# The variable the folder was once exported in: no process sets it now (the counters carry it).
ENV_DIR = "RT4CHART_LIVE_DIR"
FLUSH_EVERY_S = 0.5


class LiveTally:
    """One process's tally: counts by counter name, thread-safe. A local worker process also
    writes it out (see above) from a thread started with its first count."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._flusher: threading.Thread | None = None
        # (folder, launcher's pid) while this process launches a job (see `recording`)
        self.recording: tuple[str, int] | None = None

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] = self._counts.get(name, 0) + n

    def local(self) -> dict[str, int]:
        """The counts so far."""
        with self._lock:
            return dict(self._counts)

    def write_to(self, launcher: tuple[str, int] | None) -> None:
        """In a local worker process of the launcher `launcher` (its folder and process id),
        write this tally to that folder from now on; in the launcher's own process (or with
        no launcher recording) nothing: the launcher reads it directly."""
        if launcher is None or launcher[1] == os.getpid():
            return
        with self._lock:
            if self._flusher is None or not self._flusher.is_alive():
                # The thread holds the tally: a worker's counts live as long as its process.
                self._flusher = threading.Thread(target=self._flush_often, args=(launcher[0],),
                                                 name="rt4chart-tally", daemon=True)
                self._flusher.start()

    def _flush_often(self, folder: str) -> None:
        written: dict[str, int] = {}
        while os.path.isdir(folder):
            counts = self.local()
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
    """A Beam counter (`namespace:name`) whose increments also go to a process's tally.

    Picklable: it carries `tally_of`, which finds the tally of the process it counts in at its
    first increment (the worker runtime's, see `judges/runtime.py` `counter`), and, pickled
    while its launcher records a job, where that launcher reads the tallies of its local
    worker processes (`LiveTally.recording`)."""

    def __init__(self, namespace: str, name: str, tally_of: Callable[[], LiveTally]):
        self._beam = Metrics.counter(namespace, name)
        self._name = name
        self._tally_of = tally_of
        self._live: LiveTally | None = None
        self._launcher: tuple[str, int] | None = None

    def __getstate__(self) -> dict:
        # A worker counts in its own process's tally, and writes it where the launcher reads.
        return {**self.__dict__, "_live": None,
                "_launcher": self._tally_of().recording or self._launcher}

    def inc(self, n: int = 1) -> None:
        self._beam.inc(n)
        if self._live is None:
            self._live = self._tally_of()
            self._live.write_to(self._launcher)
        self._live.add(self._name, n)


def _worker_files(folder: str) -> Iterator[Mapping[str, int]]:
    for name in os.listdir(folder) if os.path.isdir(folder) else ():
        if name.endswith(".json"):
            try:
                with open(os.path.join(folder, name)) as fh:
                    yield json.load(fh)
            except (OSError, ValueError):  # replaced or removed as we read: skip it this time
                continue


class Tally:
    """The counts of one job, as the launcher reads them: its own process's since the job
    started, plus those its local worker processes wrote to `folder`."""

    def __init__(self, folder: str, live: LiveTally):
        self.folder = folder
        self._live = live  # the process's: its counters count here meanwhile
        self._baseline = self._live.local()

    def snapshot(self) -> dict[str, int]:
        totals = {k: v - self._baseline.get(k, 0) for k, v in self._live.local().items()
                  if v != self._baseline.get(k, 0)}
        for counts in _worker_files(self.folder):
            for k, v in counts.items():
                totals[k] = totals.get(k, 0) + int(v)
        return totals


@contextmanager
def recording(folder: str, live: LiveTally) -> Iterator[Tally]:
    """Count a job started inside: `live` is this process's tally, and its local worker
    processes write theirs to `folder` (an existing, empty local folder, the caller's to
    remove): the counters pickled meanwhile carry it to them (`LiveCounter`)."""
    saved, live.recording = live.recording, (folder, os.getpid())
    try:
        yield Tally(folder, live)
    finally:
        live.recording = saved
