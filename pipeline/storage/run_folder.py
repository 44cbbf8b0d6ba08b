"""The run folder (--out): a run writes to a staging folder, swapped in only when it succeeded.

No run destroys data. A manifest (`_rt4chart_manifest.json`, read and the folder scanned in
`folder_scan.py`) lists the files a run wrote; only
those are ever removed, and only after the new run has succeeded. A folder that holds files but
no rt4chart run is refused before anything starts; a folder written by an rt4chart without
manifests (table folders of `part-*.parquet` files and its summary.json) is recognised as a run,
and so are the table files a stream (`stream --out`, which writes as it goes and is not staged)
added to a run folder.

The batch job's order of calls:

    folder = RunFolder(out, overwrite)
    folder.check()                  # before the pipeline: refuses early, changes nothing
    ...read what the run needs from `out` (e.g. an earlier run's dead letters for --redo)...
    ...run the pipeline with its sinks under `folder.staging`, write summary.json there...
    folder.commit()                 # on success: the earlier run out, the new one in
    folder.abort()                  # on failure: removes the staging folder, nothing else

Table files may sit in partition folders (OUT/<table>/dt=YYYY-MM-DD/, see tablefiles.py): they
are listed, moved and removed like any file, and the local folders a removal leaves empty go
too. Paths go through Beam's FileSystems, so gs:// works too (a rename there is a copy and a
delete).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime

from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from rt4chart.pipeline.storage.folder_scan import (
    MANIFEST,
    PREVIOUS_PREFIX,
    STAGING_PREFIX,
    FolderState,
    Manifest,
    joined,
    list_files,
    listed_names,
    load_manifest,
    read_head,
    scan,
    top_folder,
)
from rt4chart.pipeline.storage.table_files import is_work_file, salvage_temp_files
from rt4chart.schemas.tables import TABLES

logger = logging.getLogger(__name__)

# The phases of a swap a manifest with complete: false records (see `commit` and `recover`).
PHASE_ASIDE, PHASE_IN, PHASE_FAILED = "moving-earlier-aside", "moving-new-in", "failed"


class ForeignFilesError(FileExistsError):
    """The run folder holds files rt4chart did not write, where a run cannot go."""


def run_folder_path(out: str) -> str:
    """`out` without a trailing slash, absolute when local. A local path is normalised by
    `os.path.abspath` alone: stripping the slash first made `/` the empty name, which abspath
    resolves to the current directory (so `--out /` wrote there)."""
    if FileSystems.get_scheme(out) is not None:
        return out.rstrip("/")
    return os.path.abspath(out) if out else out


def check_out(out: str) -> None:
    """Refuse an --out that is not a folder of the run's own: empty, the file system's root
    or the home folder itself. A run writes table folders there and `--overwrite` removes the
    earlier run's files: that must not happen among a whole disk's or home's files.

    Raises:
        ValueError: naming the folder and why.
    """
    if not out.strip():
        raise ValueError("--out must name a folder, got an empty name")
    if FileSystems.get_scheme(out) is not None:
        return
    real = os.path.realpath(out)
    for name, folder in (("the file system's root", os.sep),
                         ("your home folder", os.path.expanduser("~"))):
        if real == os.path.realpath(folder):
            raise ValueError(f"--out {out} is {name}: a run writes its tables into --out and "
                             "--overwrite removes an earlier run's files there; give a folder "
                             "of its own, e.g. --out rt4chart-out")


def new_run_id() -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


class RunFolder:
    """A run folder (`out`) and the staging folder a new run writes to (`staging`, inside
    `out`). See the module's docstring for the order of calls."""

    def __init__(self, out: str, overwrite: bool = False, run_id: str | None = None):
        self.out = run_folder_path(out)
        self.overwrite = overwrite
        self.run_id = run_id or new_run_id()
        self.staging = FileSystems.join(self.out, f"{STAGING_PREFIX}{self.run_id}")
        self._existed = FileSystems.exists(self.out)

    def check(self) -> FolderState:
        """Refuse a folder a run cannot go to. Raises ForeignFilesError for foreign files (in
        a folder that holds no run, or where a run writes), FileExistsError for an earlier run
        without `overwrite`. Changes nothing, but first finishes or undoes a swap that was cut
        short (`recover`: call it under the folder's lock)."""
        if FileSystems.get_scheme(self.out) is None and os.path.isfile(self.out):
            raise ForeignFilesError(f"--out {self.out} is a file, not a folder")
        recover(self.out)
        state = scan(self.out)
        self._refuse(state)
        stale = _leftover_folders(self.out, state)
        if stale:
            logger.warning("%s holds the staging folders of runs that did not finish: %s (kept; "
                           "delete them when they are of no use)", self.out, ", ".join(stale))
        return state

    def _refuse(self, state: FolderState, new: Iterable[str] = ()) -> None:
        in_the_way = sorted({*state.in_the_way, *set(new).intersection(state.foreign)})
        if in_the_way:
            raise ForeignFilesError(
                f"{self.out} holds files that rt4chart did not write: "
                f"{listed_names(in_the_way)}; a run would write over them or read "
                "them as its own: move them away or choose another --out")
        if state.foreign and not state.is_run:
            raise ForeignFilesError(
                f"{self.out} holds files that rt4chart did not write: "
                f"{listed_names(state.foreign)}; choose an empty or new --out")
        if state.run_files and not self.overwrite:
            raise FileExistsError(
                f"{self.out} already holds an earlier run ({len(state.run_files)} files); pass "
                "--overwrite to replace it once the new run has succeeded, or choose another "
                "--out")

    def staged_files(self, written: Iterable[str] | None = None) -> list[str]:
        """The new run's files, relative to the staging folder: `written` (paths under it, or
        relative), else all files there except what a write cut short left behind."""
        prefix = self.staging + "/"
        if written is None:
            rels = list_files(self.staging)
        else:
            rels = sorted(w[len(prefix):] if w.startswith(prefix) else w for w in written)
        return [r for r in rels if not r.startswith(MANIFEST) and not is_work_file(r)]

    def commit(self, written: Iterable[str] | None = None) -> Manifest:
        """Swap the staged run in, so that a kill at any moment loses neither run: the earlier
        run's files are moved aside (into OUT/.previous-RUN_ID, with its manifest), the new
        files moved in, the manifest written, and only then the earlier run deleted. While it
        goes on, the manifest says complete: false and which phase it is in, so that
        `recover` (the next run's `check`) puts the earlier run back or finishes the new one.
        Foreign files are left where they are. Raises (and keeps the staging folder) if the
        folder changed so that the run cannot go there."""
        new = self.staged_files(written)
        state = scan(self.out)
        self._refuse(state, new)
        old = list(state.run_files)
        aside = f"{PREVIOUS_PREFIX}{self.run_id}"
        if old:
            if state.manifest is not None:  # the earlier run's own, to put back on an undo
                _copy_bytes(joined(self.out, MANIFEST), joined(self.out, f"{aside}/{MANIFEST}"))
            self._write_manifest(self._journal(new, PHASE_ASIDE, aside))
            logger.info("moving the %d files of the earlier run in %s aside", len(old),
                        self.out)
            for rel in old:
                _move(joined(self.out, rel), joined(self.out, f"{aside}/{rel}"))
            _remove_empty_folders(self.out, old)
        self._write_manifest(self._journal(new, PHASE_IN, aside))
        for rel in new:
            _move(joined(self.staging, rel), joined(self.out, rel))
        manifest = Manifest(self.run_id, tuple(new))
        self._write_manifest(manifest)
        _remove_tree(joined(self.out, aside))
        _remove_tree(self.staging)
        return manifest

    def _journal(self, new: list[str], phase: str, aside: str) -> Manifest:
        return Manifest(self.run_id, tuple(new), complete=False, phase=phase, aside=aside)

    def keep_failed(self) -> str | None:
        """After a run failed: keep what it completed (never remove the run folder). In a run
        folder without an earlier run, the tables the run wrote move in under a manifest that
        says complete: false (phase "failed"): readable (readers warn) and `--redo`-able.
        Beside an earlier run, they stay in the staging folder (the earlier run untouched).
        Without any table written, this is `abort`. Where they are, or None."""
        _remove_tree(joined(self.staging, ".tmp-run"))  # the process's temporary files
        for table in TABLES:  # the whole files of tables whose write did not finish
            salvage_temp_files(joined(self.staging, table), table)
        new = [f for f in self.staged_files() if top_folder(f) in TABLES]
        if not new:
            self.abort()
            return None
        state = scan(self.out)
        if state.run_files or state.in_the_way or set(new).intersection(state.foreign):
            logger.warning("the run failed; the tables it completed are kept in %s (the "
                           "earlier run in %s is untouched)", self.staging, self.out)
            return self.staging
        kept = self.staged_files()
        for rel in kept:
            _move(joined(self.staging, rel), joined(self.out, rel))
        self._write_manifest(Manifest(self.run_id, tuple(kept), complete=False,
                                      phase=PHASE_FAILED))
        _remove_tree(self.staging)
        logger.warning("the run failed; the tables it completed are kept in %s, marked "
                       "incomplete (`audit --redo %s` redoes what they hold as failed; traces "
                       "they do not hold need a new run)", self.out, self.out)
        return self.out

    def abort(self) -> None:
        """Remove the staging folder (nothing else); and the run folder if this run made it
        and it is empty."""
        _remove_tree(self.staging)
        if (not self._existed and FileSystems.get_scheme(self.out) is None
                and os.path.isdir(self.out) and not os.listdir(self.out)):
            os.rmdir(self.out)

    def _write_manifest(self, manifest: Manifest) -> None:
        temp = joined(self.staging, f"{MANIFEST}.tmp")
        with FileSystems.create(temp) as fh:
            fh.write(manifest.dumps())
        _move(temp, joined(self.out, MANIFEST))


