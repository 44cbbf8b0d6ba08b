"""What a running batch audit holds in its run folder: a lock, and its temporary files.

- `FolderLock`: one run at a time per --out. Two runs swapping into one folder would each
  remove the other's files (the last one wins, and both say they succeeded), so a run takes an
  exclusive `fcntl.flock` on the run folder itself (the directory: no lock file, so a refused
  run still leaves the folder byte for byte as it was) before it checks the folder, and keeps
  it until its files are swapped in; a second run fails fast (a usage error) naming the
  holder's process. The operating system releases the lock when the process ends however it
  ends, so a killed run leaves no stale lock. Folders on object stores (gs://) have no such
  lock: there, one run at a time is up to you.
- `run_temp_folder`: the temporary folders of the run's process (Beam's
  `beam-pipeline-temp…` of every pipeline, the progress tally's `rt4chart-live-…`) go under the
  staging folder rather than the system's /tmp, so that a killed run leaves them in the
  staging folder it leaves anyway (named by the next run's warning), not in /tmp; a run that
  ends removes them with its staging folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator

from apache_beam.io.filesystems import FileSystems

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


def _holder(fd: int) -> str:
    """Who holds the flock on `fd`'s file, from /proc/locks (Linux): "pid N", else a phrase."""
    inode = os.fstat(fd).st_ino
    try:
        with open("/proc/locks") as fh:
            for line in fh:
                fields = line.split()  # N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE START END
                if len(fields) > 5 and fields[1] == "FLOCK" and fields[5].endswith(
                        f":{inode}"):
                    return f"pid {fields[4]}"
    except OSError:
        pass
    return "it holds the folder's lock"


@contextlib.contextmanager
def run_temp_folder(staging: str) -> Iterator[None]:
    """The process's temporary files under STAGING/.tmp-run while inside (a local staging
    folder; elsewhere the system's temporary folder stays). TMPDIR is set too, for worker
    processes a runner starts."""
    if FileSystems.get_scheme(staging) is not None:
        yield
        return
    folder = os.path.join(staging, RUN_TEMP)
    os.makedirs(folder, exist_ok=True)
    saved_dir, saved_env = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir, os.environ["TMPDIR"] = folder, folder
    try:
        yield
    finally:
        tempfile.tempdir = saved_dir
        if saved_env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved_env
