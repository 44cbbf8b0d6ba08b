"""Labelled datasets -> evaluation records (a trace for the auditor, and its gold labels apart).

Three formats:

- ``ragtruth``: the official ``response.jsonl`` + ``source_info.jsonl`` (RAGTruth, Niu et al.
  2024). QA passages become separate documents (``passage1``, ...), a Summary article one
  document (``article``), a Data2txt business record one document (``record``) rendered as
  indented JSON. The answer is ``response`` unchanged, so the gold spans (offsets into
  ``response``) compare directly with the auditor's answer offsets. Only records of the official
  ``test`` split are read (the others are counted as skipped).
- ``ragtruth-plus-plus``: the Blue Guardrails release, ``messages.csv`` and
  ``hallucination_spans.csv`` joined on ``message_stable_id`` (see :func:`load_ragtruth_pp`).
- ``jsonl``: traces in the audit's schema plus ``gold_spans`` (``[{start, end, label}]``,
  label CON or NIC, empty for a faithful answer) and optional ``gold_evidence``
  (``[{doc_id, start, end}]``, document offsets).

Labels: "Evident/Subtle Conflict" -> CON, "Evident/Subtle Baseless Info" -> NIC; an answer with no
span is faithful. ``implicit_true`` spans (true in the world, not supported by the context) stay
unfaithful to the context. The auditor never sees the gold: it is kept out of the traces.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rt4chart.pipeline.eval.datasets import ragtruth_contexts, split_of

FORMATS = ("ragtruth", "ragtruth-plus-plus", "jsonl")
LABELS = ("CON", "NIC")

# RAGTruth label types, and the words that tell a label of another release.
RAGTRUTH_LABELS = {
    "evident conflict": "CON", "subtle conflict": "CON",
    "evident baseless info": "NIC", "subtle baseless info": "NIC",
}
_CON_WORDS = ("conflict", "contradict", "contrary", "incorrect", "wrong")


@dataclass(frozen=True, order=True)
class GoldSpan:
    start: int
    end: int
    label: str  # CON | NIC


@dataclass(frozen=True, order=True)
class GoldEvidence:
    doc_id: str
    start: int
    end: int


@dataclass(frozen=True)
class EvalRecord:
    """One labelled answer: the trace the auditor sees, and the gold it does not."""

    trace: dict
    source_id: str
    task: str
    gold_spans: tuple[GoldSpan, ...] = ()
    gold_evidence: tuple[GoldEvidence, ...] | None = None
    raw_labels: tuple[str, ...] = ()

    @property
    def trace_id(self) -> str:
        return self.trace["trace_id"]

    @property
    def split(self) -> str:
        return split_of(self.source_id)

    @property
    def hallucinated(self) -> bool:
        return bool(self.gold_spans)


@dataclass
class Loaded:
    """The records of a dataset, the files read (with their sha256) and what was skipped."""

    records: list[EvalRecord]
    files: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def map_label(raw: str, label_map: dict[str, str] | None = None) -> str:
    """A gold label as CON or NIC: an explicit map first, then RAGTruth's names, then words.

    A label none of these recognise is NIC ("not supported by the context", the definition of a
    RAGTruth++ span); the report lists the raw labels seen so that this is visible.
    """
    text = str(raw).strip()
    if label_map and text in label_map:
        return label_map[text]
    low = text.lower()
    if low in RAGTRUTH_LABELS:
        return RAGTRUTH_LABELS[low]
    if low.upper() in LABELS:
        return low.upper()
    words = re.findall(r"[a-z]+", low)
    if "con" in words or any(w.startswith(_CON_WORDS) for w in words):
        return "CON"
    return "NIC"


# --- RAGTruth ----------------------------------------------------------------------------------


def _read_jsonl(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def _ragtruth_record(response: dict, source: dict) -> EvalRecord:
    question, contexts = ragtruth_contexts(source)
    labels = response.get("labels") or []
    spans = tuple(sorted(GoldSpan(int(lb["start"]), int(lb["end"]), map_label(lb["label_type"]))
                         for lb in labels))
    task = source["task_type"]
    trace = {
        "trace_id": f"ragtruth-{response['id']}", "route": f"ragtruth/{task.lower()}",
        "question": question, "contexts": contexts, "answer": response["response"],
        "task": task, "generator": response.get("model"),
        "metadata": {"source_id": str(response["source_id"]),
                     "quality": str(response.get("quality", ""))},
    }
    return EvalRecord(trace, str(response["source_id"]), task, spans,
                      raw_labels=tuple(lb["label_type"] for lb in labels))


def load_ragtruth(directory: str | Path, official_split: str = "test") -> Loaded:
    """RAGTruth records of one official split from a directory with the two official files."""
    directory = Path(directory)
    paths = {name: directory / name for name in ("response.jsonl", "source_info.jsonl")}
    for path in paths.values():
        if not path.is_file():
            raise ValueError(f"ragtruth: {path} not found (expected response.jsonl and "
                             "source_info.jsonl in --data)")
    sources = {str(s["source_id"]): s for s in _read_jsonl(paths["source_info.jsonl"])}
    loaded = Loaded([], {n: sha256_file(p) for n, p in paths.items()})
    for response in _read_jsonl(paths["response.jsonl"]):
        if response.get("split", official_split) != official_split:
            loaded.skipped[f"official split {response.get('split')}"] = loaded.skipped.get(
                f"official split {response.get('split')}", 0) + 1
            continue
        source = sources.get(str(response["source_id"]))
        if source is None:
            raise ValueError(f"ragtruth: response {response['id']} has source_id "
                             f"{response['source_id']} absent from source_info.jsonl")
        loaded.records.append(_ragtruth_record(response, source))
    return loaded


# --- JSONL traces with gold ----------------------------------------------------------------------


def _jsonl_record(record: dict, label_map: dict[str, str] | None) -> EvalRecord:
    trace = {k: v for k, v in record.items()
             if k not in ("gold_spans", "gold_evidence", "source_id")}
    if "trace_id" not in trace or "answer" not in trace:
        raise ValueError(f"jsonl: a record needs trace_id and answer: {str(record)[:200]}")
    if "gold_spans" not in record:
        raise ValueError(f"jsonl: trace {trace['trace_id']} has no gold_spans "
                         "(use [] for a faithful answer)")
    spans = tuple(sorted(GoldSpan(int(s["start"]), int(s["end"]), map_label(s["label"], label_map))
                         for s in record["gold_spans"]))
    evidence = record.get("gold_evidence")
    if evidence is not None:
        evidence = tuple(GoldEvidence(str(e["doc_id"]), int(e["start"]), int(e["end"]))
                         for e in evidence)
    metadata = record.get("metadata") or {}
    source = record.get("source_id") or metadata.get("source_id") or trace["trace_id"]
    return EvalRecord(trace, str(source), str(record.get("task") or "none"), spans, evidence,
                      tuple(str(s["label"]) for s in record["gold_spans"]))


def load_jsonl(path: str | Path, label_map: dict[str, str] | None = None) -> Loaded:
    """Traces with `gold_spans` (and optional `gold_evidence`), one JSON object per line.

    The source (for the dev/test split and the bootstrap) is `source_id`, else
    `metadata.source_id`, else the trace_id (each answer its own source).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"jsonl: {path} not found")
    records = [_jsonl_record(r, label_map) for r in _read_jsonl(path)]
    return Loaded(records, {path.name: sha256_file(path)})


