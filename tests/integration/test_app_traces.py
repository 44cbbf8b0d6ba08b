"""docs/app-traces.md run as written: a LlamaIndex query engine and a LangChain retrieval chain
(each framework's own fake LLM and embeddings, no network), traced by OpenInference's
instrumentations from PyPI and written by the OpenTelemetry SDK's exporter with the page's five
lines, then audited by the page's `rt4chart audit` command. The audit holds what the app used:
its route, its OpenTelemetry trace id (32 lowercase hex digits, without the SDK's 0x), its
question, answer and documents; `rt4chart.integrations.trace_from_response` gives the same
from the app's response object. And docs/python-api.md's pytest example, run by pytest on a
LlamaIndex app: grounded answers pass, a wrong one fails naming its claim."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from rt4chart.pipeline.results.runs import open_run
from rt4chart.pipeline.sources import phoenix
from rt4chart.transforms.common.span_mapping import NotAQuery, SpanMapping, trace_record

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGE = DOCS / "app-traces.md"
BIN = Path(sys.executable).parent
HEX32 = re.compile(r"[0-9a-f]{32}")

# What the test adds after the page's code: the app's own view of its answer, to compare with.
LLAMA_VIEW = """
import json
json.dump({"record": record, "answer": str(response), "question": question,
           "nodes": [[n.node.node_id, n.node.get_content()] for n in response.source_nodes]},
          open("app.json", "w"))
"""
LANGCHAIN_VIEW = """
import json
json.dump({"record": record, "answer": result["answer"], "question": question,
           "nodes": [[d.id, d.page_content] for d in result["context"]]}, open("app.json", "w"))
"""


def _blocks(page: Path, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", page.read_text(), re.S)


def _env() -> dict[str, str]:
    """No judge endpoint (auto: the offline judge), no network; the venv's commands first."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "AZURE_OPENAI_"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def _run(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _app(tmp_path: Path, framework: str) -> tuple[dict, list[dict]]:
    """Run the page's five lines and its `framework` app, then its audit command; (the app's
    view, the SDK's span lines)."""
    recipe, llama_app, langchain_app, helper = _blocks(PAGE, "python")
    if framework == "langchain":
        recipe = recipe.replace(
            "from openinference.instrumentation.llama_index import LlamaIndexInstrumentor",
            "from openinference.instrumentation.langchain import LangChainInstrumentor",
        ).replace("LlamaIndexInstrumentor().instrument", "LangChainInstrumentor().instrument")
        assert "LangChainInstrumentor().instrument(tracer_provider=provider)" in recipe
    app, not_ours, view = ((llama_app, "(result", LLAMA_VIEW) if framework == "llama_index"
                           else (langchain_app, "(response", LANGCHAIN_VIEW))
    helper = "\n".join(line for line in helper.splitlines() if not_ours not in line)
    (tmp_path / "app.py").write_text(recipe + app + helper + view)
    _run([sys.executable, "app.py"], tmp_path)
    command = next(b for b in _blocks(PAGE, "bash") if b.startswith("rt4chart audit"))
    _run(shlex.split(command.strip()), tmp_path)
    lines = [json.loads(line) for line in (tmp_path / "spans.jsonl").read_text().splitlines()]
    return json.loads((tmp_path / "app.json").read_text()), lines


def _query_traces(lines: list[dict]) -> list[dict]:
    """The traces rt4chart assembles from the span lines (the app's other work skipped)."""
    spans = [s for line in lines for s in phoenix.line_spans(json.dumps(line))]
    by_trace: dict[str, list] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    traces = []
    for group in by_trace.values():
        try:
            traces.append(trace_record(group, SpanMapping()))
        except NotAQuery:
            continue
    return traces


