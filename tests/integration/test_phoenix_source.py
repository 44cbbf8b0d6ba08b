"""`audit --input-format phoenix-api` against a real Phoenix server (20.26): spans sent to it
as OTLP (protobuf over HTTP, as an instrumented application's exporter sends them), read back
through its REST API, audited; compared with auditing the same spans from an OTLP file. Each
test uses a project of its own, so that the tests do not see each other's spans.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from faulty_proxy import FaultyProxy
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.report.packing import unpacked

from phoenix_server import PhoenixServer, free_port
from span_export import example_records, hex_id, otlp_lines, otlp_request, trace_spans
from testutil import read_tables

INGEST_TIMEOUT_S = 60.0
ID_OPTIONS = ["--trace-id-attribute", "metadata.trace_id"]
ROUTE_OPTIONS = ["--route-attribute", "metadata.route"]
WHEN = {"audited_at", "emitted_at"}  # when, not what


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    server = PhoenixServer.start(tmp_path_factory.mktemp("phoenix"))
    try:
        yield server
    finally:
        server.stop()


def _send(url: str, records: list[dict], project: str) -> None:
    """Each record's spans as one OTLP request (service.name = its route) into `project`
    (`openinference.project.name`, how an application picks its Phoenix project); waits until
    Phoenix has them all."""
    count = 0
    for record in records:
        spans = trace_spans(record)
        request = otlp_request(spans, record.get("route", "default"))
        request.resource_spans[0].resource.attributes.append(KeyValue(
            key="openinference.project.name", value=AnyValue(string_value=project)))
        response = httpx.post(f"{url}/v1/traces", content=request.SerializeToString(),
                              headers={"content-type": "application/x-protobuf"}, timeout=30)
        assert response.status_code == 200, response.text
        count += len(spans)
    _wait_for(url, project, count)


def _wait_for(url: str, project: str, count: int) -> None:
    deadline = time.monotonic() + INGEST_TIMEOUT_S
    seen = -1
    while time.monotonic() < deadline:
        answer = httpx.get(f"{url}/v1/projects/{project}/spans", params={"limit": 1000})
        if answer.status_code == 200:
            seen = len(answer.json()["data"])
            if seen >= count:
                return
        time.sleep(0.3)
    raise TimeoutError(f"Phoenix has {seen} of the {count} spans sent to {project}")


def _records(prefix: str, start: datetime, step: timedelta) -> list[dict]:
    """The valid example traces under new ids, the i-th ending at `start + i * step`."""
    valid = [r for r in example_records() if r.get("answer") is not None and r.get("contexts")]
    return [{**r, "trace_id": f"{prefix}-{i}",
             "timestamp": (start + i * step).strftime("%Y-%m-%dT%H:%M:%SZ")}
            for i, r in enumerate(valid)]


def _audit(out: Path, *options: str, code: int = 0) -> dict[str, list[dict]]:
    got = cli.main(["audit", "--out", str(out), "--judge", "offline", *options])
    assert got == code
    return read_tables(out) if code == 0 else {}


def _api(url: str, project: str, *options: str) -> list[str]:
    return ["--input-format", "phoenix-api", "--phoenix-endpoint", url,
            "--phoenix-project", project, *options]


def _rows(rows: list[dict]) -> list[dict]:
    return sorted(({k: v for k, v in r.items() if k not in WHEN} for r in rows),
                  key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _ids(tables: dict[str, list[dict]]) -> set[str]:
    return {a["trace_id"] for a in tables["answers"]}


def _dead(rows: list[dict]) -> list[tuple]:
    return sorted((d["stage"], d["trace_id"], d["reason"]) for d in rows)


def test_the_rest_api_has_what_the_reader_asks_for(phoenix):
    """The server's own OpenAPI document: the spans endpoint and its parameters, and a span
    without resource attributes (which is why the route comes from the project)."""
    spec = httpx.get(f"{phoenix.url}/openapi.json").json()
    params = {p["name"] for p in spec["paths"]["/v1/projects/{project_identifier}/spans"][
        "get"]["parameters"]}
    assert {"start_time", "end_time", "cursor", "limit", "parent_id", "trace_id", "sort",
            "order"} <= params
    span = spec["components"]["schemas"]["Span"]["properties"]
    assert {"context", "parent_id", "start_time", "end_time", "attributes"} <= span.keys()
    assert not {"resource", "resource_attributes"} & span.keys()


def test_phoenix_api_audits_like_the_otlp_file_of_the_same_spans(phoenix, tmp_path):
    records = example_records()  # with the invalid one: no retriever span, no answer
    _send(phoenix.url, records, "same-spans")
    otlp = tmp_path / "spans.otlp.json"
    otlp.write_text("".join(line + "\n" for line in otlp_lines(records)))
    options = [*ID_OPTIONS, *ROUTE_OPTIONS, "--write-traces"]
    from_file = _audit(tmp_path / "file", str(otlp), *options)
    from_api = _audit(tmp_path / "api", *_api(phoenix.url, "same-spans", "--phoenix-page-size",
                                              "2"), *options)

    for table in ("answers", "claims", "traces", "route_rates"):
        assert _rows(from_api[table]) == _rows(from_file[table]), table
    assert _dead(from_api["dead_letters"]) == _dead(from_file["dead_letters"])
    assert {a["route"] for a in from_api["answers"]} == {
        r["route"] for r in records if r.get("answer") is not None}
    assert len(from_api["answers"]) == len(records) - 1
    summary = json.loads((tmp_path / "api" / "summary.json").read_text())
    assert summary["input_format"] == "openinference"
    assert summary["inputs"] == [str(tmp_path / "api" / "_phoenix" / "spans.jsonl")]
    read = json.loads((tmp_path / "api" / "_phoenix" / "read.json").read_text())
    assert (read["spans"], read["traces"]) == (sum(len(trace_spans(r)) for r in records),
                                               len(records))
    # The report finds the traces in the spans kept with the run (no --traces needed).
    assert cli.main(["report", str(tmp_path / "api"), "--out", str(tmp_path / "r.html")]) == 0
    assert records[0]["question"] in unpacked((tmp_path / "r.html").read_text())


def test_without_a_route_attribute_the_route_is_the_project(phoenix, tmp_path):
    """Phoenix drops service.name (a resource attribute) at ingestion: the route is the
    project's name, for every trace, where the OTLP file gives each its service.name."""
    records = _records("route", datetime(2024, 6, 1, tzinfo=UTC), timedelta(minutes=1))
    _send(phoenix.url, records, "support-desk")
    tables = _audit(tmp_path / "api", *_api(phoenix.url, "support-desk"), *ID_OPTIONS)
    assert {a["route"] for a in tables["answers"]} == {"support-desk"}
    assert _ids(tables) == {r["trace_id"] for r in records}
    assert {r["route"] for r in records} != {"support-desk"}  # the spans said otherwise


