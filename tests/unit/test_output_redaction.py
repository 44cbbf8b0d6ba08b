"""Secrets stay out of every output: the one redaction step before the sinks (rows, dead-letter
messages), the summary's reasons, the report's data and a failed run's error line and logs."""

from __future__ import annotations

import io
import json
import logging
from datetime import UTC, datetime

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.testing.test_pipeline import TestPipeline

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.results.load import load_run
from rt4chart.pipeline.results.summary import read_table, summarise
from rt4chart.pipeline.sinks.fanout import Sinks, WriteTables, key_envs, redact_row
from rt4chart.schemas.columns import to_dict
from rt4chart.schemas.rows import DeadLetterRow
from rt4chart.schemas.tables import TABLES, arrow_schema
from rt4chart.transforms.judges import runtime
from rt4chart.transforms.judges.contract import JudgeSpec, judge_keys
from rt4chart.transforms.judges.openai import secret_key

from testutil import answer_row

KEY = "sk-proj-abcdefghijklmnop0123456789"
OWN_KEY = "custom-key-value-0123456789"  # not key-shaped: only known as a configured value
DAY = datetime(2024, 6, 1, tzinfo=UTC)


def _dead(reason: str, raw: str, trace_id: str = "t", stage: str = "judge") -> DeadLetterRow:
    return DeadLetterRow(stage=stage, reason=reason, trace_id=trace_id, route="r", raw=raw,
                         received_at=DAY, dead_letter_id=trace_id * 8)


def test_reason_note_and_raw_are_redacted_and_nothing_else():
    row = _dead(f"HTTP 400: authorization: Bearer {KEY}", json.dumps({"meta": KEY}))
    clean = redact_row(row, ())
    assert KEY not in clean.reason and KEY not in clean.raw
    assert clean.reason == "HTTP 400: authorization: [REDACTED]"
    assert (clean.stage, clean.trace_id, clean.dead_letter_id) == (row.stage, row.trace_id,
                                                                   row.dead_letter_id)
    answer = answer_row(reason=f"failed for {OWN_KEY}", trace_id=OWN_KEY)
    assert redact_row(answer, (OWN_KEY,)).reason == "failed for [REDACTED]"
    assert redact_row(answer, (OWN_KEY,)).trace_id == OWN_KEY  # ids are not free text
    plain = answer_row(reason=None)
    assert redact_row(plain, (OWN_KEY,)) is plain


def test_the_judge_key_variable_is_a_secret_of_the_sinks():
    assert key_envs(JudgeSpec.of("openai", {"api_key_env": "MY_KEY"})) == ("MY_KEY",)
    assert key_envs(JudgeSpec.of("offline")) == ()
    # A confirming judge's key variable too (--confirm-judge), each variable once.
    assert key_envs(JudgeSpec.of("openai", {"api_key_env": "MY_KEY"}), None,
                    JudgeSpec.of("openai", {"api_key_env": "SECOND_KEY"}),
                    JudgeSpec.of("openai", {"api_key_env": "MY_KEY"})) == ("MY_KEY", "SECOND_KEY")


PUBLISHED: list = []  # what the fake topic received (the test runner runs in this process)


class _FakePublish(beam.PTransform):
    """Stands in for WriteToPubSub: keeps the messages."""

    def __init__(self, topic: str, with_attributes: bool = False):
        super().__init__()
        self.topic = topic

    def expand(self, messages):
        return messages | beam.ParDo(_Keep())


class _Keep(beam.DoFn):
    def process(self, message):
        PUBLISHED.append(message)


