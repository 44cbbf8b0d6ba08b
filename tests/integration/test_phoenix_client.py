"""The write-back's pieces without a server: verdicts per trace, the annotation body, and the
REST client (batches, retries, root spans, not-found traces, the key) over httpx's
MockTransport, which plays Phoenix's API as the real server answers it."""

from __future__ import annotations

import argparse
import json
import logging
import time
from datetime import UTC, datetime

import httpx
import pytest

from rt4chart.pipeline.annotate.phoenix import write_back
from rt4chart.pipeline.annotate.verdicts import annotation, group_verdicts, otel_trace_id
from rt4chart.pipeline.cli import annotate as annotate_cli
from rt4chart.pipeline.sources.phoenix_client import PhoenixClient, PhoenixError, PhoenixTarget

T1, T2, T3 = "a" * 32, "b" * 32, "c" * 32
DAY = datetime(2024, 6, 1, tzinfo=UTC)


def answer(trace_id=T1, label="CON", n_claims=2, status="ok", **extra):
    return {"trace_id": trace_id, "route": "r", "label": label, "p_hallucinated": 0.75,
            "status": status, "n_claims": n_claims, "reason": None, "judge_model": "gpt-x",
            "prompt_hash": "ph1", "audited_at": DAY, **extra}


def claim(trace_id=T1, index=0, label="ENT", **extra):
    sentence = "The free trial lasts 30 days."
    return {"trace_id": trace_id, "claim_index": index, "claim": "The trial lasts 30 days.",
            "label": label, "sentence": sentence, "answer_start": 10, "answer_end": 39,
            "spans": [{"char_start": 31, "char_end": 38}], "note": None,
            "evidence": [{"doc_id": "policy", "sentence_index": 2, "char_start": 0,
                          "char_end": 29, "text": "The free trial lasts 14 days."}], **extra}