def test_since_until_read_the_traces_whose_root_starts_in_the_window(phoenix, tmp_path):
    start = datetime(2024, 7, 1, tzinfo=UTC)
    records = _records("window", start, timedelta(hours=1))  # root starts 3 s before its end
    _send(phoenix.url, records, "windows")
    since, until = start + timedelta(minutes=30), start + timedelta(hours=2, minutes=30)
    tables = _audit(tmp_path / "w", *_api(phoenix.url, "windows", "--since", since.isoformat(),
                                          "--until", until.isoformat()), *ID_OPTIONS)
    assert _ids(tables) == {"window-1", "window-2"}
    # A bound on a root's start time, inclusive: the root of window-1 starts at 00:59:57.
    edge = (start + timedelta(hours=1, seconds=-3)).strftime("%Y-%m-%dT%H:%M:%S")  # no offset
    tables = _audit(tmp_path / "edge", *_api(phoenix.url, "windows", "--since", edge,
                                             "--until", until.isoformat()), *ID_OPTIONS)
    assert _ids(tables) == {"window-1", "window-2"}
    tables = _audit(tmp_path / "open", *_api(phoenix.url, "windows", "--since", edge),
                    *ID_OPTIONS)
    assert _ids(tables) == {f"window-{i}" for i in range(1, len(records))}


