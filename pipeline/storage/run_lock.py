"""What a running batch audit holds in its run folder: a lock, and its temporary files.

- `FolderLock`: one run at a time per --out. Two runs swapping into one folder would each
  remove the other's files (the last one wins, and both say they succeeded), so a run takes an
  exclusive `fcntl.flock` on the run folder itself (the directory: no lock file, so a refused
  run still leaves the folder byte for byte as it was) before it checks the folder, and keeps
  it until its files are swapped in; a second run fails fast (a usage error) naming the
  holder's process. The operating system releases the lock when the process ends however it
  ends, so a killed run leaves no stale lock. Folders on object stores (gs://) have no such
  lock: there, one run at a time is up to you.
- `run_temp_folder`: the temporary folders of the run (Beam's `beam-pipeline-temp…` of every
  pipeline, made by `new_pipeline`, the progress tally's `rt4chart-live-…`) go under the
  staging folder rather than the system's /tmp, so that a killed run leaves them in the
  staging folder it leaves anyway (named by the next run's warning), not in /tmp; a run that
  ends removes them with its staging folder. The folder is passed to what makes them, never
  set process-wide (TMPDIR, `tempfile.tempdir`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

RUN_TEMP = ".tmp-run"  # inside the staging folder; ".tmp-" files are never a run's files


class FolderBusyError(FileExistsError):
    """Another rt4chart run holds the run folder's lock."""


class FolderLock:
    """The exclusive lock of a local run folder (see the module's docstring)."""

    def __init__(self, out: str):
        self.out = out
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock (making the folder if need be: RunFolder.abort removes it again if it
        stays empty); FolderBusyError at once if another process holds it."""
        if FileSystems.get_scheme(self.out) is not None or os.path.isfile(self.out):
            return  # object stores: no lock; a file: RunFolder.check refuses it
        os.makedirs(self.out, exist_ok=True)
        fd = os.open(self.out, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise FolderBusyError(
                f"--out {self.out} is in use by another rt4chart run ({holder}); wait for it "
                "to end or choose another --out") from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def lock_holder(out: str) -> str | None:
    """Who holds run folder `out`'s lock ("pid N"), None when no process does, without taking
    it (a reader's shared lock, however short, would make a run starting then fail as busy).
    From /proc/locks (Linux); where that cannot tell (another system, an object store), a
    phrase saying a run may hold it."""
    if FileSystems.get_scheme(out) is not None:
        return "a run may be writing there (object stores have no lock)"
    try:
        fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None  # no folder: nobody holds its lock
    try:
        return _flock_pid(fd)
    except OSError:
        return "a run may hold the folder's lock"
    finally:
        os.close(fd)


def _flock_pid(fd: int) -> str | None:
    """"pid N" of the flock on `fd`'s file in /proc/locks, None without one (OSError when
    /proc/locks cannot be read)."""
    inode = os.fstat(fd).st_ino
    with open("/proc/locks") as fh:
        for line in fh:
            fields = line.split()  # N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE START END
            if len(fields) > 5 and fields[1] == "FLOCK" and fields[5].endswith(f":{inode}"):
                return f"pid {fields[4]}"
    return None


def _holder(fd: int) -> str:
    """Who holds the flock on `fd`'s file, from /proc/locks (Linux): "pid N", else a phrase."""
    try:
        return _flock_pid(fd) or "it holds the folder's lock"
    except OSError:
        return "it holds the folder's lock"


@contextlib.contextmanager
def run_temp_folder(staging: str) -> Iterator[str | None]:
    """STAGING/.tmp-run while inside, for the run's temporary files (a local staging folder;
    elsewhere None: the system's temporary folder serves). Nothing process-wide changes: the
    run passes the folder to what makes temporary files (`new_pipeline`, the progress
    tally's folder)."""
    if FileSystems.get_scheme(staging) is not None:
        yield None
        return
    folder = os.path.join(staging, RUN_TEMP)
    os.makedirs(folder, exist_ok=True)
    yield folder


def run_temp(staging: str) -> str | None:
    """The run's temporary folder under a local staging folder, when the run made it (see
    `run_temp_folder`)."""
    if FileSystems.get_scheme(staging) is not None:
        return None
    folder = os.path.join(staging, RUN_TEMP)
    return folder if os.path.isdir(folder) else None


def new_pipeline(options: PipelineOptions, temp: str | None = None) -> beam.Pipeline:
    """A Beam pipeline whose local temporary folder is in `temp` when given. Beam makes it
    with `tempfile.mkdtemp()` in the system's temporary folder, taking no folder of ours, and
    removes `local_tempdir` when the pipeline has run: so the empty folder it just made is
    swapped for one in `temp`."""
    pipeline = beam.Pipeline(options=options)
    if temp is not None:
        made = pipeline.local_tempdir
        pipeline.local_tempdir = tempfile.mkdtemp(prefix="beam-pipeline-temp", dir=temp)
        with contextlib.suppress(OSError):
            os.rmdir(made)
    return pipeline