class FakePhoenix:
    """Phoenix's two endpoints over MockTransport: root spans by trace id (paged), span
    annotations upserted by (span, name, identifier); `fail` status codes are answered first."""

    def __init__(self, roots: dict[str, list[tuple[str, str]]], page: int = 1000,
                 fail: tuple[int, ...] = ()):
        self.roots, self.page, self.fail = roots, page, list(fail)
        self.requests: list[httpx.Request] = []
        self.annotations: dict[tuple, dict] = {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.fail:
            return httpx.Response(self.fail.pop(0), text="busy")
        if request.method == "GET":
            return self._spans(request)
        ids = []
        for item in json.loads(request.content)["data"]:
            key = (item["span_id"], item["name"], item["identifier"])
            self.annotations[key] = item
            ids.append({"id": str(list(self.annotations).index(key))})
        return httpx.Response(200, json={"data": ids})

    def _spans(self, request: httpx.Request) -> httpx.Response:
        assert request.url.params["parent_id"] == "null"
        wanted = request.url.params.get_list("trace_id")
        spans = [{"context": {"trace_id": t, "span_id": sid}, "start_time": start}
                 for t in wanted for sid, start in self.roots.get(t, [])]
        offset = int(request.url.params.get("cursor") or 0)
        more = offset + self.page < len(spans)
        return httpx.Response(200, json={"data": spans[offset:offset + self.page],
                                         "next_cursor": str(offset + self.page) if more else None})


def client(fake: FakePhoenix, batch_size: int = 100, api_key: str | None = "") -> PhoenixClient:
    target = PhoenixTarget("http://phoenix.test/v1/traces", batch_size=batch_size, backoff_s=0)
    return PhoenixClient(target, api_key=api_key, transport=httpx.MockTransport(fake))


def test_otel_trace_ids_are_32_lowercase_hex():
    assert otel_trace_id(" " + "AB" * 16 + "\n") == "ab" * 16
    assert otel_trace_id("paper-running-example") is None
    assert otel_trace_id("0" * 32) is None  # the invalid (all-zero) trace id
    assert otel_trace_id("a" * 31) is None


def test_verdicts_wait_for_all_their_claims_and_skip_undecided_answers():
    v = group_verdicts(
        [answer(T1), answer(T2), answer(T3, label=None, status="incomplete"),
         answer(T1, label="ENT", audited_at=datetime(2024, 6, 2, tzinfo=UTC))],
        [claim(T1, 0), claim(T1, 1, "NIC"), claim(T2, 0)])
    assert [x.trace_id for x in v.ready] == [T1] and v.ready[0].answer["label"] == "ENT"
    assert v.pending == [T2] and v.undecided == [T3]


def test_annotation_names_the_flagged_claims_spans_and_evidence():
    (v,) = group_verdicts([answer()], [claim(index=0), claim(index=1, label="CON")]).ready
    body = annotation(v, "rt4chart")
    assert body["identifier"] == body["name"] == "rt4chart" and body["annotator_kind"] == "LLM"
    assert body["result"]["label"] == "CON" and body["result"]["score"] == 0.75
    assert body["metadata"]["judge_model"] == "gpt-x" and body["metadata"]["prompt_hash"] == "ph1"
    assert body["metadata"]["con_claims"] == 1
    text = body["result"]["explanation"]
    assert text.startswith("CON: 1 of 2 claim(s) not supported")
    assert '1. [CON] "The trial lasts 30 days."' in text
    assert 'answer: [31:38] "30 days"' in text  # the claim's span in the answer, quoted
    assert 'evidence: policy sentence 2 [0:29] "The free trial lasts 14 days."' in text
    assert "2. " not in text  # the ENT claim is not listed


def test_write_back_batches_pages_and_counts_traces_phoenix_lacks():
    roots = {T1: [("s1b", "2024-01-01T00:00:02"), ("s1a", "2024-01-01T00:00:01")],
             T2: [("s2", "2024-01-01T00:00:00")]}
    fake = FakePhoenix(roots, page=1)
    verdicts = group_verdicts([answer(T1, n_claims=0), answer(T2, n_claims=0),
                               answer(T3, n_claims=0), answer("not-otel", n_claims=0)], [])
    with client(fake, batch_size=2) as c:
        result, written = write_back(verdicts, c._target, c)
        again, _ = write_back(verdicts, c._target, c)
    assert result.annotated == again.annotated == 2
    assert sorted(result.not_found) == sorted([T3, "not-otel"])
    assert [w.trace_id for w in written] == [T1, T2]
    # The earliest root of T1, once per (span, name, identifier) after two write-backs.
    assert sorted(k[0] for k in fake.annotations) == ["s1a", "s2"]
    gets = [r for r in fake.requests if r.method == "GET"]
    assert all(r.url.path == "/v1/projects/default/spans" for r in gets)
    assert max(len(r.url.params.get_list("trace_id")) for r in gets) == 2  # batched by 2
    assert len(gets) > 2  # and paged


def test_transient_errors_are_retried_and_a_refusal_is_an_error_without_the_key(caplog):
    key = "phx-secret-key-0123456789"
    fake = FakePhoenix({T1: [("s1", "")]}, fail=(503, 429))
    with client(fake, api_key=key) as c:
        assert c.root_spans([T1]) == {T1: "s1"}
    assert len(fake.requests) == 3
    assert fake.requests[-1].headers["authorization"] == f"Bearer {key}"
    refusing = FakePhoenix({}, fail=(401,))
    with client(refusing, api_key=key) as c, caplog.at_level(logging.DEBUG):
        with pytest.raises(PhoenixError, match="401") as err:
            c.upsert([{"span_id": "s", "name": "n"}])
    assert key not in str(err.value) and key not in caplog.text
    down = FakePhoenix({}, fail=(503,) * 10)
    with client(down) as c, pytest.raises(PhoenixError, match="after 5 attempt"):
        c.root_spans([T1])


def _args(**given) -> argparse.Namespace:
    values = {"annotate": "phoenix", "phoenix_endpoint": None, "phoenix_project": None,
              "annotation_name": "rt4chart"}
    return argparse.Namespace(**{**values, **given})


def test_options_make_a_target_or_a_usage_error(monkeypatch):
    monkeypatch.delenv("PHOENIX_COLLECTOR_ENDPOINT", raising=False)
    assert annotate_cli.target(argparse.Namespace()) is None
    with pytest.raises(ValueError, match="--endpoint"):
        annotate_cli.target(_args())
    with pytest.raises(ValueError, match="http"):
        annotate_cli.target(_args(phoenix_endpoint="phoenix:6006"))
    monkeypatch.setenv("PHOENIX_COLLECTOR_ENDPOINT", "http://h:6006/")
    t = annotate_cli.target(_args(phoenix_project="rag"))
    assert (t.base_url, t.project, t.name) == ("http://h:6006", "rag", "rt4chart")


def test_annotate_command_usage_errors_exit_2(tmp_path, capsys):
    from rt4chart.pipeline.cli import main as cli

    assert cli.main(["annotate", "phoenix", str(tmp_path), "--endpoint", "http://h:1"]) == 2
    assert "no answers table" in capsys.readouterr().err
    code = cli.main(["annotate", "phoenix", str(tmp_path), "--endpoint", "http://h:1",
                     "--runner", "FnApiRunner"])
    assert code == 2 and "unrecognized arguments: --runner" in capsys.readouterr().err


def test_stream_write_back_runs_while_the_stream_runs_and_once_at_the_end(monkeypatch):
    passes = []
    monkeypatch.setattr(annotate_cli.StreamWriteBack, "run_once",
                        lambda self: passes.append(self._source))
    args = argparse.Namespace(out=None, bigquery="p:d", annotate_interval=0.01)
    deadline = time.monotonic() + 60
    with annotate_cli.periodic(PhoenixTarget("http://h:1"), args):
        while len(passes) < 2 and time.monotonic() < deadline:  # passes while the body runs
            time.sleep(0.01)
        during = len(passes)
    assert during >= 2
    assert passes[-1] == "bq:p:d" and len(passes) >= during + 1  # and one at the end
