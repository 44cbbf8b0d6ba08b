"""A judge that writes the request's key into what it returns leaves it in no output (issue 33,
defect 1): a real `rt4chart audit` through the `openai` client against a local server that
reads each request's `Authorization` header and echoes the key, in one encoding per trace, into
claim text, fragments, evidence and reasoning (200 replies) or into an error body (400s). Then
every table (judge_cache included), the summary, the HTML report, stdout, stderr and the log
lines are searched for the key in every encoding, and for its letters and digits in order or
reversed once entities, escapes and invisible characters are undone.

The key is made at run time (no key-shaped literal in the repository)."""

from __future__ import annotations

import base64
import html
import json
import logging
import re
import secrets
import threading
import urllib.parse

import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.report.packing import unpacked  # trace views as a browser shows them

from fake_openai_server import FakeOpenAI, RawReply, lexical_responder, schema_name_of, tag
from testutil import read_tables, write_jsonl

KEY = "sk-" + "proj-" + secrets.token_urlsafe(24)  # a test key, new at each run
CTX = "Tokyo is the capital of Japan. It has about 14 million inhabitants."
ENCODINGS = {
    "as is": lambda k: k,
    "bearer header": lambda k: f"Authorization: Bearer {k}",
    "zero-width spaces": "\u200b".join,
    "zero-width joiners and soft hyphens": lambda k: "\u200d\u00ad".join(k),
    "reversed": lambda k: k[::-1],
    "html decimal entities": lambda k: "".join(f"&#{ord(c)};" for c in k),
    "html hex entities": lambda k: "".join(f"&#x{ord(c):X};" for c in k),
    "comma-separated": ",".join,
    "space-separated": " ".join,
    "dash-separated": "-".join,
    "dot-separated": ".".join,
    "reversed and comma-separated": lambda k: ",".join(k[::-1]),
    "base32": lambda k: base64.b32encode(k.encode()).decode(),
    "base32 after 2 bytes": lambda k: base64.b32encode(b"u:" + k.encode()).decode(),
    "base64": lambda k: base64.b64encode(k.encode()).decode(),
    "hex": lambda k: k.encode().hex(),
    "url-encoded": lambda k: urllib.parse.quote(k, safe=""),
    "unicode escapes": lambda k: "".join(f"\\u{ord(c):04x}" for c in k),
    "full-width": lambda k: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in k),
}
NAMES = list(ENCODINGS)
_REQUEST = threading.local()  # the headers of the request the handler thread is answering


class EchoingJudge(FakeOpenAI):
    """The fake server, whose responder may read the request's headers."""

    def chat(self, path, query, headers, body):
        _REQUEST.headers = headers
        return super().chat(path, query, headers, body)


def _echoed_key() -> str:
    return _REQUEST.headers["authorization"].removeprefix("Bearer ")


def _marker(body: dict, kind: str) -> int | None:
    found = re.search(rf"{kind}(\d+)x", body["messages"][-1]["content"])
    return int(found.group(1)) if found else None


def _echo_in_content(body: dict) -> dict:
    """The lexical answer, with the encoded key in every text it returns."""
    reply = lexical_responder(body)
    index = _marker(body, "code")
    if index is None:
        return reply
    echo = ENCODINGS[NAMES[index]](_echoed_key())
    if schema_name_of(body) == "decompose":
        for claim in reply["claims"]:
            claim["text"] += f" ({echo})"
            claim["fragments"] = [*claim["fragments"], echo]
    else:
        reply["evidence"] = [*reply.get("evidence", []), f"key {echo}"]
    reply["reasoning"] = f"the header said {echo}"
    return reply


def _echo_in_error(body: dict, headers: dict) -> RawReply | None:
    index = _marker(body, "fail")
    if index is None or tag(body["messages"][-1]["content"], "sentence") is not None:
        return None
    echo = ENCODINGS[NAMES[index]](headers["authorization"].removeprefix("Bearer "))
    return RawReply(400, json.dumps({"error": {"message": f"bad request from {echo}"}}),
                    "application/json")


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


_INVISIBLE = re.compile(r"[\u00ad\u200b-\u200f\u2060-\u206f\ufeff]")


def _skeleton(text: str) -> str:
    return re.sub(r"[\W_]+", "", text).lower()


def _leaks(text: str) -> list[str]:
    """The encodings of KEY found in `text`, decoded views included."""
    views = {text, html.unescape(text), _INVISIBLE.sub("", html.unescape(text))}
    views.add(text.encode().decode("unicode_escape", "replace") if "\\u" in text else text)
    found = [name for name in NAMES for view in views
             if ENCODINGS[name](KEY).lower() in view.lower()]
    core = _skeleton(KEY)
    found += ["letters in order" for view in views if core in _skeleton(view)]
    found += ["letters reversed" for view in views if core[::-1] in _skeleton(view)]
    return sorted(set(found))


def test_the_key_is_in_no_output_in_any_encoding(tmp_path, audit, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    records = [{"trace_id": f"echo{i}", "contexts": [CTX],
                "answer": f"Tokyo code{i}x is the capital of Japan."} for i in range(len(NAMES))]
    records += [{"trace_id": f"fail{i}", "contexts": [CTX],
                 "answer": f"Kyoto fail{i}x has about 14 million inhabitants."}
                for i in range(len(NAMES))]
    traces = write_jsonl(tmp_path / "t.jsonl", records)
    with EchoingJudge(_echo_in_content, raw=_echo_in_error) as server:
        code, tables, out = audit(str(traces), "--judge", "openai", "--base-url",
                                  server.base_url, "--judge-option", "max_attempts=1")
        errors = server.statuses["raw"]
    assert code == 3 and errors >= len(NAMES)
    # The echoes reached the tables (redacted), so the search below is not vacuous.
    claims = [c for c in tables["claims"] if c["trace_id"].startswith("echo")]
    # (a claim whose echo is too long for the claim bounds is re-added from the sentence)
    assert sum("[REDACTED]" in c["claim"] for c in claims) >= len(NAMES) // 2
    assert any("[REDACTED]" in r["result"] for r in tables["judge_cache"])
    answers = {a["trace_id"]: a for a in tables["answers"]}
    assert all("[REDACTED]" in (answers[f"fail{i}"]["reason"] or "")
               for i in range(len(NAMES)))
    html_path = tmp_path / "report.html"
    assert cli.main(["report", str(out), "--out", str(html_path)]) == 0
    printed = capsys.readouterr()
    texts = {f"table {name}": json.dumps(rows, default=str, ensure_ascii=False)
             for name, rows in read_tables(out).items()}
    texts.update({str(p): p.read_text(errors="replace") for p in [*out.rglob("*"), html_path]
                  if p.is_file() and not p.name.endswith(".parquet")})
    texts["report, unpacked"] = unpacked(html_path.read_text())
    texts["stdout"], texts["stderr"] = printed.out, printed.err
    texts["log"] = "\n".join(r.getMessage() for r in caplog.records)
    leaks = [f"{name} in {where}" for where, text in texts.items() for name in _leaks(text)]
    assert leaks == []