def test_watermark_reads_only_new_traces_and_a_failed_run_does_not_move_it(phoenix, tmp_path):
    out, project = tmp_path / "nightly", "nightly"
    day = datetime(2024, 8, 1, tzinfo=UTC)
    first = _records("night1", day, timedelta(minutes=5))
    _send(phoenix.url, first, project)
    watermark = [*_api(phoenix.url, project, "--watermark"), *ID_OPTIONS]
    assert _ids(_audit(out, *watermark)) == {r["trace_id"] for r in first}
    mark_1 = json.loads((out / "_phoenix" / "read.json").read_text())["watermark"]
    # the newest root: the last trace's, ending at 00:20:00, starting 3 s before
    assert mark_1 == {"start_time": "2024-08-01T00:19:57.000000000Z",
                      "start_ns": 1722471597 * 10**9, "trace_ids": [hex_id(first[-1]["trace_id"],
                                                                           32)]}

    second = _records("night2", day + timedelta(days=1), timedelta(minutes=5))
    _send(phoenix.url, second, project)
    assert _ids(_audit(out, *watermark, "--overwrite")) == {r["trace_id"] for r in second}
    record_2 = (out / "_phoenix" / "read.json").read_text()
    answers_2 = _rows(read_tables(out)["answers"])

    third = _records("night3", day + timedelta(days=2), timedelta(minutes=5))
    _send(phoenix.url, third, project)
    # Every page of the traces' spans answers 503: the run fails, OUT stays as it was.
    with FaultyProxy(phoenix.url, lambda n, path, query: "trace_id" in query) as proxy:
        # another address than the last run's: its watermark is refused (a usage error)
        _audit(out, *_api(proxy.url, project, "--watermark"), *ID_OPTIONS, "--overwrite",
               code=2)
        assert not any(s.failed for s in proxy.seen)
    with FaultyProxy(phoenix.url, lambda n, path, query: "trace_id" in query) as proxy:
        record = json.loads(record_2)
        record["endpoint"] = proxy.url  # the same server behind another address
        (out / "_phoenix" / "read.json").write_text(json.dumps(record))
        _audit(out, *_api(proxy.url, project, "--watermark"), *ID_OPTIONS, "--overwrite",
               code=1)
        assert sum(s.failed for s in proxy.seen) == 5  # the first trace page, 5 attempts
    assert json.loads((out / "_phoenix" / "read.json").read_text())["watermark"] == record[
        "watermark"]
    assert _rows(read_tables(out)["answers"]) == answers_2
    (out / "_phoenix" / "read.json").write_text(record_2)

    assert _ids(_audit(out, *watermark, "--overwrite")) == {r["trace_id"] for r in third}
    # Nothing new: nothing to audit (exit 1), the watermark stays where it was.
    mark_3 = json.loads((out / "_phoenix" / "read.json").read_text())["watermark"]
    _audit(out, *watermark, "--overwrite", code=1)
    assert json.loads((out / "_phoenix" / "read.json").read_text())["watermark"] == mark_3


def test_a_page_that_fails_is_retried_and_the_key_is_never_shown(phoenix, tmp_path, capsys,
                                                                 monkeypatch):
    records = _records("retry", datetime(2024, 9, 1, tzinfo=UTC), timedelta(minutes=1))
    _send(phoenix.url, records, "retries")
    key = "phx-secret-key-0123456789abcdef"
    monkeypatch.setenv("PHOENIX_API_KEY", key)
    # The second root page fails twice, then passes: retried, all traces read.
    flaky_count: list[int] = []

    def flaky(n: int, path: str, query: dict) -> bool:
        if "parent_id" in query and "cursor" in query:
            flaky_count.append(1)
            return len(flaky_count) <= 2
        return False

    with FaultyProxy(phoenix.url, flaky) as proxy:
        tables = _audit(tmp_path / "ok", *_api(proxy.url, "retries", "--phoenix-page-size",
                                               "2"), *ID_OPTIONS, "-v")
    assert _ids(tables) == {r["trace_id"] for r in records}
    assert sum(s.failed for s in proxy.seen) == 2
    assert {s.authorization for s in proxy.seen} == {f"Bearer {key}"}
    # Always failing: the run fails, naming Phoenix and the partial read, and writes nothing.
    with FaultyProxy(phoenix.url, lambda n, path, query: "cursor" in query) as proxy:
        _audit(tmp_path / "bad", *_api(proxy.url, "retries", "--phoenix-page-size", "2"),
               *ID_OPTIONS, "-v", code=1)
    err = capsys.readouterr().err
    assert "run failed: PhoenixReadError: reading spans from Phoenix (project 'retries'" in err
    assert "a partial read is never audited" in err and "503" in err
    assert key not in err
    assert not (tmp_path / "bad").exists()