def _manifest_at(out: str) -> Manifest | None:
    """The manifest of run folder `out`, None without one (or with one rt4chart cannot read)."""
    try:
        there = FileSystems.exists(joined(out, MANIFEST))
    except (OSError, BeamIOError, ValueError):
        return None
    return load_manifest(out, [MANIFEST] if there else [])


def recover(out: str) -> str | None:
    """Finish or undo a swap that was cut short (a kill during `commit`), as its manifest's
    phase says: while the earlier run was being moved aside, put it back (the new run stays
    in its staging folder); once the new run was being moved in, finish moving it in. What was
    done, or None. Call it holding the folder's lock (`check` does)."""
    manifest = _manifest_at(out)
    if manifest is None or manifest.complete or manifest.phase not in (PHASE_ASIDE, PHASE_IN):
        return None
    aside = joined(out, manifest.aside or f"{PREVIOUS_PREFIX}{manifest.run_id}")
    staging = joined(out, f"{STAGING_PREFIX}{manifest.run_id}")
    if manifest.phase == PHASE_ASIDE:
        for rel in list_files(aside):
            if rel != MANIFEST:
                _move(joined(aside, rel), joined(out, rel))
        if FileSystems.exists(joined(aside, MANIFEST)):
            _move(joined(aside, MANIFEST), joined(out, MANIFEST))
        else:  # the earlier run had no manifest (an older rt4chart's)
            FileSystems.delete([joined(out, MANIFEST)])
        _remove_tree(aside)
        done = (f"the swap of run {manifest.run_id} was cut short: the earlier run is back in "
                f"{out}; the new run's files stay in {staging}")
    else:
        for rel in manifest.files:
            if FileSystems.exists(joined(staging, rel)):
                _move(joined(staging, rel), joined(out, rel))
        final = Manifest(manifest.run_id, manifest.files, manifest.version, manifest.created_at)
        _copy_text(final.dumps(), joined(out, MANIFEST))
        _remove_tree(aside)
        _remove_tree(staging)
        done = (f"the swap of run {manifest.run_id} was cut short after the earlier run was "
                f"set aside: its moving in is finished in {out}")
    logger.warning("%s", done)
    return done


