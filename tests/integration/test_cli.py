"""The `rt4chart audit` command on files: examples, RAGTruth, Parquet, dead letters, exit codes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from testutil import load_traces, write_jsonl


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _doc_texts(record: dict) -> dict[str, str]:
    out = {}
    for i, c in enumerate(record["contexts"]):
        if isinstance(c, str):
            out[f"doc{i}"] = c
        else:
            out[c.get("doc_id") or f"doc{i}"] = c["text"]
    return out


def test_example_run_offline(audit, caplog):
    code, tables, out = audit("--example")
    assert code == 0
    assert "offline judge" in caplog.text and "lexical baseline" in caplog.text
    assert len(tables["answers"]) == 5
    (dead,) = tables["dead_letters"]
    # The example's broken record has no answer (its empty contexts alone would be audited).
    assert dead["stage"] == "validate" and "'answer'" in dead["reason"]
    assert dead["trace_id"] == "broken-example" and "broken-example" in dead["raw"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["traces"] == 5 and summary["dead_letters"] == 1
    assert summary["judge_model"] == "offline-lexical-v5"


def test_ragtruth_sample_gives_sane_tables(ragtruth_sample, audit):
    records = load_traces(ragtruth_sample)
    code, tables, _ = audit(str(ragtruth_sample))
    assert code == 0
    assert sorted(a["trace_id"] for a in tables["answers"]) == sorted(
        r["trace_id"] for r in records)
    by_id = {r["trace_id"]: r for r in records}
    for a in tables["answers"]:
        answer = by_id[a["trace_id"]]["answer"]
        assert a["status"] == "ok" and a["label"] in ("ENT", "CON", "NIC")
        assert a["hallucinated"] == (a["label"] != "ENT")
        assert a["hallucinated"] == bool(a["hallucinated_spans"])
        for span in a["hallucinated_spans"]:
            assert 0 <= span["char_start"] < span["char_end"] <= len(answer)
    for c in tables["claims"]:
        texts = _doc_texts(by_id[c["trace_id"]])
        answer = by_id[c["trace_id"]]["answer"]
        assert 0 <= c["answer_start"] < c["answer_end"] <= len(answer)
        # Evidence iff ENT or CON, but for a true absence (nothing to quote).
        unquoted = c["label"] == "NIC" or (c["kind"], c["label"]) == ("absence", "ENT")
        assert unquoted == (not c["evidence"])
        assert c["kind"] in ("fact", "source", "absence")
        for span in c["spans"]:  # claim spans lie within the claim's sentence
            assert c["answer_start"] <= span["char_start"] < span["char_end"] <= c["answer_end"]
        for ev in c["evidence"]:
            assert texts[ev["doc_id"]][ev["char_start"]:ev["char_end"]] == ev["text"]
    rates = tables["route_rates"]
    assert sum(r["traces"] for r in rates) == len(records)
    assert {r["route"] for r in rates} == {"ragtruth/qa", "ragtruth/summary", "ragtruth/data2txt"}
    for r in rates:
        assert r["rate_low"] <= r["rate"] <= r["rate_high"]
        assert r["hallucinated"] == r["con"] + r["nic"]
    calls = sum(c["calls"] for c in tables["costs"])
    assert calls == sum(a["judge_calls"] for a in tables["answers"])


def test_parquet_input_with_nested_contexts_and_timestamps(tmp_path, audit):
    rows = [
        {"trace_id": "p1", "route": "shop", "question": "Opening hours?",
         "timestamp": datetime(2024, 6, 1, 8, 0, tzinfo=UTC),
         "contexts": [{"doc_id": "hours", "text": "The shop opens at 9 am. It closes at 5 pm."}],
         "answer": "The shop opens at 9 am.", "metadata": [("team", "retail")]},
        {"trace_id": "p2", "route": "shop", "question": "",
         "timestamp": datetime(2024, 6, 2, 8, 0, tzinfo=UTC),
         "contexts": [{"doc_id": "hours", "text": "The shop opens at 9 am."}],
         "answer": "The shop opens at 11 am.", "metadata": []},
    ]
    schema = pa.schema([
        ("trace_id", pa.string()), ("route", pa.string()), ("question", pa.string()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("contexts", pa.list_(pa.struct([("doc_id", pa.string()), ("text", pa.string())]))),
        ("answer", pa.string()), ("metadata", pa.map_(pa.string(), pa.string())),
    ])
    path = tmp_path / "traces.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    (tmp_path / "export").mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp_path / "export" / "part-0")
    code, tables, _ = audit(str(tmp_path / "export" / "part-*"), "--input-format", "parquet",
                            out=tmp_path / "by-flag")
    assert code == 0 and len(tables["answers"]) == 2 and not tables["dead_letters"]
    code, tables, _ = audit(str(path))
    assert code == 0
    answers = {a["trace_id"]: a for a in tables["answers"]}
    assert answers["p1"]["label"] == "ENT"
    assert answers["p2"]["label"] == "CON"
    assert answers["p1"]["event_time"] == datetime(2024, 6, 1, 8, 0, tzinfo=UTC)
    assert sorted(r["day"] for r in tables["route_rates"]) == ["2024-06-01", "2024-06-02"]


INVALID = [
    ('{"trace_id": "a", "answer": "x"', "not valid JSON"),
    ('["not", "an", "object"]', "must be a JSON object"),
    ({"answer": "x", "contexts": ["c"]}, "missing required field 'trace_id'"),
    ({"trace_id": "b", "contexts": ["c"]}, "missing required field 'answer'"),
    ({"trace_id": "c", "answer": "x", "contexts": None}, "must be a list"),
    ({"trace_id": "d", "answer": "x", "contexts": [{"doc_id": "a", "text": 3}]}, "string"),
    ({"trace_id": "e", "answer": "x", "contexts": ["  "]}, "no text"),
    ({"trace_id": "f", "answer": "x", "contexts": ["c"], "timestamp": "yesterday"}, "RFC 3339"),
    ({"trace_id": "g", "answer": 42, "contexts": ["c"]}, "must be a string"),
    ({"trace_id": "h", "answer": "x", "contexts": [{"doc_id": "a", "text": "c"},
                                                   {"doc_id": "a", "text": "d"}]}, "duplicate"),
]


def test_invalid_records_go_to_dead_letters_with_reasons(tmp_path, audit):
    valid = {"trace_id": "ok", "answer": "Water boils at 100 degrees.",
             "contexts": ["At sea level water boils at 100 degrees Celsius."]}
    duplicate = dict(valid, answer="Water boils at 90 degrees.")
    path = write_jsonl(tmp_path / "t.jsonl", [valid, *(r for r, _ in INVALID), duplicate, ""])
    code, tables, _ = audit(str(path))
    assert code == 0
    assert [a["trace_id"] for a in tables["answers"]] == ["ok"]
    dead = tables["dead_letters"]
    assert len(dead) == len(INVALID) + 1  # each invalid record, and the duplicate trace_id
    reasons = sorted(d["reason"] for d in dead)
    for _, expected in INVALID:
        assert any(expected in r for r in reasons), expected
    assert sum(d["stage"] == "dedupe" for d in dead) == 1
    raws = {d["raw"] for d in dead if d["stage"] == "validate"}
    assert '{"trace_id": "a", "answer": "x"' in raws  # kept as received


def test_awkward_traces_do_not_crash(tmp_path, audit):
    records = [
        {"trace_id": "empty-answer", "answer": "", "contexts": ["Some context."]},
        {"trace_id": "unicode", "answer": "Zürich hat 421 878 Einwohner. 東京は日本の首都です。",
         "contexts": ["Zürich hat 421 878 Einwohner (2020). 東京は日本の首都です。"]},
        {"trace_id": "json-ctx", "answer": "The cafe has 4.5 stars.",
         "contexts": [{"doc_id": "rec", "text": {"name": "Cafe", "stars": 4.5}}]},
        {"trace_id": "long", "answer": "Sentence 7 says the value is 7.",
         "contexts": [" ".join(f"Sentence {i} says the value is {i}." for i in range(600))]},
        {"trace_id": "one-line-json", "answer": "It is open on Monday.",
         "contexts": [json.dumps({"hours": {d: "9-5" for d in ("Monday", "Tuesday")},
                                  "blob": "x" * 5000})]},
    ]
    path = write_jsonl(tmp_path / "t.jsonl", records)
    code, tables, _ = audit(str(path), "--window-size", "25", "--window-overlap", "10")
    assert code == 0
    answers = {a["trace_id"]: a for a in tables["answers"]}
    assert set(answers) == {r["trace_id"] for r in records}
    assert answers["empty-answer"]["n_claims"] == 0 and answers["empty-answer"]["label"] == "ENT"
    assert answers["long"]["judge_calls"] == 1 + 40 + 1  # 600 sentences: 40 windows
    assert answers["long"]["label"] == "ENT"
    assert not tables["dead_letters"]


def test_overwrite_is_explicit(audit):
    assert audit("--example")[0] == 0
    code, _, _ = audit("--example")
    assert code == 2
    assert audit("--example", "--overwrite")[0] == 0


def test_bad_window_config_and_missing_input_fail(tmp_path, audit, capsys):
    assert audit("--example", "--window-size", "5", "--window-overlap", "5")[0] == 2
    assert "overlap" in capsys.readouterr().err
    code, _, _ = audit(str(tmp_path / "nothing-*.jsonl"))
    assert code == 2
    assert "no input file matches" in capsys.readouterr().err


RT4CHART = str(Path(sys.executable).parent / "rt4chart")


def _console(args: list[list[str]], cwd: Path) -> list[subprocess.CompletedProcess]:
    """`rt4chart ARGS` through the real console script, for each ARGS (run side by side)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    procs = [subprocess.Popen([RT4CHART, *a], cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for a in args]
    done = []
    for argv, proc in zip(args, procs, strict=True):
        out, err = proc.communicate(timeout=300)
        done.append(subprocess.CompletedProcess([RT4CHART, *argv], proc.returncode, out, err))
    return done


def test_console_script_and_beam_flags_pass_through(tmp_path):
    (proc,) = _console([["--runner", "FnApiRunner", "audit", "--example", "--out", "out",
                         "--direct_num_workers", "2", "--direct_running_mode=multi_threading"]],
                       tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "audited 5 answers" in proc.stdout


HELP = {  # command line -> what its help must show (the root's sub-commands, an option)
    ("--help",): "{audit,stream,eval,report,annotate,check-judge,export,gate}",
    ("audit", "-h"): "--claims-per-call", ("check-judge", "--help"): "--base-url",
    ("stream", "--help"): "--subscription", ("eval", "--help"): "--dataset",
    ("eval", "compare", "--help"): "RUN_B", ("report", "--help"): "--max-traces",
    ("annotate", "phoenix", "--help"): "--endpoint", ("export", "--help"): "--flagged",
    ("gate", "--help"): "--max-increase",
}
TYPOS = {  # command line -> the error's last line
    ("audit", "--example", "--windw-size", "5"):
        "rt4chart audit: error: unknown option --windw-size; did you mean --window-size?",
    ("audit", "--example", "--claims-per-cal=4"):
        "rt4chart audit: error: unknown option --claims-per-cal; did you mean --claims-per-call?",
    ("--direct_num_worker=2", "audit", "--example"):
        "rt4chart audit: error: unknown option --direct_num_worker; did you mean "
        "--direct_num_workers?",
}


def test_help_on_every_command_and_typos_through_the_console_script(tmp_path):
    runs = _console([list(a) for a in (*HELP, *TYPOS)], tmp_path)
    for argv, proc in zip(HELP, runs, strict=False):
        assert proc.returncode == 0, (argv, proc.stderr[-1000:])
        command = " ".join(a for a in argv if not a.startswith("-"))
        assert proc.stdout.startswith(f"usage: rt4chart {command}".rstrip()), argv
        assert HELP[argv] in proc.stdout and "Traceback" not in proc.stderr, argv
    assert "--direct_num_workers N" in runs[1].stdout  # audit's help says Beam's options go
    for argv, proc in zip(TYPOS, runs[len(HELP):], strict=True):
        assert proc.returncode == 2, (argv, proc.stderr[-1000:])
        assert proc.stderr.splitlines()[-1] == TYPOS[argv]
        assert proc.stderr.startswith("usage: rt4chart audit") and "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing ran, nothing written


@pytest.mark.parametrize(("argv", "message"), [
    (["stream", "--subscription", "projects/p/subscriptions/s", "--out", "o", "--dedupe-horizn",
      "9"], "rt4chart stream: error: unknown option --dedupe-horizn; did you mean "
            "--dedupe-horizon?"),
    (["eval", "--dataset", "jsonl", "--judge-optoin", "a=1"],
     "rt4chart eval: error: unknown option --judge-optoin; did you mean --judge-option?"),
    (["eval", "compare", "A", "B", "--seeds", "3"],
     "rt4chart eval: error: unknown option --seeds; did you mean --seed?"),
    (["report", "R", "--titl", "x"],  # no prefix matching: a misspelt option is an error
     "rt4chart report: error: unknown option --titl; did you mean --title?"),
    (["stream", "--subscription", "projects/p/subscriptions/s", "--example"],
     # audit's, not stream's (the closest of stream's own is --sample)
     "rt4chart stream: error: unknown option --example; did you mean --sample?"),
    (["report", "R", "S"], "rt4chart report: error: unrecognized arguments: S"),
])
def test_unknown_options_of_every_command_exit_2(argv, message, capsys):
    from rt4chart.pipeline.cli import main as cli

    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == message


def test_gzipped_jsonl_and_several_inputs(tmp_path, audit):
    import gzip

    record = {"trace_id": "gz", "contexts": ["The shop opens at 9 am."],
              "answer": "The shop opens at 9 am."}
    with gzip.open(tmp_path / "a.jsonl.gz", "wt") as fh:
        fh.write(json.dumps(record) + "\n")
    write_jsonl(tmp_path / "b.jsonl", [dict(record, trace_id="plain")])
    code, tables, _ = audit(str(tmp_path / "a.jsonl.gz"), str(tmp_path / "b.jsonl"))
    assert code == 0
    assert sorted(a["trace_id"] for a in tables["answers"]) == ["gz", "plain"]


def test_claims_per_call_with_a_judge_that_checks_one_claim_at_a_time(tmp_path, audit):
    """A judge without verify_local_many is asked claim by claim within the batch: the labels
    are those of the default schedule."""
    code, one, _ = audit("--example", "--judge", "offline", out=tmp_path / "one")
    code_many, many, _ = audit("--example", "--judge", "offline", "--claims-per-call", "3",
                               out=tmp_path / "many")
    assert code == code_many == 0

    def labels(tables):
        return {(c["trace_id"], c["claim_index"]): (c["window_labels"], c["label"], c["evidence"])
                for c in tables["claims"]}

    assert labels(many) == labels(one) and len(labels(one)) > 10
    assert audit("--example", "--claims-per-call", "0", out=tmp_path / "bad")[0] == 2


def test_reuse_needs_an_earlier_run_with_a_judge_cache(tmp_path, audit):
    code, tables, out = audit("--example", "--judge", "offline", out=tmp_path / "run")
    assert code == 0 and tables["judge_cache"]
    assert audit("--example", "--reuse", str(out), "--overwrite", out=out)[0] == 2
    assert audit("--example", "--reuse", str(tmp_path / "nothing"), out=tmp_path / "x")[0] == 2
    code, again, _ = audit("--example", "--judge", "offline", "--reuse", str(out),
                           out=tmp_path / "again")
    assert code == 0 and sum(a["judge_calls"] for a in again["answers"]) == 0
    assert [(a["trace_id"], a["label"], a["p_hallucinated"]) for a in sorted(
        again["answers"], key=lambda a: a["trace_id"])] == [
        (a["trace_id"], a["label"], a["p_hallucinated"]) for a in sorted(
            tables["answers"], key=lambda a: a["trace_id"])]


def test_beam_options_anywhere_are_set_apart_from_inputs():
    from rt4chart.pipeline.cli.parsers import split_beam_args

    argv = ["audit", "a.jsonl", "--runner", "FnApiRunner", "b.jsonl", "--streaming", "c.jsonl",
            "--direct_num_workers=2", "--out", "o", "--direct_running_mode", "multi_threading",
            "--judge", "offline", "-v", "--experiments", "x", "--example"]
    ours, beam = split_beam_args(argv)
    assert ours == ["audit", "a.jsonl", "b.jsonl", "c.jsonl", "--out", "o", "--judge", "offline",
                    "-v", "--example"]
    assert beam == ["--runner", "FnApiRunner", "--streaming", "--direct_num_workers=2",
                    "--direct_running_mode", "multi_threading", "--experiments", "x"]


def test_final_progress_line_counts_what_the_tables_count(tmp_path, audit, caplog, monkeypatch):
    import logging

    import fake_judges as fj
    from fake_openai_server import FakeOpenAI

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghijklmnop")
    traces = write_jsonl(tmp_path / "t.jsonl", [fj.RUNNING_TRACE])
    with caplog.at_level(logging.INFO), FakeOpenAI(fj.running_example_responder) as server:
        code, _, out = audit(str(traces), "--judge", "openai", "--base-url", server.base_url,
                             "--model", "gpt-4o-mini",  # priced; a listed model is not
                             "--window-size", "2", "--window-overlap", "1")
    assert code == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["input_tokens"] > s["cached_tokens"] > 0 and s["cost_usd"] > 0
    final = [r.getMessage() for r in caplog.records if r.getMessage().endswith("(final)")]
    assert len(final) == 1 and final[0].startswith(
        f"progress: 1/1 traces done, {s['judge_calls']:,} judge calls (0 failed), "
        f"{s['input_tokens']:,} input / {s['cached_tokens']:,} cached / "
        f"{s['output_tokens']:,} output tokens, ${s['cost_usd']:.4f}, ")


# "12 judge calls", or while the expected calls are known "12 of 45 expected judge calls".
PROGRESS_LINE = re.compile(r"progress: (\d+)/(\d+) traces done.*?, (\d+)(?: of [\d,]+ expected)? "
                           r"judge calls")


def test_a_slow_judge_shows_progress_while_it_runs_and_done_equals_total_at_the_end(
        tmp_path, audit, caplog, monkeypatch):
    import logging

    import fake_judges as fj
    from fake_openai_server import FakeOpenAI

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghijklmnop")
    traces = [dict(fj.RUNNING_TRACE, trace_id=f"slow-{i}") for i in range(4)]
    path = write_jsonl(tmp_path / "t.jsonl", [*traces, {"trace_id": "bad"}])
    with caplog.at_level(logging.INFO), FakeOpenAI(fj.running_example_responder,
                                                   latency_s=0.3) as server:
        code, tables, _ = audit(str(path), "--judge", "openai", "--base-url", server.base_url,
                                "--max-concurrency", "2", "--progress-every", "0.5")
    assert code == 0 and len(tables["answers"]) == 4 and len(tables["dead_letters"]) == 1
    lines = [r.getMessage() for r in caplog.records if r.name == "rt4chart.pipeline.progress"]
    figures = [(line, *map(int, PROGRESS_LINE.match(line).groups()))
               for line in lines if PROGRESS_LINE.match(line)]
    *running, (final, done, total, calls) = figures
    assert final.endswith("(final)") and done == total == 5
    assert calls == sum(a["judge_calls"] for a in tables["answers"])
    assert any(d < t == 5 and 0 < c < calls for _, d, t, c in running), lines


def test_a_failed_run_prints_its_error_in_one_line_then_its_figures(tmp_path, audit, capsys):
    import gzip

    rows = "".join(json.dumps({"trace_id": f"z{i}", "contexts": ["Tokyo is big."],
                               "answer": "Tokyo is big."}) + "\n" for i in range(200))
    data = gzip.compress(rows.encode())
    (tmp_path / "cut.jsonl.gz").write_bytes(data[:len(data) // 2])
    code, _, _ = audit(str(tmp_path / "cut.jsonl.gz"), "--judge", "offline")
    assert code == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    error, figures = err[-2:]
    assert error.startswith("rt4chart: run failed: InputFileError: ") and error.endswith(
        "[while running 'ReadTraces/Jsonl/Lines/ParDo(_ReadLinesFn)']")
    assert re.fullmatch(r"progress: 0/\d+ traces done, 0 judge calls .* when it failed", figures)


def test_limits_are_options_of_audit_and_stream(tmp_path, audit):
    from rt4chart.pipeline.cli import parsers as cli_args
    from rt4chart.pipeline.cli.main import parser

    record = {"trace_id": "long", "contexts": ["Paris is the capital of France. It is big."],
              "answer": "Paris is the capital of France. It is big. It has a river."}
    path = write_jsonl(tmp_path / "t.jsonl", [record])
    code, tables, _ = audit(str(path), "--judge", "offline", "--max-answer-sentences", "2",
                            out=tmp_path / "reject")
    assert code == 1  # nothing valid to audit
    (dead,) = tables["dead_letters"]
    assert dead["stage"] == "segment" and dead["reason"].startswith(
        "over limit max_answer_sentences=2: ")
    code, tables, _ = audit(str(path), "--judge", "offline", "--max-answer-sentences", "2",
                            "--oversize", "truncate", out=tmp_path / "truncate")
    assert code == 0 and not tables["dead_letters"]
    assert {c["sentence_index"] for c in tables["claims"]} == {0, 1}
    code, tables, _ = audit(str(path), "--judge", "offline", "--max-context-chars", "10",
                            out=tmp_path / "chars")
    assert code == 1 and "max_context_chars=10" in tables["dead_letters"][0]["reason"]
    args = parser().parse_args(
        ["stream", "--subscription", "projects/p/subscriptions/s", "--out", "o",
         "--max-context-sentences", "7", "--max-claims-per-answer", "3", "--oversize",
         "truncate"])
    limits = cli_args.stream_config(args, cli_args.judge_spec(args)).stages.segment.limits
    assert (limits.max_context_sentences, limits.max_claims_per_answer, limits.oversize) == (
        7, 3, "truncate")
    assert limits.max_answer_sentences == 250  # the default where no option is given
