"""Write-back to a real Phoenix server: the example traces are sent to it as OpenTelemetry
traces (OTLP over HTTP, OpenInference attributes), audited with their OTel trace ids as
trace_ids, and annotated twice (`audit --annotate phoenix`, then `annotate phoenix`); the
annotations read back through Phoenix's own client sit on the root spans, once each, with the
answers' labels. One example trace is audited but never sent: it is counted as not found.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from phoenix.client import Client

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.cli.annotate import StreamWriteBack
from rt4chart.pipeline.run.jobs import example_traces
from rt4chart.pipeline.sources.phoenix_client import PhoenixTarget

from phoenix_server import PhoenixServer
from testutil import load_traces, read_tables, write_jsonl

INGEST_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    server = PhoenixServer.start(tmp_path_factory.mktemp("phoenix"))
    try:
        yield server
    finally:
        server.stop()


def _send(traces: list[dict], url: str) -> dict[str, dict[str, str]]:
    """Each trace as an OpenInference RAG trace (a CHAIN root span, a RETRIEVER and an LLM
    child); {example trace_id: {"trace": OTel trace id, "root": root span id, "children": ...}}."""
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-app"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{url}/v1/traces")))
    tracer = provider.get_tracer("rt4chart-test")
    sent = {}
    for t in traces:
        with tracer.start_as_current_span("rag", attributes={
                "openinference.span.kind": "CHAIN", "input.value": t["question"],
                "output.value": t["answer"]}) as root:
            docs = {}
            for i, doc in enumerate(t["contexts"]):
                docs[f"retrieval.documents.{i}.document.id"] = doc["doc_id"]
                docs[f"retrieval.documents.{i}.document.content"] = doc["text"]
            with tracer.start_as_current_span("retrieve", attributes={
                    "openinference.span.kind": "RETRIEVER", **docs}) as retriever:
                pass
            with tracer.start_as_current_span("generate", attributes={
                    "openinference.span.kind": "LLM"}) as llm:
                pass
        sent[t["trace_id"]] = {
            "trace": format(root.get_span_context().trace_id, "032x"),
            "root": format(root.get_span_context().span_id, "016x"),
            "children": [format(s.get_span_context().span_id, "016x")
                         for s in (retriever, llm)]}
    provider.shutdown()
    return sent


def _wait_ingested(client: Client, trace_ids: list[str]) -> None:
    deadline = time.monotonic() + INGEST_TIMEOUT_S
    while time.monotonic() < deadline:
        spans = client.spans.get_spans(project_identifier="default", trace_ids=trace_ids,
                                       limit=1000)
        if len(spans) == 3 * len(trace_ids):
            return
        time.sleep(0.5)
    raise TimeoutError(f"Phoenix did not ingest the {len(trace_ids)} traces' spans")


@pytest.fixture(scope="module")
def audited(phoenix, tmp_path_factory):
    """The examples sent to Phoenix (all valid ones but one), audited with `--annotate
    phoenix`, then annotated once more with `annotate phoenix`; (sent, unsent, out, stdout)."""
    tmp = tmp_path_factory.mktemp("run")
    records = load_traces(Path(example_traces()))
    valid = [r for r in records if r.get("answer") is not None and r.get("contexts")]
    unsent = valid[-1]
    sent = _send(valid[:-1], phoenix.url)
    _wait_ingested(Client(base_url=phoenix.url), [s["trace"] for s in sent.values()])
    renamed = [{**r, "trace_id": sent[r["trace_id"]]["trace"]} if r in valid[:-1] else r
               for r in records]
    inputs = write_jsonl(tmp / "traces.jsonl", renamed)
    out = tmp / "out"
    runs = []
    for argv in (["audit", str(inputs), "--out", str(out), "--judge", "offline",
                  "--annotate", "phoenix", "--phoenix-endpoint", phoenix.url],
                 ["annotate", "phoenix", str(out), "--endpoint", phoenix.url,
                  "--project", "default"]):
        with contextlib.redirect_stdout(io.StringIO()) as stdout:
            code = cli.main(argv)
        runs.append((code, stdout.getvalue()))
    return sent, unsent, out, runs


def test_annotations_on_root_spans_once_each_after_two_runs(phoenix, audited):
    sent, _, out, runs = audited
    assert [code for code, _ in runs] == [0, 0]
    tables = read_tables(out)
    answers = {a["trace_id"]: a for a in tables["answers"]}
    summary = json.loads((out / "summary.json").read_text())
    client = Client(base_url=phoenix.url)
    all_spans = [sid for s in sent.values() for sid in (s["root"], *s["children"])]
    got = client.spans.get_span_annotations(span_ids=all_spans, project_identifier="default")

    assert sorted(a["span_id"] for a in got) == sorted(s["root"] for s in sent.values())
    for ids in sent.values():
        (note,) = [a for a in got if a["span_id"] == ids["root"]]
        answer = answers[ids["trace"]]
        assert note["name"] == "rt4chart" and note["annotator_kind"] == "LLM"
        assert note["result"]["label"] == answer["label"]
        assert note["result"]["score"] == pytest.approx(answer["p_hallucinated"])
        assert note["metadata"]["judge_model"] == summary["judge_model"]
        assert note["metadata"]["prompt_hash"] == summary["prompt_hash"]
        assert note["metadata"]["trace_id"] == ids["trace"]
        flagged = [c for c in tables["claims"]
                   if c["trace_id"] == ids["trace"] and c["label"] != "ENT"]
        for claim in flagged:
            assert f"[{claim['label']}] " in note["result"]["explanation"]
            assert " ".join(claim["claim"].split())[:100] in note["result"]["explanation"]
    assert {a["result"]["label"] for a in got} >= {"CON"}  # the paper's example is CON


def test_the_trace_phoenix_lacks_is_counted_not_an_error(audited):
    sent, unsent, out, runs = audited
    answers = {a["trace_id"] for a in read_tables(out)["answers"]}
    assert unsent["trace_id"] in answers  # audited, but never sent to Phoenix
    assert {s["trace"] for s in sent.values()} <= answers
    for _, stdout in runs:  # both runs: every sent trace annotated, the other one counted
        (line,) = [x for x in stdout.splitlines() if x.startswith("annotate phoenix:")]
        assert f": {len(sent)} trace(s) annotated" in line
        assert f"1 not found in Phoenix ({unsent['trace_id']})" in line


def test_stream_write_back_writes_only_new_verdicts(phoenix, audited):
    sent, unsent, out, _ = audited
    back = StreamWriteBack(PhoenixTarget(phoenix.url), str(out))
    first, second = back.run_once(), back.run_once()
    assert first.annotated == len(sent) and first.not_found == [unsent["trace_id"]]
    assert second.annotated == 0 and second.not_found == [unsent["trace_id"]]
    got = Client(base_url=phoenix.url).spans.get_span_annotations(
        span_ids=[s["root"] for s in sent.values()], project_identifier="default")
    assert len(got) == len(sent)  # still once each


_DOCUMENT_EVALUATIONS = """query ($id: ID!) { node(id: $id) { ... on Span {
  documentEvaluations { name label score explanation documentPosition metadata } } } }"""


def _document_annotations(url: str, trace: str, span_id: str) -> list[dict]:
    """The document annotations Phoenix holds on a span, read through its GraphQL API (the one
    its retrieval view reads; the REST API has no read of document annotations)."""
    spans = httpx.get(f"{url}/v1/projects/default/spans",
                      params={"trace_id": [trace], "limit": 100}).json()["data"]
    (node_id,) = [s["id"] for s in spans if s["context"]["span_id"] == span_id]
    body = httpx.post(f"{url}/graphql", json={"query": _DOCUMENT_EVALUATIONS,
                                              "variables": {"id": node_id}}).json()
    assert "errors" not in body, body
    return body["data"]["node"]["documentEvaluations"]


def test_evidence_documents_are_annotated_on_the_retriever_span_once_each(phoenix, audited):
    """Each retrieved document a claim cites as evidence carries one document annotation on the
    retriever span, at its position, after two write-backs: the claims citing it, whether it
    supported or contradicted; a document no claim cites carries none."""
    sent, _, out, runs = audited
    tables = read_tables(out)
    contexts = {r["trace_id"]: r["contexts"] for r in load_traces(Path(example_traces()))}
    checked = contradicted = 0
    for example_id, ids in sent.items():
        claims = [c for c in tables["claims"] if c["trace_id"] == ids["trace"]]
        cited: dict[str, set[int]] = {}
        for c in claims:
            for ev in c["evidence"] or ():
                cited.setdefault(ev["doc_id"], set()).add(c["claim_index"])
        position = {d["doc_id"]: i for i, d in enumerate(contexts[example_id])}
        got = _document_annotations(phoenix.url, ids["trace"], ids["children"][0])
        assert sorted(a["documentPosition"] for a in got) == sorted(position[d] for d in cited)
        for note in got:
            (doc_id,) = [d for d, i in position.items() if i == note["documentPosition"]]
            labels = {c["label"] for c in claims if c["claim_index"] in cited[doc_id]}
            assert note["name"] == "rt4chart evidence"
            assert note["score"] == len(cited[doc_id])
            assert note["metadata"]["claims"] == sorted(cited[doc_id])
            assert note["label"] == ("supports and contradicts" if {"ENT", "CON"} <= labels
                                     else "contradicts" if "CON" in labels else "supports")
            contradicted += "contradicts" in note["label"]
            checked += 1
    assert checked and contradicted  # the paper's example cites a contradicting document
    for _, stdout in runs:
        (line,) = [x for x in stdout.splitlines() if x.startswith("annotate phoenix:")]
        assert f"{checked} evidence document(s) annotated" in line
