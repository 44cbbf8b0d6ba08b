"""A traced application's work that is not a query (a LlamaIndex app's document splitting,
its embeddings: no LLM, retriever or reranker span) is skipped and counted, not dead-lettered;
a query trace with a part missing is still a dead letter."""

from __future__ import annotations

import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.transforms.common.span_mapping import not_a_query

from span_builders import retriever, span
from span_export import SECOND_NS, _child, hex_id, otlp_json, otlp_request, trace_spans
from testutil import read_tables

QUERY = {"trace_id": "q1", "route": "docs-bot", "question": "What is the capital of Japan?",
         "contexts": ["Tokyo is the capital of Japan."], "answer": "Tokyo is the capital."}


def _ingestion(name: str) -> list[dict]:
    """A document-splitting trace: a CHAIN root with a splitter and an embedding child."""
    root = {"trace_id": hex_id(name, 32), "span_id": hex_id(name + "/root", 16),
            "parent_id": "", "name": "IngestionPipeline.run", "start": 10 * SECOND_NS,
            "end": 13 * SECOND_NS,
            "attributes": {"openinference.span.kind": "CHAIN",
                           "input.value": "[Document(id_='d1', text='Tokyo is big.')]",
                           "output.value": "[TextNode(id_='n1', text='Tokyo is big.')]"}}
    return [root,
            _child(root, "SentenceSplitter._parse_nodes", "CHAIN", 0,
                   {"input.value": "Tokyo is big."}),
            _child(root, "OpenAIEmbedding.get_text_embedding_batch", "EMBEDDING", 1,
                   {"embedding.model_name": "text-embedding-3-small"})]


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.mark.parametrize(("spans", "skipped"), [
    ([span("root", kind="CHAIN"), span("e", "root", "EMBEDDING")], True),
    ([span("root", kind="CHAIN"), span("s", "root", "CHAIN")], True),  # splitting
    ([span("root", kind="EMBEDDING")], True),
    # A lone root span: a query whose retrieval and generation were not traced (dead letter).
    ([span("root", kind="CHAIN", input__value="Q", output__value="A")], False),
    ([span("root")], False),
    ([span("root", kind="CHAIN"), span("l", "root", "LLM")], False),
    ([span("root", kind="CHAIN"), retriever("r", ("d", "text"))], False),
    ([span("root", kind="CHAIN"), span("k", "root", "RERANKER")], False),
])
def test_a_trace_is_a_query_when_it_retrieves_reranks_or_generates(spans, skipped):
    reason = not_a_query(spans)
    assert (reason is not None) is skipped
    if skipped:
        assert reason.startswith("not a query")


def test_non_query_traces_are_counted_as_skipped_not_dead_letters(tmp_path, capsys):
    broken = dict(QUERY, trace_id="broken")  # a query whose retriever span never came
    broken_spans = [s for s in trace_spans(broken)
                    if s["attributes"]["openinference.span.kind"] != "RETRIEVER"]
    lines = [otlp_json(otlp_request(trace_spans(QUERY), "docs-bot")),
             otlp_json(otlp_request(_ingestion("split-1"), "docs-bot")),
             otlp_json(otlp_request(_ingestion("split-2"), "docs-bot")),
             otlp_json(otlp_request(broken_spans, "docs-bot"))]
    path = tmp_path / "spans.otlp.json"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    assert cli.main(["audit", str(path), "--input-format", "otlp", "--judge", "offline",
                     "--out", str(out)]) == 0
    tables = read_tables(out)
    assert len(tables["answers"]) == 1
    (dead,) = tables["dead_letters"]
    assert dead["stage"] == "assemble" and dead["reason"].startswith("no retriever span")
    printed = capsys.readouterr().out
    assert "skipped: 2 span trace(s) that are not queries" in printed
    summary = (out / "summary.json").read_text()
    assert '"not_queries": 2' in summary or '"not_queries":2' in summary
