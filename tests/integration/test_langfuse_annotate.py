"""Write-back to Langfuse (tests/fakes/langfuse_server.py: Langfuse's documented scores API on
127.0.0.1; the real server cannot run here). The example traces, as a Langfuse export, are
audited with the offline judge and `--annotate langfuse`; the scores the fake then holds are
checked against the run's tables, written again (`annotate langfuse`, updated in place, never
duplicated), through 429s, with bad keys, with a refused score, and per claim on the
generation observations the export holds.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
from pathlib import Path

import httpx
import pytest

from rt4chart.pipeline.annotate.langfuse import LangfuseClient, LangfuseError, LangfuseTarget
from rt4chart.pipeline.annotate.langfuse_write import score_id, write_back
from rt4chart.pipeline.annotate.verdicts import TraceVerdict, Verdicts, load_verdicts
from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.cli.annotate import StreamWriteBack
from rt4chart.pipeline.results.load import table_reader
from rt4chart.pipeline.run import jobs

from langfuse_server import PUBLIC_KEY, SECRET_KEY, LangfuseServer
from span_export import langfuse_export, write_format
from testutil import load_traces, read_tables

KEYS = {"LANGFUSE_PUBLIC_KEY": PUBLIC_KEY, "LANGFUSE_SECRET_KEY": SECRET_KEY}


@pytest.fixture(scope="module")
def server():
    with LangfuseServer() as fake:
        yield fake


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    for name in ("LANGFUSE_HOST", "LANGFUSE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _main(*argv: str) -> tuple[int, str, str]:
    with contextlib.redirect_stdout(io.StringIO()) as out, \
            contextlib.redirect_stderr(io.StringIO()) as err:
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def audited(server, tmp_path_factory):
    """The examples as a Langfuse export, audited with `--annotate langfuse`; (export, out,
    the audit's exit code and stdout, the scores then held)."""
    tmp = tmp_path_factory.mktemp("run")
    records = load_traces(Path(jobs.example_traces()))
    path = write_format("langfuse", records, tmp / "in")
    out = tmp / "out"
    with pytest.MonkeyPatch.context() as mp:
        for name, value in KEYS.items():
            mp.setenv(name, value)
        code, stdout, _ = _main("audit", str(path), "--out", str(out), "--judge", "offline",
                                "--annotate", "langfuse", "--langfuse-host", server.url)
    return langfuse_export(records), out, code, stdout, server.scores()


def _by_name(scores: list[dict]) -> dict[tuple[str, str], dict]:
    return {(s["traceId"], s["name"]): s for s in scores if s.get("observationId") is None}


def test_audit_scores_every_trace_from_its_tables(audited):
    _, out, code, stdout, scores = audited
    assert code == 0
    tables = read_tables(out)
    answers = {a["trace_id"]: a for a in tables["answers"]}
    got = _by_name(scores)
    with_p = [a for a in answers.values() if a["p_hallucinated"] is not None]
    assert len(scores) == len(answers) + len(with_p)
    assert f"annotate langfuse: {len(answers)} trace(s) scored ({len(scores)} score(s)" in stdout
    assert "0 failed" in stdout
    for tid, answer in answers.items():
        label = got[(tid, "rt4chart_label")]
        assert label["dataType"] == "CATEGORICAL" and label["source"] == "API"
        assert label["stringValue"] == (answer["label"] or "incomplete")
        assert label["id"] == score_id(tid, "rt4chart_label")
        assert label["metadata"]["judge_model"] == answer["judge_model"]
        assert label["metadata"]["prompt_hash"] == answer["prompt_hash"]
        flagged = [c for c in tables["claims"] if c["trace_id"] == tid and c["label"] != "ENT"]
        for claim in flagged:
            assert f"[{claim['label']}] " in label["comment"]
            assert " ".join(claim["claim"].split())[:100] in label["comment"]
            for ev in claim["evidence"]:
                assert " ".join(ev["text"].split())[:100] in label["comment"]
        if answer["p_hallucinated"] is not None:
            p = got[(tid, "rt4chart_p_hallucinated")]
            assert p["dataType"] == "NUMERIC"
            assert p["value"] == pytest.approx(answer["p_hallucinated"])
    assert {s["stringValue"] for s in scores if s["dataType"] == "CATEGORICAL"} >= {"CON"}


def test_a_second_write_back_updates_the_scores_in_place(server, audited, monkeypatch):
    _, out, _, _, first = audited
    tampered = next(s for s in first if s["name"] == "rt4chart_label")
    server.state.scores[tampered["id"]]["stringValue"] = "ENT-edited"
    numeric = next(s for s in first if s["name"] == "rt4chart_p_hallucinated")
    server.state.scores[numeric["id"]]["value"] = 42.0
    for host in (["--host", server.url], []):  # the second time, the host from the SDK's env
        monkeypatch.setenv("LANGFUSE_BASE_URL", server.url if not host else "http://127.0.0.1:9")
        code, stdout, _ = _main("annotate", "langfuse", str(out), *host)
        assert code == 0 and f"at {server.url}" in stdout, stdout
    again = {s["id"]: s for s in server.scores()}
    assert sorted(again) == sorted(s["id"] for s in first)  # the same scores, no new ones
    assert again[tampered["id"]]["stringValue"] == tampered["stringValue"]
    assert again[numeric["id"]]["value"] == pytest.approx(numeric["value"])
    # As the public API lists them.
    page = httpx.get(f"{server.url}/api/public/scores", params={"limit": 1000},
                     auth=(PUBLIC_KEY, SECRET_KEY)).json()
    assert page["meta"]["totalItems"] == len(first)


def test_429_is_retried_after_its_retry_after(server, audited):
    _, out, _, _, first = audited
    before = len(server.state.requests)
    # Longer than the back-off without it (0.5 s, then 1 s): the wait is Retry-After's.
    server.rate_limit(2, retry_after_s=1.2)
    code, stdout, _ = _main("annotate", "langfuse", str(out), "--host", server.url)
    assert code == 0 and "0 failed" in stdout
    assert len(server.scores()) == len(first)
    posts = [r for r in server.state.requests[before:] if r["method"] == "POST"]
    assert len(posts) == len(first) + 2  # each 429 answered once more, nothing else resent
    by_score: dict[str, list[float]] = {}
    for r in posts:
        by_score.setdefault(json.loads(r["body"])["id"], []).append(r["at"])
    retried = [times for times in by_score.values() if len(times) > 1]
    assert sum(len(t) - 1 for t in retried) == 2
    assert all(b - a >= 1.2 for times in retried for a, b in zip(times, times[1:], strict=False))


def test_a_trace_that_keeps_failing_does_not_lose_the_others(server, audited):
    _, out, _, _, first = audited
    verdicts = load_verdicts(table_reader(str(out)))
    # One trace at a time, so that both 503s go to the first trace's first score.
    target = LangfuseTarget(server.url, attempts=2, backoff_s=0.01, max_in_flight=1)
    server.fail(2, status=503)
    with LangfuseClient(target) as client:
        result, written = write_back(verdicts, target, client)
    everyone = [*verdicts.ready, *verdicts.undecided_verdicts]
    (failed,) = result.failed
    assert failed == everyone[0].trace_id and "503" in result.failed[failed]
    assert result.annotated == len(everyone) - 1 == len(written)
    assert len(server.scores()) == len(first)  # the others rewritten, none added


def test_a_refused_score_reports_langfuses_message_and_is_not_retried(server, audited):
    _, out, _, _, _ = audited
    verdicts = load_verdicts(table_reader(str(out)))
    good = verdicts.ready[0]
    bad = TraceVerdict({**good.answer, "trace_id": ""}, good.claims)  # no traceId
    target = LangfuseTarget(server.url, backoff_s=0.01)
    before = len(server.state.requests)
    with LangfuseClient(target) as client:
        result, written = write_back(Verdicts([bad, good]), target, client)
    assert list(result.failed) == [""]
    reason = result.failed[""]
    assert "400" in reason and "Invalid request data" in reason and "traceId: Required" in reason
    assert [v.trace_id for v in written] == [good.trace_id]
    posts = [r for r in server.state.requests[before:] if r["method"] == "POST"]
    n_good = 1 + (good.answer["p_hallucinated"] is not None)  # label, p_hallucinated
    assert len(posts) == 1 + n_good  # the refused score once, then the next trace's


def test_every_trace_refused_exits_1_and_lists_them(server, audited):
    _, out, _, _, first = audited
    n = len(read_tables(out)["answers"])
    issue = {"message": "Invalid request data",
             "error": [{"path": ["value"], "message": "Expected string"}]}
    server.fail(n, status=400, body=issue)  # each trace's first score; never retried
    code, stdout, stderr = _main("annotate", "langfuse", str(out), "--host", server.url)
    assert code == 1
    assert ": 0 trace(s) scored" in stdout and f"{n} failed" in stdout
    assert f"{n} trace(s) not scored in Langfuse" in stderr
    assert stderr.count("400 Bad Request: Invalid request data (value: Expected string)") == min(
        n, 5)
    assert server.state.faults == []


def test_bad_keys_exit_1_without_showing_them(server, audited, monkeypatch, caplog):
    _, out, _, _, _ = audited
    wrong = "sk-lf-00000000-wrong-secret-9999999999"
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", wrong)
    with caplog.at_level(logging.DEBUG):
        code, stdout, stderr = _main("annotate", "langfuse", str(out), "--host", server.url,
                                     "-v")
    assert code == 1
    assert "401" in stderr and "Invalid credentials" in stderr
    for text in (stdout, stderr, caplog.text):
        assert wrong not in text and PUBLIC_KEY not in text


def test_bad_keys_stop_the_traces_not_started(server, audited):
    _, out, _, _, _ = audited
    verdicts = load_verdicts(table_reader(str(out)))
    assert len(verdicts.ready) > 2
    target = LangfuseTarget(server.url, max_in_flight=2)
    before = len(server.state.requests)
    with LangfuseClient(target, secret_key="sk-lf-not-the-secret-0000000") as client, \
            pytest.raises(LangfuseError, match="401"):
        write_back(verdicts, target, client)
    assert len(server.state.requests) - before <= 2  # one per trace in flight, then none


def test_missing_keys_are_a_usage_error(server, audited, monkeypatch):
    _, out, _, _, _ = audited
    monkeypatch.delenv("LANGFUSE_SECRET_KEY")
    code, _, stderr = _main("annotate", "langfuse", str(out), "--host", server.url)
    assert code == 2 and "LANGFUSE_SECRET_KEY" in stderr


def test_claim_scores_on_the_generation_observations(server, audited):
    export, out, _, _, first = audited
    claims = read_tables(out)["claims"]
    traces = [t for t in export["data"] if any(c["trace_id"] == t["id"] for c in claims)]
    unseeded = traces[-1]["id"]
    generations = {t["id"]: next(o["id"] for o in t["observations"]
                                 if o["type"] == "GENERATION") for t in traces[:-1]}
    server.seed(*({"id": oid, "traceId": tid, "type": "GENERATION"}
                  for tid, oid in generations.items()))
    before = len(server.state.requests)
    # Twice, the second time as an older server without the v2 observations API: still one
    # score per claim.
    for v2 in (True, False):
        server.state.v2_observations = v2
        code, stdout, _ = _main("annotate", "langfuse", str(out), "--host", server.url,
                                "--claim-scores")
        assert code == 0
        assert "1 without a generation observation (no claim scores)" in stdout
    server.state.v2_observations = True
    paths = {r["path"] for r in server.state.requests[before:] if r["method"] == "GET"}
    assert paths == {"/api/public/v2/observations", "/api/public/observations"}
    per_claim = [s for s in server.scores() if s["observationId"] is not None]
    expected = [c for c in claims if c["trace_id"] in generations]
    assert len(per_claim) == len(expected)
    assert len(server.scores()) == len(first) + len(expected)
    by_key = {(s["traceId"], s["metadata"]["claim_index"]): s for s in per_claim}
    for claim in expected:
        score = by_key[(claim["trace_id"], claim["claim_index"])]
        assert score["observationId"] == generations[claim["trace_id"]]
        assert score["name"] == "rt4chart_claim"
        assert score["stringValue"] == (claim["label"] or "incomplete")
        assert " ".join(claim["claim"].split())[:100] in score["comment"]
    assert not any(s["traceId"] == unseeded for s in per_claim)


def test_stream_write_back_writes_only_new_verdicts(server, audited):
    _, out, _, _, first = audited
    before = len(server.state.requests)
    back = StreamWriteBack(LangfuseTarget(server.url), str(out))
    one, two = back.run_once(), back.run_once()
    assert one.annotated > 0 and one.failed == {}
    assert two.annotated == 0 and two.scores == 0
    posts = [r for r in server.state.requests[before:] if r["method"] == "POST"]
    assert len(posts) == one.scores


def test_audit_without_keys_stops_before_auditing(server, monkeypatch, tmp_path):
    monkeypatch.delenv("LANGFUSE_PUBLIC_KEY")
    before = len(server.state.requests)
    code, _, stderr = _main("audit", jobs.example_traces(), "--out", str(tmp_path / "out"),
                            "--judge", "offline", "--annotate", "langfuse",
                            "--langfuse-host", server.url)
    assert code == 2 and "LANGFUSE_PUBLIC_KEY" in stderr
    assert not (tmp_path / "out" / "answers").exists()
    assert len(server.state.requests) == before
