"""The ecosystem round trip of issue 25, end to end through the command line: a RAG app's
OpenTelemetry spans, sent to a real Phoenix server and kept as an OTLP JSON file, are audited
from the file with `--annotate phoenix`; the verdicts go to Langfuse too (`annotate langfuse`,
the local server of its documented scores API); the flagged traces are exported as labelled
data and `eval` runs on that export; a reviewer's labels put on the traces in Phoenix are read
back by `eval --gold phoenix:NAME` and compared with the run. Each step is checked against the
run's own tables.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path

import httpx
import pytest
from phoenix.client import Client

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.run import jobs

from langfuse_server import PUBLIC_KEY, SECRET_KEY, LangfuseServer
from phoenix_server import PhoenixServer
from span_export import otlp_request, trace_spans, write_format
from testutil import load_traces, read_tables

INGEST_TIMEOUT_S = 60.0


def _main(*argv: str) -> tuple[int, str]:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = cli.main(list(argv))
    return code, out.getvalue()


def _send(url: str, records: list[dict]) -> int:
    """Each record's spans as one OTLP protobuf request to Phoenix; how many spans."""
    count = 0
    for record in records:
        spans = trace_spans(record)
        response = httpx.post(
            f"{url}/v1/traces",
            content=otlp_request(spans, record.get("route", "default")).SerializeToString(),
            headers={"content-type": "application/x-protobuf"}, timeout=30)
        assert response.status_code == 200, response.text
        count += len(spans)
    return count


def _wait_for(url: str, count: int) -> list[dict]:
    deadline = time.monotonic() + INGEST_TIMEOUT_S
    while time.monotonic() < deadline:
        spans = httpx.get(f"{url}/v1/projects/default/spans", params={"limit": 1000}).json()
        if len(spans["data"]) >= count:
            return spans["data"]
        time.sleep(0.5)
    raise TimeoutError(f"Phoenix did not ingest the {count} spans")


@pytest.fixture(scope="module")
def trip(tmp_path_factory):
    """Every step of the trip, once; what each wrote or answered."""
    tmp = tmp_path_factory.mktemp("trip")
    records = [r for r in load_traces(Path(jobs.example_traces()))
               if r.get("answer") is not None and r.get("contexts")]
    otlp = write_format("otlp", records, tmp / "spans")
    (tmp / "phoenix").mkdir()
    with contextlib.closing(PhoenixServer.start(tmp / "phoenix")) as phoenix, \
            LangfuseServer() as langfuse, pytest.MonkeyPatch.context() as env:
        env.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
        env.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
        spans = _wait_for(phoenix.url, _send(phoenix.url, records))
        run = tmp / "run"
        steps = {"audit": _main("audit", str(otlp), "--out", str(run), "--judge", "offline",
                                "--annotate", "phoenix", "--phoenix-endpoint", phoenix.url),
                 "langfuse": _main("annotate", "langfuse", str(run), "--host", langfuse.url)}
        tables = read_tables(run)
        roots = {s["context"]["trace_id"]: s["context"]["span_id"] for s in spans
                 if not s.get("parent_id")}
        annotations = Client(base_url=phoenix.url).spans.get_span_annotations(
            span_ids=list(roots.values()), project_identifier="default")
        # A reviewer labels two traces in Phoenix: one as the run did, one the other way.
        labels = {a["trace_id"]: a["label"] for a in tables["answers"]}
        agree, disagree = sorted(labels)[:2]
        flip = {"ENT": "hallucinated"}.get(labels[disagree], "faithful")
        notes = [{"span_id": roots[t], "name": "review", "annotator_kind": "HUMAN",
                  "identifier": "alice", "result": {"label": label}}
                 for t, label in ((agree, labels[agree]), (disagree, flip))]
        posted = httpx.post(f"{phoenix.url}/v1/span_annotations", params={"sync": "true"},
                            json={"data": notes}, timeout=30)
        assert posted.status_code == 200, posted.text
        steps["gold"] = _main("eval", "--gold", "phoenix:review", "--run", str(run),
                              "--phoenix-endpoint", phoenix.url, "--out", str(tmp / "review"))
        scores = langfuse.scores()
    flagged = tmp / "flagged.jsonl"
    steps["export"] = _main("export", str(run), "--flagged", "--out", str(flagged))
    steps["eval"] = _main("eval", "--dataset", "jsonl", "--data", str(flagged), "--judge",
                          "offline", "--split", "all", "--bootstrap", "20", "--out",
                          str(tmp / "eval"))
    return {"tmp": tmp, "records": records, "tables": tables, "steps": steps,
            "annotations": annotations, "scores": scores, "roots": roots,
            "review": (agree, disagree)}


def test_every_step_succeeds(trip):
    assert {name: code for name, (code, _) in trip["steps"].items()} == {
        "audit": 0, "langfuse": 0, "gold": 0, "export": 0, "eval": 0}


def test_phoenix_and_langfuse_hold_the_runs_verdicts(trip):
    answers = {a["trace_id"]: a for a in trip["tables"]["answers"]}
    assert set(answers) == set(trip["roots"])  # the OTLP file's traces are Phoenix's
    on_root = {a["span_id"]: a for a in trip["annotations"] if a["name"] == "rt4chart"}
    for trace_id, span_id in trip["roots"].items():
        assert on_root[span_id]["result"]["label"] == answers[trace_id]["label"]
    langfuse = {s["traceId"]: s["stringValue"] for s in trip["scores"]
                if s["name"] == "rt4chart_label" and s.get("observationId") is None}
    assert langfuse == {t: a["label"] for t, a in answers.items()}


def test_the_flagged_traces_become_the_data_eval_measures(trip):
    answers = {a["trace_id"]: a for a in trip["tables"]["answers"]}
    flagged = sorted(t for t, a in answers.items() if a["hallucinated"])
    assert flagged  # the examples hold hallucinated answers
    exported = [json.loads(line) for line in
                (trip["tmp"] / "flagged.jsonl").read_text().splitlines()]
    assert [r["trace_id"] for r in exported] == flagged
    by_answer = {r["answer"]: r for r in trip["records"]}
    for r in exported:  # question and documents as the app logged them, read from the spans
        original = by_answer[r["answer"]]
        assert r["question"] == original["question"]
        assert [c["text"] for c in r["contexts"]] == [c["text"] for c in original["contexts"]]
        assert r["metadata"]["labels"] == "machine" and r["gold_spans"]
    items = [json.loads(line) for line in
             (trip["tmp"] / "eval" / "items.jsonl").read_text().splitlines()]
    # The same offline judge on its own machine labels flags every exported answer again.
    assert sorted(i["trace_id"] for i in items) == flagged
    assert all(i["flagged"] for i in items)


def test_the_reviewers_labels_come_back_and_are_compared(trip):
    report = json.loads((trip["tmp"] / "review" / "agreement.json").read_text())
    assert report["compared"] == 2 and report["agreement"]["value"] == 0.5
    assert report["unreviewed"] == len(trip["roots"]) - 2
