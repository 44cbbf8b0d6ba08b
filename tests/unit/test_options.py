"""rt4chart's options as Beam pipeline options: parsed with Beam's own by Beam's public API,
listed with a job's options, each command's values in its view; unknown options named."""

from __future__ import annotations

from apache_beam.options.pipeline_options import (
    DirectOptions,
    PipelineOptions,
    StandardOptions,
)

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.options.beam import (
    AuditOptions,
    EvalCommandOptions,
    StreamOptions,
    split_beam_args,
    unknown_option_message,
    with_command_options,
)

SUB = "projects/p/subscriptions/s"


def test_commands_options_parse_with_beams_own_through_public_api():
    options = PipelineOptions(["--window-size", "5", "--runner", "FnApiRunner",
                               "--judge-option", "a=1", "--judge-option", "b=2",
                               "--direct_num_workers=2", "--subscription", SUB, "--rate_window",
                               "60", "--limit", "7"])
    audit = options.view_as(AuditOptions)
    assert (audit.window_size, audit.judge_option, audit.out) == (5, ["a=1", "b=2"],
                                                                  "rt4chart-out")
    stream = options.view_as(StreamOptions)
    assert (stream.subscription, stream.window, stream.window_size) == (SUB, 60, 5)
    assert options.view_as(EvalCommandOptions).limit == 7
    assert options.view_as(StandardOptions).runner == "FnApiRunner"
    assert options.view_as(DirectOptions).direct_num_workers == 2
    every = options.get_all_options()  # what a runner serialises (and Dataflow lists)
    assert every["window_size"] == 5 and every["subscription"] == SUB
    assert every["direct_num_workers"] == 2


def test_no_rt4chart_option_is_required_of_other_pipelines():
    # `--subscription` is required by `rt4chart stream`, not by every PipelineOptions.
    assert PipelineOptions([]).view_as(StreamOptions).subscription is None
    assert "subscription" in StreamOptions.dests() and "inputs" not in AuditOptions.dests()
    assert {"window_size", "judge_option", "max_answer_sentences"} <= set(AuditOptions.dests())


def test_a_commands_values_join_the_jobs_options_redacted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-abcdefghijklmnopqrstuvwx")
    args = cli.parser().parse_args(["audit", "in.jsonl", "--window-size", "7", "--base-url",
                                    "http://h/v1?key=sk-test-abcdefghijklmnopqrstuvwx"])
    options = with_command_options(PipelineOptions(["--runner", "FnApiRunner"]), args)
    shown = options.get_all_options(drop_default=True)
    assert shown["window_size"] == 7 and shown["runner"] == "FnApiRunner"
    assert "sk-test-abcdefghijklmnopqrstuvwx" not in shown["base_url"]
    assert options.view_as(AuditOptions).window_size == 7
    assert "inputs" not in shown  # positionals are rt4chart's, not options


def test_the_split_keeps_rt4chart_options_and_unknown_ones_on_rt4chart_side():
    argv = ["--runner", "FnApiRunner", "audit", "a.jsonl", "--out", "o", "--windw-size", "5",
            "--direct_num_workers=2", "--judge", "offline", "--help"]
    ours, beam = split_beam_args(argv)
    assert ours == ["audit", "a.jsonl", "--out", "o", "--windw-size", "5", "--judge", "offline",
                    "--help"]
    assert beam == ["--runner", "FnApiRunner", "--direct_num_workers=2"]


def test_unknown_options_are_named_with_the_closest_known_one():
    known = ["--help", "--window-size", "--window-overlap", "--claims-per-call", "--runner"]
    assert unknown_option_message("--windw-size", known) == (
        "unknown option --windw-size; did you mean --window-size?")
    assert unknown_option_message("--claims-per-cal=4", known) == (
        "unknown option --claims-per-cal; did you mean --claims-per-call?")
    assert unknown_option_message("--frobnicate", known) == "unknown option --frobnicate"
    assert unknown_option_message("--hepl", known) == "unknown option --hepl"