def test_a_bad_project_or_endpoint_is_a_usage_error(phoenix, tmp_path, capsys):
    _audit(tmp_path / "p", *_api(phoenix.url, "no-such-project"), code=2)
    err = capsys.readouterr().err
    assert "error: Phoenix has no project 'no-such-project'" in err and "default" in err
    closed = f"http://127.0.0.1:{free_port()}"
    _audit(tmp_path / "e", *_api(closed, "default"), code=2)
    assert f"error: cannot read from Phoenix at {closed}" in capsys.readouterr().err
    _audit(tmp_path / "f", "x.jsonl", *_api(phoenix.url, "default"), code=2)
    assert "give no input files" in capsys.readouterr().err


def _annotate(url: str, notes: list[dict]) -> None:
    answer = httpx.post(f"{url}/v1/span_annotations", params={"sync": "true"},
                        json={"data": notes}, timeout=30)
    assert answer.status_code == 200, answer.text


def _note(span_id: str, label: str, name: str = "review", who: str = "alice") -> dict:
    return {"span_id": span_id, "name": name, "annotator_kind": "HUMAN", "identifier": who,
            "result": {"label": label}}


def test_eval_gold_compares_the_judge_with_reviewers_labels_in_phoenix(phoenix, tmp_path,
                                                                       capsys):
    """Reviewers' span annotations posted through Phoenix's REST API, read back by
    `eval --gold phoenix:review` and matched to a phoenix-api run's verdicts."""
    records = _records("review", datetime(2024, 10, 1, tzinfo=UTC), timedelta(minutes=1))
    _send(phoenix.url, records, "reviews")
    run = tmp_path / "run"
    labels = {a["trace_id"]: a["label"] for a in _audit(run, *_api(phoenix.url, "reviews"))[
        "answers"]}
    roots = {s["context"]["trace_id"]: s["context"]["span_id"] for s in httpx.get(
        f"{phoenix.url}/v1/projects/reviews/spans",
        params={"parent_id": "null", "limit": 100}).json()["data"]}
    t0, t1, t2, t3, t4 = sorted(labels)
    opposite = {True: "faithful", False: "hallucinated"}
    _annotate(phoenix.url, [
        _note(roots[t0], labels[t0]),                           # agrees, with a class
        _note(roots[t1], opposite[labels[t1] != "ENT"]),        # disagrees
        _note(roots[t2], labels[t2]),                           # two reviewers who differ
        _note(roots[t2], opposite[labels[t2] != "ENT"], who="bob"),
        _note(roots[t3], "maybe"),                              # unknown: counted, not guessed
        _note(roots[t4], "CON", name="other"),                  # another name: not a review
    ])
    capsys.readouterr()
    code = cli.main(["eval", "--gold", "phoenix:review", "--run", str(run), "--phoenix-endpoint",
                     phoenix.url, "--phoenix-project", "reviews", "--out", str(tmp_path / "e")])
    assert code == 0
    report = json.loads((tmp_path / "e" / "agreement.json").read_text())
    assert (report["compared"], report["unreviewed"], report["conflicting"]) == (2, 1, 1)
    assert report["unknown_labels"] == {"maybe": 1} and report["not_in_phoenix"] == 0
    assert report["conflicting_traces"] == [t2]
    assert report["agreement"]["value"] == 0.5
    assert report["class_agreement"]["compared"] == 1 + (labels[t1] != "ENT")
    assert report["class_agreement"]["value"] == 1 / report["class_agreement"]["compared"]
    out = capsys.readouterr().out
    assert "2 answer(s) compared" in out and "'maybe' x1" in out

    # A run whose trace ids are not OTel ids: nothing to find in Phoenix, exit 1.
    other = tmp_path / "jsonl"
    _audit(other, "--example")
    code = cli.main(["eval", "--gold", "phoenix:review", "--run", str(other),
                     "--phoenix-endpoint", phoenix.url, "--phoenix-project", "reviews"])
    assert code == 1
    out = capsys.readouterr().out
    assert "0 answer(s) compared" in out and "5 not found in Phoenix" in out
