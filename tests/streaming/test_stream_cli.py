"""`rt4chart stream` refuses a bad configuration with a clear message and exit code 2, before
it starts anything."""

from __future__ import annotations

import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.cli import parsers as cli_args

SUB = "projects/p/subscriptions/s"


@pytest.mark.parametrize(("args", "message"), [
    (["--subscription", "traces-sub", "--out", "o"], "projects/PROJECT/subscriptions/NAME"),
    (["--subscription", SUB], "--out DIR or --bigquery"),
    (["--subscription", SUB, "--out", "o", "--dead-letter-topic", "dlq"], "dead-letter-topic"),
    (["--subscription", SUB, "--out", "o", "--id-attribute", "id"], "Dataflow runner"),
    (["--subscription", SUB, "--out", "o", "--alert-rate", "1.5"], "--alert-rate"),
    (["--subscription", SUB, "--out", "o", "--alert-relative", "0.5"], "--alert-relative"),
    (["--subscription", SUB, "--out", "o", "--rate-window", "0"], "--window must be positive"),
    (["--subscription", SUB, "--out", "o", "--sliding-period", "600"], "--sliding-period"),
    (["--subscription", SUB, "--out", "o", "--window-size", "5", "--window-overlap", "5"],
     "overlap"),
])
def test_bad_stream_configuration_is_a_clear_error(args, message, capsys):
    assert cli.main(["stream", "--judge", "offline", *args]) == 2
    assert message in capsys.readouterr().err


def test_flex_template_style_option_names_are_accepted():
    args = cli.parser().parse_args([
        "stream", "--subscription", SUB, "--out", "o", "--dead_letter_topic",
        "projects/p/topics/d", "--alerts_topic", "projects/p/topics/a", "--rate_window", "60",
        "--allowed_lateness", "120", "--alert_rate", "0.4"])
    config = cli_args.stream_config(args, cli_args.judge_spec(args))
    assert (config.dead_letter_topic, config.alerts_topic) == ("projects/p/topics/d",
                                                               "projects/p/topics/a")
    windowing = config.stages.windowing
    assert (windowing.size_s, windowing.allowed_lateness_s, windowing.streaming) == (60, 120, True)
    assert config.alerts.absolute == 0.4 and config.alerts.relative == 2.0