# --- RAGTruth++ ------------------------------------------------------------------------------

# Accepted column names, first found wins (the release's names first).
MESSAGE_COLUMNS = {
    "id": ("message_stable_id", "stable_id", "message_id", "id"),
    "thread": ("message_thread_stable_id", "thread_stable_id", "thread_id"),
    "role": ("role",), "position": ("position",), "text": ("text", "content"),
    "meta": ("meta", "metadata"),
    "question": ("question", "query"), "context": ("context", "contexts", "source_info"),
    "answer": ("answer", "response", "output"),
    "task": ("task_type", "task"), "source_id": ("source_id",), "model": ("model",),
}
SPAN_COLUMNS = {
    "message": ("message_stable_id", "message_id"),
    "start": ("start_pos", "start", "char_start", "span_start"),
    "end": ("end_pos", "end", "char_end", "span_end"),
    "label": ("label", "label_type", "type", "hallucination_type"),
}
# RAGTruth's prompt openings, to tell the task when `meta` does not.
_TASK_CUES = (("summarize", "Summary"), ("json format", "Data2txt"),
              ("structured data", "Data2txt"), ("question", "QA"))


def _column(row: dict, names: Iterable[str]) -> str | None:
    for name in names:
        if name in row and row[name] not in (None, ""):
            return row[name]
    return None


def _read_csv(path: Path) -> list[dict]:
    if not path.is_file():
        raise ValueError(f"ragtruth-plus-plus: {path} not found")
    with open(path, encoding="utf-8", newline="") as fh:
        return [{k.strip().lower(): v for k, v in row.items() if k} for row in csv.DictReader(fh)]


def _meta(row: dict) -> dict:
    raw = _column(row, MESSAGE_COLUMNS["meta"])
    try:
        meta = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        return {}
    return meta if isinstance(meta, dict) else {}


def _task(row: dict, meta: dict, prompt: str) -> str:
    task = _column(row, MESSAGE_COLUMNS["task"]) or _column(meta, MESSAGE_COLUMNS["task"])
    if task:
        return str(task)
    low = prompt.lower()
    return next((t for cue, t in _TASK_CUES if cue in low), "none")


def _spans_by_message(rows: list[dict], label_map: dict[str, str] | None) -> dict[str, list]:
    spans: dict[str, list] = {}
    for row in rows:
        message = _column(row, SPAN_COLUMNS["message"])
        start, end = _column(row, SPAN_COLUMNS["start"]), _column(row, SPAN_COLUMNS["end"])
        label = _column(row, SPAN_COLUMNS["label"]) or "hallucination"
        if message is None or start is None or end is None:
            raise ValueError(f"ragtruth-plus-plus: span row lacks message id or offsets: {row}")
        spans.setdefault(str(message), []).append((int(float(start)), int(float(end)), label))
    return spans


