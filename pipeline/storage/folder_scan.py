"""What a run folder (--out) holds, read without changing it: the manifest of the run's files
(`Manifest`), and a scan that tells the run's files, rt4chart's kept folders and foreign files
apart (`scan`, `FolderState`). The run's lifecycle (staging, commit, abort, recovery of a swap
that broke off) is `run_folder.py`'s, which refuses a folder on what this finds."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import orjson
from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from rt4chart import __version__
from rt4chart.pipeline.storage.table_files import PARTITION_KEY, is_work_file
from rt4chart.schemas.tables import TABLES

MANIFEST = "_rt4chart_manifest.json"
MANIFEST_FORMAT = 1
SUMMARY = "summary.json"
REDO_INPUT = "_redo/traces.jsonl"
STAGING_PREFIX = ".staging-"
# Where `commit` puts the earlier run's files while the new run's move in (see `commit`).
PREVIOUS_PREFIX = ".previous-"
# rt4chart's, in a run folder, but not a run's output: never removed (the Batch API's
# resumable state, staging folders of runs that did not finish).
KEPT_FOLDERS = ("_batch_state",)
SUMMARY_KEYS = {"judge", "judge_model", "prompt_hash"}
MAX_LISTED = 10


@dataclass(frozen=True)
class Manifest:
    """The files one run wrote (relative to the run folder, '/'-separated). `complete` is False
    while a run is being swapped in: then `files` lists the old run's files and the new's."""

    run_id: str
    files: tuple[str, ...]
    version: str = __version__
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    complete: bool = True
    # While not complete: PHASE_ASIDE or PHASE_IN (a swap under way, or cut short) with the
    # folder the earlier run's files go to (`aside`), or PHASE_FAILED (a failed run's tables).
    phase: str | None = None
    aside: str | None = None

    def dumps(self) -> bytes:
        extra = {"phase": self.phase, "aside": self.aside} if self.phase else {}
        return orjson.dumps({"rt4chart_manifest": MANIFEST_FORMAT, "run_id": self.run_id,
                             "version": self.version, "created_at": self.created_at,
                             "complete": self.complete, "files": list(self.files), **extra},
                            option=orjson.OPT_INDENT_2)

    @classmethod
    def loads(cls, data: bytes) -> Manifest:
        """A manifest's text; ValueError if it is not one rt4chart wrote."""
        try:
            doc = orjson.loads(data)
            if doc["rt4chart_manifest"] != MANIFEST_FORMAT:
                raise ValueError(f"unknown manifest format {doc['rt4chart_manifest']!r}")
            return cls(str(doc["run_id"]), tuple(str(f) for f in doc["files"]),
                       str(doc["version"]), str(doc["created_at"]), bool(doc["complete"]),
                       _text_or_none(doc.get("phase")), _text_or_none(doc.get("aside")))
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"not an rt4chart manifest: {exc}") from exc


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class FolderState:
    """What a run folder holds (paths relative to it), by who wrote it."""

    manifest: Manifest | None
    run_files: tuple[str, ...]  # an earlier run's output: replaced by the next run
    kept: tuple[str, ...]  # rt4chart's but not a run's output: never removed
    foreign: tuple[str, ...]  # files rt4chart did not write: never removed

    @property
    def is_run(self) -> bool:
        return bool(self.manifest or self.run_files or self.kept)

    @property
    def in_the_way(self) -> tuple[str, ...]:
        """Foreign files where a run writes, or that a reader would take for the run's:
        summary.json, the manifest, the redo input, Parquet files in a table folder."""
        return tuple(f for f in self.foreign if f in (SUMMARY, MANIFEST) or f.startswith(
            "_redo/") or (top_folder(f) in TABLES and f.endswith(".parquet")))


def top_folder(rel: str) -> str:
    return rel.split("/", 1)[0]


def joined(base: str, rel: str) -> str:
    return FileSystems.join(base, *rel.split("/"))


def list_files(folder: str) -> list[str]:
    """Every file under `folder`, relative to it, sorted (none if it does not exist)."""
    prefix = folder.rstrip("/") + "/"
    found = (m.path for r in FileSystems.match([prefix + "**"]) for m in r.metadata_list)
    return sorted(p[len(prefix):] for p in found if p.startswith(prefix))


def read_head(path: str, limit: int = 1 << 20) -> bytes | None:
    try:
        with FileSystems.open(path) as fh:
            data = fh.read(limit + 1)
    except (OSError, BeamIOError):
        return None
    return data if len(data) <= limit else None


def _is_our_summary(out: str) -> bool:
    data = read_head(joined(out, SUMMARY))
    try:
        doc = orjson.loads(data) if data is not None else None
    except orjson.JSONDecodeError:
        return False
    return isinstance(doc, dict) and SUMMARY_KEYS <= doc.keys()


def _table_file(name: str) -> bool:
    # A work file here is what a streaming write cut short left (".tmp-part-…").
    return (name.startswith("part-") and name.endswith(".parquet")) or is_work_file(name)


def _unlisted_run_file(rel: str) -> bool:
    """A file an rt4chart without manifests wrote (its summary.json is checked apart), or a
    table file a stream added: OUT/<table>/part-*.parquet (flat, before partition folders) or
    OUT/<table>/dt=YYYY-MM-DD/part-*.parquet."""
    parts = rel.split("/")
    if parts[0] in TABLES and len(parts) == 2:
        return _table_file(parts[1])
    if parts[0] in TABLES and len(parts) == 3 and parts[1].startswith(f"{PARTITION_KEY}="):
        return _table_file(parts[2])
    if parts[0] in TABLES and len(parts) > 2:
        return is_work_file(parts[1])  # a batch write cut short (beam-temp-…/)
    return rel == REDO_INPUT


def _kept(rel: str) -> bool:
    top = top_folder(rel)
    return top.startswith((STAGING_PREFIX, PREVIOUS_PREFIX)) or top in KEPT_FOLDERS


def load_manifest(out: str, files: list[str]) -> Manifest | None:
    if MANIFEST not in files:
        return None
    try:
        return Manifest.loads(read_head(joined(out, MANIFEST)) or b"")
    except ValueError:
        return None  # then the file is foreign, and in the way


def scan(out: str) -> FolderState:
    """Sort the files of a run folder into an earlier run's, kept and foreign ones."""
    files = list_files(out)
    manifest = load_manifest(out, files)
    kept = [f for f in files if _kept(f)]
    rest = [f for f in files if not _kept(f) and not (manifest and f == MANIFEST)]
    if manifest is not None:
        # Listed files, and table files a stream added to the run folder (a stream writes
        # as it goes: no manifest lists them).
        listed = set(manifest.files)
        run_files = [f for f in rest if f in listed or _unlisted_run_file(f)]
    else:
        summary = SUMMARY in rest and _is_our_summary(out)
        run_files = [f for f in rest if _unlisted_run_file(f) or (summary and f == SUMMARY)]
    taken = set(run_files)
    return FolderState(manifest, tuple(run_files), tuple(kept),
                       tuple(f for f in rest if f not in taken))


def listed_names(rels: Iterable[str]) -> str:
    rels = list(rels)
    shown = ", ".join(rels[:MAX_LISTED])
    more = f" and {len(rels) - MAX_LISTED} more" if len(rels) > MAX_LISTED else ""
    return f"{shown}{more}"