def test_write_tables_redacts_files_and_dead_letter_messages(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_JUDGE_KEY", OWN_KEY)
    rows = [_dead(f"echo {OWN_KEY}", f'{{"k": "{KEY}"}}', "a"),
            _dead("no key here", '{"trace_id": "b"}', "b")]
    out = tmp_path / "out"
    sinks = Sinks(str(out), key_envs=("MY_JUDGE_KEY",), dead_letter_topic="projects/p/topics/d")
    PUBLISHED.clear()
    monkeypatch.setattr(beam.io, "WriteToPubSub", _FakePublish)
    with TestPipeline() as p:
        dead = p | "Dead" >> beam.Create(rows)
        answers = p | "Answers" >> beam.Create([answer_row(reason=f"Bearer {KEY}")])
        {"dead_letters": dead, "answers": answers} | WriteTables(sinks)
    for path in out.rglob("*.parquet"):
        data = path.read_bytes()
        assert KEY.encode() not in data and OWN_KEY.encode() not in data
    written = {d["trace_id"]: d for d in read_table(str(out), "dead_letters").to_pylist()}
    assert written["a"]["reason"] == "echo [REDACTED]"
    assert written["a"]["raw"] == '{"k": "[REDACTED]"}'
    assert written["b"]["reason"] == "no key here"
    assert read_table(str(out), "answers").to_pylist()[0]["reason"] == "Bearer [REDACTED]"
    assert len(PUBLISHED) == 2
    for msg in PUBLISHED:
        assert OWN_KEY not in json.dumps(msg.attributes) and KEY.encode() not in msg.data
    assert {m.attributes["reason"] for m in PUBLISHED} == {"echo [REDACTED]", "no key here"}


def _unredacted_run(out) -> None:
    """Tables written without the sink (an older rt4chart, another tool): keys in them."""
    (out / "dead_letters").mkdir(parents=True)
    rows = [to_dict(_dead(f"bad: api_key={KEY}", f'{{"auth": "Bearer {KEY}"}}', stage="validate"))]
    pq.write_table(pa.Table.from_pylist(rows, schema=arrow_schema(TABLES["dead_letters"])),
                   out / "dead_letters" / "part-00000-of-00001.parquet")
    (out / "answers").mkdir()
    answers = [to_dict(answer_row(reason=f"HTTP 401 for {KEY}", status="incomplete",
                                  label=None))]
    pq.write_table(pa.Table.from_pylist(answers, schema=arrow_schema(TABLES["answers"])),
                   out / "answers" / "part-00000-of-00001.parquet")
    (out / "summary.json").write_text(json.dumps({
        "judge": "openai", "judge_model": "m", "prompt_hash": "h",
        "dead_letter_reasons": {f"judge: api_key={KEY}": 1}}))


def test_the_summary_and_the_report_data_redact_what_they_read(tmp_path):
    out = tmp_path / "old"
    _unredacted_run(out)
    summary = summarise(str(out), 1.0)
    assert list(summary.dead_letter_reasons) == ["validate: bad: api_key=[REDACTED]"]
    assert KEY not in "\n".join(summary.lines())
    run = load_run(str(out))
    assert KEY not in json.dumps([run.answers, run.dead_letters, run.summary], default=str)
    assert run.answers[0]["reason"] == "HTTP 401 for [REDACTED]"


def test_a_failed_runs_error_line_and_log_lines_are_redacted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OWN_KEY)

    class Boom(RuntimeError):
        pass

    try:
        try:
            raise ConnectionError(f"endpoint said: {OWN_KEY}")
        except ConnectionError as exc:
            raise Boom(f"judge failed: {OWN_KEY}\n  more lines\n") from exc
    except Boom as exc:
        line = cli.main_error(exc)
        record = logging.LogRecord("rt4chart", logging.ERROR, __file__, 1, "failed %s",
                                   (OWN_KEY,), (Boom, exc, exc.__traceback__))
    assert line == "Boom: judge failed: [REDACTED]"
    formatted = cli.RedactingFormatter(cli.LOG_FORMAT).format(record)
    assert OWN_KEY not in formatted and "Traceback" in formatted
    assert cli.main_error(RuntimeError()) == "RuntimeError"


def test_write_tables_redacts_a_key_the_workers_judge_read_from_secret_manager(tmp_path,
                                                                               monkeypatch):
    """No variable holds it: the judge holds it, and its runtime tells the sinks."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(secret_key, "access_secret", lambda name: OWN_KEY)
    spec = JudgeSpec.of("openai", {"base_url": "http://127.0.0.1:9/v1", "probe": "false",
                                   "api_key_secret": "projects/p/secrets/only-here"})
    worker = runtime.acquire(runtime.runtime_handle())  # this process's, as the stages'
    worker.judge(spec)  # as a judge stage's setup builds it
    out = tmp_path / "out"
    with TestPipeline() as p:
        dead = p | "Dead" >> beam.Create([_dead(f"echo {OWN_KEY}", f'{{"k": "{OWN_KEY}"}}')])
        {"dead_letters": dead} | WriteTables(Sinks(str(out)))
    written = read_table(str(out), "dead_letters").to_pylist()
    assert [(d["reason"], d["raw"]) for d in written] == [
        ("echo [REDACTED]", '{"k": "[REDACTED]"}')]


def test_the_launchers_lines_redact_the_key_variable_its_run_names(monkeypatch):
    monkeypatch.setenv("MY_JUDGE_KEY", OWN_KEY)
    handler = logging.StreamHandler(io.StringIO())
    handler.setFormatter(cli.RedactingFormatter(cli.LOG_FORMAT))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        assert cli.main_error(RuntimeError(OWN_KEY)) == f"RuntimeError: {OWN_KEY}"
        cli.use_keys(judge_keys(JudgeSpec.of("openai", {"api_key_env": "MY_JUDGE_KEY"})))
        logging.getLogger("rt4chart.test").warning("endpoint said %s", OWN_KEY)
        assert cli.main_error(RuntimeError(OWN_KEY)) == "RuntimeError: [REDACTED]"
    finally:
        root.removeHandler(handler)
    logged = handler.stream.getvalue()
    assert OWN_KEY not in logged and "endpoint said [REDACTED]" in logged
