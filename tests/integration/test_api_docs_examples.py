"""The notebook script of docs/python-api.md runs as written, against a local server."""

from __future__ import annotations

import re
from pathlib import Path

from fake_openai_server import FakeOpenAI, lexical_responder

PAGE = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"
DOCS_URL = "http://127.0.0.1:8080/v1"


def test_notebook_script_runs(monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local server needs no key
    block = re.search(r"## A notebook session\n\n```python\n(.*?)```", PAGE.read_text(), re.S)
    code = block.group(1)
    assert DOCS_URL in code
    try:
        import pandas  # noqa: F401
    except ImportError:  # pandas is optional; the page says to_arrow gives the same table
        code = code.replace('result.to_pandas("claims")', 'result.to_arrow("claims")')
    with FakeOpenAI(lexical_responder) as server:
        exec(compile(code.replace(DOCS_URL, server.base_url), str(PAGE), "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("faq 2 0.5 ")  # two answers on route faq, one hallucinated
    assert out[2].startswith("q1 CON The library opens at 10 am on weekdays.")
