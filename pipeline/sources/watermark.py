"""The watermark of incremental Phoenix reads (`audit --input-format phoenix-api --watermark`).

A phoenix-api run writes what it read to `OUT/_phoenix/read.json`, in its staging folder: the
file reaches OUT with the tables when the run succeeds, and goes with the staging folder when
it fails, so a failed run never moves the watermark. The watermark is the start time of the
newest root span the run read (Phoenix filters and orders spans by start time only, so a
window on end times cannot be asked of it) and the trace ids whose root started at exactly that
time. The next `--watermark` run into the same OUT reads the roots that start at or after that
time, less those trace ids: each trace once, in start order. A run that reads nothing keeps the
watermark it started from.

A trace whose root span reaches Phoenix after a run read a root that started later is not read
by the next run (the watermark has passed it); give `--until` a few minutes before now, longer
than the traces' ingestion delay, to leave such traces for the next run.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson
from apache_beam.io.filesystems import FileSystems

from rt4chart.transforms.common import rfc3339

SPANS_FILE = "_phoenix/spans.jsonl"
READ_RECORD = "_phoenix/read.json"
MAX_READ_BYTES = 1 << 20


@dataclass(frozen=True)
class Watermark:
    """Where the last successful read stopped: its newest root span's start (Phoenix's text
    and nanoseconds) and the traces whose root started then."""

    start_time: str
    start_ns: int
    trace_ids: tuple[str, ...]

    def covers(self, trace_id: str, start_ns: int) -> bool:
        """Whether a root the window returns was read by the last run (at the watermark's
        very time; earlier roots are outside the window)."""
        return start_ns < self.start_ns or (start_ns == self.start_ns
                                            and trace_id in self.trace_ids)

    def record(self) -> dict:
        return {"start_time": self.start_time, "start_ns": self.start_ns,
                "trace_ids": list(self.trace_ids)}


def newest(roots: list[tuple[int, str]], after: Watermark | None) -> Watermark | None:
    """The watermark after reading `roots` ((start ns, trace id), sorted): `after` when none."""
    if not roots:
        return after
    start_ns = roots[-1][0]
    ids = {tid for ns, tid in roots if ns == start_ns}
    if after is not None and after.start_ns == start_ns:
        ids |= set(after.trace_ids)
    return Watermark(rfc3339.format_ns(start_ns), start_ns, tuple(sorted(ids)))


def previous(out: str, endpoint: str, project: str) -> Watermark | None:
    """The watermark of the last successful phoenix-api run into `out`, None when there is
    none (no run yet, or a run that read nothing and had none).

    Raises:
        ValueError: the record is unreadable, or the last run read another project or server
            (its watermark means nothing here).
    """
    path = FileSystems.join(out, READ_RECORD)
    if not FileSystems.exists(path):
        return None
    with FileSystems.open(path) as fh:
        data = fh.read(MAX_READ_BYTES)
    try:
        doc = orjson.loads(data)
        mark = doc["watermark"]
        where = (doc["endpoint"], doc["project"])
        found = None if mark is None else Watermark(
            str(mark["start_time"]), int(mark["start_ns"]),
            tuple(str(t) for t in mark["trace_ids"]))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not a watermark rt4chart wrote ({exc}); move it away to "
                         "read from --since") from None
    if where != (endpoint, project):
        raise ValueError(f"{path}: the last run read project {where[1]!r} at {where[0]}, not "
                         f"{project!r} at {endpoint}: give that run's --phoenix-endpoint and "
                         "--phoenix-project, or another --out")
    return found