def incomplete_message(out: str) -> tuple[str, bool] | None:
    """What a reader of run folder `out` (report, eval, export, annotate) must say about a
    manifest with complete: false, and whether it must refuse to read it (a swap cut short:
    two runs mixed); None when it is complete (or there is none)."""
    manifest = _manifest_at(out.rstrip("/"))
    if manifest is None or manifest.complete:
        return None
    if manifest.phase == PHASE_FAILED:
        return (f"{out} holds what a failed run ({manifest.run_id}) completed: its tables are "
                "incomplete (traces it did not finish are missing), and it has no summary"), False
    return (f"{out} holds a run cut short while it was being swapped in ({manifest.run_id}, "
            "manifest complete: false): it mixes the earlier run and the new one; the next "
            f"`rt4chart audit --out {out}` puts the earlier run back or finishes the new one "
            "before anything else"), True


def _leftover_folders(out: str, state: FolderState) -> list[str]:
    """The staging and set-aside folders of runs that did not finish, empty ones included."""
    found = {top_folder(f) for f in state.kept if top_folder(f).startswith((STAGING_PREFIX,
                                                                 PREVIOUS_PREFIX))}
    if FileSystems.get_scheme(out) is None and os.path.isdir(out):
        found.update(n for n in os.listdir(out) if n.startswith((STAGING_PREFIX,
                                                                  PREVIOUS_PREFIX))
                     and os.path.isdir(os.path.join(out, n)))
    return sorted(found)