@pytest.mark.parametrize("framework", ["llama_index", "langchain"])
def test_the_recipe_traces_an_app_that_rt4chart_audits(tmp_path, framework):
    view, lines = _app(tmp_path, framework)
    run = open_run(str(tmp_path / "rt4chart-out"))
    assert not run.dead_letters
    [answer] = run.answers  # the query; splitting and embedding documents are skipped
    assert answer.route == "library-faq"  # service.name, under the SDK's resource.attributes
    roots = {line["context"]["trace_id"] for line in lines if line["parent_id"] is None}
    sdk_id = next(t for t in roots if t[2:] == answer.trace_id)  # the app's own trace id
    assert sdk_id.startswith("0x") and HEX32.fullmatch(answer.trace_id)
    [trace] = _query_traces(lines)
    assert (trace["trace_id"], trace["question"], trace["answer"]) == (
        answer.trace_id, view["question"], view["answer"])
    # The documents the app answered from, in its order, as the spans hold them.
    assert [c["text"] for c in trace["contexts"]] == [text for _, text in view["nodes"]]
    record = view["record"]  # trace_from_response on the app's response object
    assert (record["question"], record["answer"]) == (view["question"], view["answer"])
    assert [[c["doc_id"], c["text"]] for c in record["contexts"]] == view["nodes"]
    if framework == "llama_index":  # OpenInference records LlamaIndex's node ids
        assert trace["contexts"] == record["contexts"]
    else:  # LangChain's instrumentation records no ids: by position
        assert [c["doc_id"] for c in trace["contexts"]] == ["doc0", "doc1"]
        assert answer.label == "ENT" and answer.claims  # "A day pass costs 5 euros." is there


GROUNDED = {"When does the library open?": "The library opens at 8 am on weekdays.",
            "What does a day pass cost?": "A day pass costs 5 euros."}

# The system under test of the pytest example: a LlamaIndex query engine over two nodes whose
# LLM answers from a table (the framework's CustomLLM hook; no network).
MY_RAG = '''
from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.schema import TextNode

ANSWERS = {answers!r}


class TableLLM(CustomLLM):
    @property
    def metadata(self):
        return LLMMetadata(model_name="table")

    @llm_completion_callback()
    def complete(self, prompt, formatted=False, **kwargs):
        return CompletionResponse(text=next(a for q, a in ANSWERS.items() if q in prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt, formatted=False, **kwargs):
        raise NotImplementedError


Settings.llm = TableLLM()
Settings.embed_model = MockEmbedding(embed_dim=8)
nodes = [TextNode(text="The library opens at 8 am on weekdays.", id_="library-hours"),
         TextNode(text="A day pass costs 5 euros.", id_="prices")]
query_engine = VectorStoreIndex(nodes).as_query_engine(similarity_top_k=2)
'''


def _pytest_example(tmp_path: Path, answers: dict[str, str]) -> subprocess.CompletedProcess:
    page = DOCS / "python-api.md"
    conftest, golden = (b for b in _blocks(page, "python")
                        if b.startswith(("# conftest.py", "# test_golden.py")))
    (tmp_path / "conftest.py").write_text(conftest)
    (tmp_path / "test_golden.py").write_text(golden)
    (tmp_path / "my_rag.py").write_text(MY_RAG.format(answers=answers))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:bqemulator",
         "test_golden.py"], cwd=tmp_path, env={**_env(), "PYTHONPATH": str(tmp_path)},
        capture_output=True, text=True, timeout=600, check=False)


def test_the_pytest_example_passes_grounded_answers(tmp_path):
    done = _pytest_example(tmp_path, GROUNDED)
    assert done.returncode == 0, done.stdout[-3000:]
    assert re.search(r"\b2 passed\b", done.stdout)


def test_the_pytest_example_fails_a_wrong_answer_naming_its_claim(tmp_path):
    wrong = {**GROUNDED, "When does the library open?": "The library opens at 10 am on weekdays."}
    done = _pytest_example(tmp_path, wrong)
    assert re.search(r"\b2 failed\b", done.stdout), done.stdout[-3000:]
    assert "- trace 'q-open' (route 'faq'): CON" in done.stdout
    assert "evidence (library-hours, sentence 0): 'The library opens at 8 am" in done.stdout