def _pp_record(answer_row: dict, prompt_rows: list[dict], spans: list,
               label_map: dict[str, str] | None) -> EvalRecord:
    mid = str(_column(answer_row, MESSAGE_COLUMNS["id"]))
    meta = _meta(answer_row)
    if prompt_rows:  # thread format: the messages before the answer are its context
        question = ""
        contexts = [{"doc_id": f"message{i + 1}", "text": _column(r, MESSAGE_COLUMNS["text"])}
                    for i, r in enumerate(prompt_rows)]
        answer = _column(answer_row, MESSAGE_COLUMNS["text"]) or ""
    else:  # wide format: question, context and answer columns on one row
        question = _column(answer_row, MESSAGE_COLUMNS["question"]) or ""
        contexts = [{"doc_id": "context", "text": _column(answer_row, MESSAGE_COLUMNS["context"])}]
        answer = _column(answer_row, MESSAGE_COLUMNS["answer"]) or ""
    prompt = "\n".join(c["text"] or "" for c in contexts) + question
    task = _task(answer_row, meta, prompt)
    thread = _column(answer_row, MESSAGE_COLUMNS["thread"])
    source = (_column(answer_row, MESSAGE_COLUMNS["source_id"])
              or _column(meta, MESSAGE_COLUMNS["source_id"]) or thread or mid)
    trace = {"trace_id": f"ragtruth-pp-{mid}", "route": f"ragtruth-pp/{task.lower()}",
             "question": question, "contexts": contexts, "answer": answer, "task": task,
             "generator": _column(answer_row, MESSAGE_COLUMNS["model"])
             or _column(meta, MESSAGE_COLUMNS["model"]),
             "metadata": {"source_id": str(source), "message_stable_id": mid}}
    gold = tuple(sorted(GoldSpan(s, e, map_label(lb, label_map)) for s, e, lb in spans))
    return EvalRecord(trace, str(source), task, gold, raw_labels=tuple(lb for *_, lb in spans))


def _threads(rows: list[dict]) -> Iterator[tuple[dict, list[dict]]]:
    """(assistant message, the messages before it in its thread), in thread order."""
    by_thread: dict[str, list[dict]] = {}
    for row in rows:
        by_thread.setdefault(str(_column(row, MESSAGE_COLUMNS["thread"])), []).append(row)
    for thread in by_thread.values():
        thread.sort(key=lambda r: float(_column(r, MESSAGE_COLUMNS["position"]) or 0))
        for i, row in enumerate(thread):
            if str(_column(row, MESSAGE_COLUMNS["role"])).lower() == "assistant":
                yield row, [r for r in thread[:i]
                            if str(_column(r, MESSAGE_COLUMNS["role"])).lower() != "assistant"]


def load_ragtruth_pp(directory: str | Path, label_map: dict[str, str] | None = None) -> Loaded:
    """RAGTruth++ (Blue Guardrails): `messages.csv` + `hallucination_spans.csv`.

    The release's messages are threads (`stable_id, meta, role, position, text,
    message_thread_stable_id`): each assistant message is an answer, and the user (and system)
    messages before it in its thread are its context, one document each (the RAGTruth prompt,
    passages and instructions included; the question is not split out, so `question` is
    empty). A wide file (one row per answer with `question`, `context`, `answer` columns) is
    read too. Spans (`start_pos, end_pos, label, message_stable_id`) are offsets into the
    answer. Task, source and model come from columns of those names, else from `meta` (JSON),
    else the task from the prompt's wording and the source is the thread. Column names are
    matched case-insensitively against the alternatives in MESSAGE_COLUMNS / SPAN_COLUMNS.
    """
    directory = Path(directory)
    paths = {n: directory / n for n in ("messages.csv", "hallucination_spans.csv")}
    messages, span_rows = (_read_csv(p) for p in paths.values())
    spans = _spans_by_message(span_rows, label_map)
    threaded = bool(messages) and "role" in messages[0]
    pairs = _threads(messages) if threaded else ((row, []) for row in messages)
    records = [_pp_record(row, prompt, spans.get(str(_column(row, MESSAGE_COLUMNS["id"])), []),
                          label_map) for row, prompt in pairs]
    known = {r.trace["metadata"]["message_stable_id"] for r in records}
    orphans = sum(len(v) for k, v in spans.items() if k not in known)
    loaded = Loaded(records, {n: sha256_file(p) for n, p in paths.items()})
    if orphans:
        loaded.skipped["spans of no assistant message"] = orphans
    return loaded


def load(dataset: str, path: str | Path, label_map: dict[str, str] | None = None) -> Loaded:
    """The records of a dataset in one of FORMATS."""
    if dataset == "ragtruth":
        return load_ragtruth(path)
    if dataset == "ragtruth-plus-plus":
        return load_ragtruth_pp(path, label_map)
    if dataset == "jsonl":
        return load_jsonl(path, label_map)
    raise ValueError(f"--dataset must be one of {', '.join(FORMATS)}, got {dataset!r}")