def _copy_bytes(source: str, destination: str) -> None:
    data = read_head(source)
    if data is not None:
        _copy_text(data, destination)


def _copy_text(data: bytes, destination: str) -> None:
    """Write `data` to `destination` whole: a temporary file renamed over it."""
    temp = f"{destination}.tmp"
    parent = destination.rsplit("/", 1)[0]
    if FileSystems.get_scheme(parent) is None and not os.path.isdir(parent):
        FileSystems.mkdirs(parent)
    with FileSystems.create(temp) as fh:
        fh.write(data)
    _move(temp, destination)


def _move(source: str, destination: str) -> None:
    """Rename a file (over an existing one), by copy and delete where rename fails."""
    parent = destination.rsplit("/", 1)[0]
    if FileSystems.get_scheme(parent) is None and not os.path.isdir(parent):
        FileSystems.mkdirs(parent)
    try:
        FileSystems.rename([source], [destination])
    except BeamIOError:
        FileSystems.copy([source], [destination])
        FileSystems.delete([source])


def _remove_empty_folders(out: str, removed: Iterable[str]) -> None:
    """The local folders (partition folders, table folders) that removing files left empty."""
    if FileSystems.get_scheme(out) is not None:
        return  # object stores have no folders
    parents = {os.path.dirname(joined(out, rel)) for rel in removed if "/" in rel}
    for folder in sorted(parents, key=len, reverse=True):
        while folder.startswith(out + os.sep) and os.path.isdir(folder) and not os.listdir(
                folder):
            os.rmdir(folder)
            folder = os.path.dirname(folder)


def _remove_tree(folder: str) -> None:
    files = [joined(folder, f) for f in list_files(folder)]
    if files:
        FileSystems.delete(files)
    if FileSystems.get_scheme(folder) is None and os.path.isdir(folder):
        FileSystems.delete([folder])  # the empty local folders left
