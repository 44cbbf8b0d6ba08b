"""Labelled datasets converted to traces: RAGTruth (official `response.jsonl` +
`source_info.jsonl` format).

QA passages become separate documents, a Summary article one document, a Data2txt business
record one document rendered as indented JSON. Gold labels ride along in `metadata` (as strings)
for evaluation; the auditor does not read them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

_PASSAGE_RE = re.compile(r"passage \d+:")


def split_of(source_id: str) -> str:
    """The fixed part of a source: "dev" (tuning, thresholds) or "test" (reporting).

    Whole sources go to one part (all answers to one question or article together), by a hash
    of the source id, so the split is the same on every machine and for every seed.
    """
    return "dev" if hashlib.sha256(str(source_id).encode()).digest()[0] % 2 == 0 else "test"


def ragtruth_contexts(source: dict) -> tuple[str, list[dict]]:
    """(question, contexts) of a RAGTruth source: QA passages as separate documents, a Summary
    article as one, a Data2txt record as one document of indented JSON."""
    task, info = source["task_type"], source["source_info"]
    if task == "QA":
        parts = [p.strip() for p in _PASSAGE_RE.split(info["passages"]) if p.strip()]
        return info["question"], [{"doc_id": f"passage{i + 1}", "text": p}
                                  for i, p in enumerate(parts)]
    if task == "Summary":
        return "", [{"doc_id": "article", "text": info}]
    return "", [{"doc_id": "record", "text": json.dumps(info, indent=2, ensure_ascii=False)}]


def ragtruth_traces(directory: str | Path) -> Iterator[dict]:
    """Traces from a RAGTruth directory holding response.jsonl and source_info.jsonl."""
    directory = Path(directory)
    sources = {}
    with open(directory / "source_info.jsonl", encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            sources[record["source_id"]] = record
    with open(directory / "response.jsonl", encoding="utf-8") as fh:
        for line in fh:
            response = json.loads(line)
            source = sources[response["source_id"]]
            question, contexts = ragtruth_contexts(source)
            labels = response.get("labels") or []
            yield {
                "trace_id": f"ragtruth-{response['id']}",
                "route": f"ragtruth/{source['task_type'].lower()}",
                "question": question, "contexts": contexts, "answer": response["response"],
                "task": source["task_type"], "generator": response.get("model"),
                "metadata": {"source_id": str(response["source_id"]),
                             "gold_hallucinated": str(bool(labels)).lower(),
                             "gold_labels": ",".join(sorted({lb["label_type"] for lb in labels}))},
            }
