"""An endpoint that echoes the key in another encoding (base64 at each byte alignment, upper or
lower case, URL-encoded, split by a line break, hex) leaves it in no output: a real audit
through the `openai` client against the local fake server, then every table, the summary, the
report and the log lines are searched for each encoding."""

from __future__ import annotations

import base64
import json
import logging
import urllib.parse

import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.report.packing import unpacked  # trace views as a browser shows them

from fake_openai_server import FakeOpenAI, RawReply, lexical_responder, tag
from testutil import read_tables, write_jsonl

KEY = "sk-Test/Echo+0123456789abcDEF=ghij"  # characters that URL-encoding changes
CTX = "Tokyo is the capital of Japan. It has about 14 million inhabitants."
ENCODINGS = {
    "base64": base64.b64encode(KEY.encode()).decode(),
    "base64 after 1 byte": base64.b64encode(b"u:" + KEY.encode()).decode(),
    "base64 after 2 bytes": base64.b64encode(b"us:" + KEY.encode()).decode(),
    "base64url": base64.urlsafe_b64encode(b"u:" + KEY.encode()).decode(),
    "upper case": KEY.upper(),
    "lower case": KEY.lower(),
    "url-encoded": urllib.parse.quote(KEY, safe=""),
    "percent-encoded": "".join(f"%{b:02X}" for b in KEY.encode()),
    "split by a newline": KEY[:12] + "\n" + KEY[12:],
    "hex": KEY.encode().hex(),
}
NAMES = list(ENCODINGS)


def _needles() -> dict[str, str]:
    """What must not be found: each encoding, and of the split key its tail."""
    found = dict(ENCODINGS)
    found["split by a newline"] = KEY[12:]
    found["base64 (inner part)"] = ENCODINGS["base64 after 1 byte"][4:-4]
    return found


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _echo_encoded(body: dict, headers: dict) -> RawReply | None:
    """A 400 (not retried) whose message echoes the key in the encoding the claim names."""
    claim = tag(body["messages"][-1]["content"], "claim") or ""
    for index, name in enumerate(NAMES):
        if f"code{index}x" in claim:
            message = f"invalid key {ENCODINGS[name]} for this deployment"
            return RawReply(400, json.dumps({"error": {"message": message}}),
                            "application/json")
    return None


def test_no_encoding_of_the_key_reaches_any_output(tmp_path, audit, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    records = [{"trace_id": f"enc{i}", "contexts": [CTX],
                "answer": f"Kyoto code{i}x has about 14 million inhabitants."}
               for i in range(len(NAMES))]
    records.append({"trace_id": "good", "contexts": [CTX],
                    "answer": "Tokyo is the capital of Japan."})
    traces = write_jsonl(tmp_path / "t.jsonl", records)
    with FakeOpenAI(lexical_responder, raw=_echo_encoded) as server:
        code, tables, out = audit(str(traces), "--judge", "openai", "--base-url",
                                  server.base_url, "--judge-option", "max_attempts=1")
        echoed = server.statuses["raw"]
    assert code == 3 and echoed >= len(NAMES)
    answers = {a["trace_id"]: a for a in tables["answers"]}
    assert all(answers[f"enc{i}"]["status"] == "incomplete" for i in range(len(NAMES)))
    html = tmp_path / "report.html"
    assert cli.main(["report", str(out), "--out", str(html)]) == 0
    printed = capsys.readouterr()
    texts = {f"table {name}": json.dumps(rows, default=str)
             for name, rows in read_tables(out).items()}
    texts.update({str(p): p.read_text(errors="replace") for p in [*out.rglob("*"), html]
                  if p.is_file() and not p.name.endswith(".parquet")})
    texts["report, unpacked"] = unpacked(html.read_text())
    texts["stdout"], texts["stderr"] = printed.out, printed.err
    texts["log"] = "\n".join(r.getMessage() for r in caplog.records)
    assert "summary.json" in {p.name for p in out.iterdir()}
    leaks = sorted(f"{encoding} in {where}" for where, text in texts.items()
                   for encoding, needle in _needles().items()
                   if needle in text or (needle.lower() in text.lower()
                                         and encoding in ("upper case", "lower case", "hex")))
    assert not leaks
    assert all("[REDACTED]" in answers[f"enc{i}"]["reason"] for i in range(len(NAMES)))
