"""Readers see one run: a run folder read whole between two swaps, or read again.

A batch run swaps its files into its folder when it ends (`RunFolder.commit`): the earlier run's
files aside, the new ones in, the manifest rewritten at each step. A reader (`report`, `gate`,
`export`, `annotate`, `rt4chart.open_run`) that read one table before an `--overwrite` swapped
in and the next after it showed one run's answers beside the other run's claims, and said
nothing.

The writer's lock (`run_lock.FolderLock`) cannot serve readers: a run holds it from its start
to its end, hours for a large audit, while the earlier run stays whole and readable until the
swap; and object stores (gs://) have no lock. So a reader pins the folder's *generation* (its
manifest, byte for byte, with the manifest file's identity: a manifest put back by `recover` is
a new file, so a swap undone is not taken for no swap), reads, and compares the generation
after: the same, and what it read is one run's; changed, it reads again, up to `attempts`
times, then refuses (`RunChangedError`, which the CLI reports as a usage error, exit 2). A swap
under way when it pins (a manifest with complete: false mid-swap) is waited for while the
folder's lock is held, up to `swap_wait_s`; one cut short (no run holds the lock) is refused at
once, as it mixes two runs until the next run's `recover`.

Call it with the whole read as a function of no arguments:

    answers = read_one_run(out, lambda: read_table(out, "answers").to_pylist())

A BigQuery dataset (`bq:`) is read as it is: its tables are written in place.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from rt4chart.pipeline.storage.folder_scan import MANIFEST, Manifest
from rt4chart.pipeline.storage.run_folder import PHASE_ASIDE, PHASE_IN, incomplete_message
from rt4chart.pipeline.storage.run_lock import lock_holder

logger = logging.getLogger(__name__)

T = TypeVar("T")
ATTEMPTS = 3
SWAP_WAIT_S = 60.0  # a swap moves files (copies them on object stores): seconds, not hours
_POLL_S = 0.2


class RunChangedError(ValueError):
    """A run folder changed (a run was swapped in) while it was read, at every attempt, or holds
    a swap cut short: what was read would mix two runs."""


@dataclass(frozen=True)
class Generation:
    """What a run folder's manifest was at one moment: its bytes (None: no manifest) and the
    file's identity (inode, modification time and size locally; size and time elsewhere)."""

    data: bytes | None
    identity: tuple

    def manifest(self) -> Manifest | None:
        try:
            return Manifest.loads(self.data) if self.data is not None else None
        except ValueError:
            return None

    def mid_swap(self) -> bool:
        manifest = self.manifest()
        return manifest is not None and not manifest.complete and manifest.phase in (
            PHASE_ASIDE, PHASE_IN)

    def run_id(self) -> str:
        manifest = self.manifest()
        return manifest.run_id if manifest is not None else "(no manifest)"


def generation(out: str) -> Generation:
    """The run folder's generation now (see the module's docstring)."""
    path = FileSystems.join(out.rstrip("/"), MANIFEST)
    if FileSystems.get_scheme(path) is None:
        try:
            with open(path, "rb") as fh:  # the identity of the very file read
                stat = os.fstat(fh.fileno())
                return Generation(fh.read(), (stat.st_ino, stat.st_mtime_ns, stat.st_size))
        except FileNotFoundError:
            return Generation(None, ())
        except OSError as exc:  # unreadable (a file where the folder should be, permissions)
            return Generation(None, (type(exc).__name__,))
    try:
        found = FileSystems.match([path])[0].metadata_list
        if not found:
            return Generation(None, ())
        identity = (found[0].size_in_bytes, found[0].last_updated_in_seconds)
        with FileSystems.open(path) as fh:
            return Generation(fh.read(), identity)
    except (OSError, BeamIOError):
        return Generation(None, ("unreadable",))


def _settled(out: str, swap_wait_s: float) -> Generation:
    """The generation once no swap is under way; RunChangedError for a swap cut short, or
    one still under way after `swap_wait_s`."""
    deadline = time.monotonic() + swap_wait_s
    pinned = generation(out)
    while pinned.mid_swap():
        found = incomplete_message(out)
        reason = found[0] if found else f"{out} is being swapped in"
        if lock_holder(out) is None:  # no run is swapping it in: cut short
            raise RunChangedError(reason)
        if time.monotonic() >= deadline:
            raise RunChangedError(f"{reason}; still under way after {swap_wait_s:.0f} s: read "
                                  "it again when the run has ended")
        time.sleep(_POLL_S)
        pinned = generation(out)
    return pinned


def read_one_run(out: str, read: Callable[[], T], attempts: int = ATTEMPTS,
                 swap_wait_s: float = SWAP_WAIT_S) -> T:
    """`read()`, which reads run folder `out`, run so that all it read comes from one run:
    between two looks at the folder's generation that agree (see the module's docstring).

    Raises:
        RunChangedError: the folder changed during each of `attempts` reads, or holds a swap
            cut short (or one still under way after `swap_wait_s`).
    """
    if out.startswith("bq:"):
        return read()
    seen: list[str] = []
    for _ in range(attempts):
        pinned = _settled(out, swap_wait_s)
        try:
            value = read()
        except Exception:
            if generation(out) == pinned:
                raise  # not the swap's doing
            seen.append(pinned.run_id())
            continue
        after = generation(out)
        if after == pinned:
            return value
        seen.append(pinned.run_id())
        logger.warning("%s changed while it was read (run %s, then %s): reading it again",
                       out, pinned.run_id(), after.run_id())
    raise RunChangedError(
        f"{out} changed while it was read, {attempts} times (runs {', '.join(seen)} were "
        "swapped out by newer ones): another run is writing there; read it when it has ended")
