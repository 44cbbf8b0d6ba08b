"""What the gate checks of a run before its numbers (`rt4chart gate`, gate.py): that the run
and its baseline are finished runs (not failed, not cut short while being swapped in, not
still being written), and that both were judged by the same judge model with the same prompts.

A run that fails one of these is refused (exit 2): its rates say nothing a build can be passed
on. Each refusal is a `Check` with `refused` set, so that the JUnit file names it too.

Only a local run folder has a manifest and a lock to read: a BigQuery dataset
(`bq:PROJECT:DATASET`) and a stream's folder (`stream --out` writes as it goes, with neither)
are read as they stand.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable

from apache_beam.io.filesystems import FileSystems

from rt4chart.pipeline.gate.checks import Check
from rt4chart.pipeline.storage import run_folder
from rt4chart.pipeline.storage.run_lock import lock_holder

WHOLE = "*"  # the route of run-level checks


def refusal(limit: str, detail: str) -> Check:
    """A run-level check that refuses the gate (exit 2)."""
    return Check(WHOLE, limit, False, detail, refused=True)


def _being_written(folder: str) -> bool:
    """Whether a running `rt4chart audit` holds the folder's lock (run_lock.FolderLock, an
    exclusive flock on the folder), asked as the readers ask it (`run_lock.lock_holder`:
    without taking the lock, so that a run starting meanwhile is never turned away as busy).
    Where that cannot tell (no /proc/locks), a shared flock taken and dropped at once does."""
    if FileSystems.get_scheme(folder) is not None or not os.path.isdir(folder):
        return False
    holder = lock_holder(folder)
    if holder is None or holder.startswith("pid "):
        return holder is not None
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False  # unreadable: reading its tables fails next, and says so
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the shared lock
    return False


def state_check(source: str, role: str) -> Check | None:
    """A refusal when `source` (the run, or the baseline: `role`) is still being written,
    holds what a failed run completed, or was cut short while being swapped in; None when it
    is a finished run (or cannot say: BigQuery, a stream's folder)."""
    if source.startswith("bq:"):
        return None
    limit = f"{role} state"
    if _being_written(run_folder.run_folder_path(source)):
        return refusal(limit, f"the {role} {source} is still being written: an rt4chart audit "
                              "holds its folder's lock; gate it once the audit has ended")
    found = run_folder.incomplete_message(source)
    if found is None:
        return None
    return refusal(limit, f"the {role} is not a finished run: {found[0]}")


def judges(answers: Iterable[dict]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The judge models and prompt hashes of answer rows (sorted, distinct)."""
    rows = list(answers)
    return (tuple(sorted({r["judge_model"] for r in rows})),
            tuple(sorted({r["prompt_hash"] for r in rows})))


def _named(what: str, values: tuple[str, ...]) -> str:
    return f"{what}{'s' if len(values) > 1 else ''} {', '.join(values) or 'none'}"


def judge_check(run: Iterable[dict], baseline: Iterable[dict], across: bool) -> Check | None:
    """A refusal when the run and its baseline were judged by other judge models or prompt
    hashes (rates of two judges are not one measure), unless `across` (--across-judges); None
    when they were judged alike."""
    (models, hashes), (base_models, base_hashes) = judges(run), judges(baseline)
    if (models, hashes) == (base_models, base_hashes):
        return None
    what = [w for w, same in (("judge model", models == base_models),
                              ("prompt hash", hashes == base_hashes)) if not same]
    detail = (f"the run was judged by {_named('judge model', models)} with "
              f"{_named('prompt hash', hashes)}, the baseline by "
              f"{_named('judge model', base_models)} with {_named('prompt hash', base_hashes)}: "
              f"another {' and '.join(what)}, so the two rates are not one measure")
    if across:
        return Check(WHOLE, "baseline judge", True, f"{detail} (compared all the same: "
                     "--across-judges)")
    return refusal("baseline judge", f"{detail}; audit the baseline again with the "
                   "run's judge, or pass --across-judges to compare them anyway")
