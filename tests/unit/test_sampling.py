"""The sampling decision (transforms/sampling.py): stable, per-route, salted; always-audit rules;
usage errors naming the option."""

from __future__ import annotations

import hashlib
import math
import random

import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.schemas.records import Trace
from rt4chart.transforms.sampling import ALWAYS, SAMPLED, UNSAMPLED, Rule, SamplingConfig, score


def _trace(trace_id: str, route: str = "r", **kw) -> Trace:
    return Trace(trace_id, route, 0, "q?", (), "a.", **kw)


def _picked(config: SamplingConfig, traces) -> set[str]:
    return {t.trace_id for t in traces if config.decide(t) != UNSAMPLED}


def test_score_is_the_first_8_bytes_of_the_salted_sha256():
    digest = hashlib.sha256(b"pepper\x00trace-7").digest()
    assert score("trace-7", "pepper") == int.from_bytes(digest[:8], "big") / 2**64
    assert 0.0 <= score("x") < 1.0


def test_the_pick_does_not_depend_on_input_order():
    traces = [_trace(f"t{i}") for i in range(1000)]
    config = SamplingConfig(sample=("0.1",))
    first = [t.trace_id for t in traces if config.decide(t) == SAMPLED]
    shuffled = traces[:]
    random.Random(3).shuffle(shuffled)
    again = [t.trace_id for t in shuffled if config.decide(t) == SAMPLED]
    assert sorted(first) == sorted(again)
    assert 0 < len(first) < 1000


def _binomial_bounds(n: int, p: float, z: float = 3.2905) -> tuple[float, float]:
    """A 99.9% normal-approximation interval of a Binomial(n, p) count."""
    sd = math.sqrt(n * p * (1 - p))
    return n * p - z * sd, n * p + z * sd


def test_per_route_rates_are_honoured_within_the_binomial_interval():
    rates = {"checkout": 0.5, "search": 0.2, "help": 0.05}
    config = SamplingConfig(sample=tuple(f"{r}={p}" for r, p in rates.items()))
    n = 3000
    for route, p in rates.items():
        picked = _picked(config, (_trace(f"{route}-{i}", route) for i in range(n)))
        low, high = _binomial_bounds(n, p)
        assert low <= len(picked) <= high, (route, len(picked))


def test_an_exact_route_wins_over_the_star_and_unlisted_routes_are_audited_whole():
    config = SamplingConfig(sample=("checkout=0.0", "*=1.0"))
    assert config.decide(_trace("a", "checkout")) == UNSAMPLED
    assert config.decide(_trace("a", "search")) == SAMPLED
    only = SamplingConfig(sample=("checkout=0",))
    assert only.rate("other") == 1.0 and only.decide(_trace("a", "other")) == SAMPLED
    assert SamplingConfig(sample=("0.25",)).rate("any") == 0.25  # a bare RATE is *=RATE


def test_the_salt_changes_the_pick():
    traces = [_trace(f"t{i}") for i in range(2000)]
    plain = _picked(SamplingConfig(sample=("0.1",)), traces)
    salted = _picked(SamplingConfig(sample=("0.1",), sample_salt="s1"), traces)
    assert plain != salted
    assert salted == _picked(SamplingConfig(sample=("0.1",), sample_salt="s1"), traces)


def test_always_rules_pick_whatever_the_rate_says():
    config = SamplingConfig(sample=("0",), always=("metadata.feedback=down", "route=vip"))
    down = _trace("a", metadata=(("feedback", "down"),))
    vip = _trace("b", "vip")
    up = _trace("c", metadata=(("feedback", "up"),))
    assert config.decide(down) == ALWAYS and config.decide(vip) == ALWAYS
    assert config.decide(up) == UNSAMPLED
    assert config.weight(down, ALWAYS) == 1.0


def test_a_rule_compares_str_and_a_missing_field_matches_nothing():
    assert Rule.parse("task=").matches(_trace("a")) is False  # task None: missing, not ""
    assert Rule.parse("task=").matches(_trace("a", task="")) is True
    assert Rule.parse("metadata.k=").matches(_trace("a")) is False
    assert Rule.parse("late=True").matches(_trace("a", late=True)) is True  # str(True)
    assert Rule.parse("trace_id=x=y").matches(_trace("x=y")) is True  # first = splits


def test_weights_are_the_inverse_rate_of_the_route():
    config = SamplingConfig(sample=("checkout=0.2", "*=0.5"))
    assert config.weight(_trace("a", "checkout"), SAMPLED) == pytest.approx(5.0)
    assert config.weight(_trace("a", "x"), SAMPLED) == pytest.approx(2.0)


@pytest.mark.parametrize("args, named", [
    (["--sample", "1.5"], "--sample"),
    (["--sample", "checkout=abc"], "--sample"),
    (["--sample", "=0.1"], "--sample"),
    (["--sample", "nan"], "--sample"),
    (["--sample", "a=0.1", "--sample", "a=0.2"], "--sample"),
    (["--always", "nofield"], "--always"),
    (["--always", "colour=red"], "--always"),
    (["--always", "metadata.=x"], "--always"),
])
def test_bad_values_are_usage_errors_naming_the_option(args, named, tmp_path, capsys):
    code = cli.main(["audit", "--example", "--judge", "offline", "--out",
                     str(tmp_path / "out"), *args])
    assert code == 2
    assert named in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # nothing ran


def test_stream_takes_the_same_options():
    from rt4chart.pipeline.cli import parsers as cli_args

    parsed, _ = cli.parser().parse_known_args([
        "stream", "--subscription", "projects/p/subscriptions/s", "--out", "o",
        "--sample", "checkout=0.2", "--sample", "0.01", "--sample-salt", "s",
        "--always", "metadata.feedback=down"])
    config = cli_args.stream_config(parsed, cli_args.judge_spec(parsed))
    sampling = config.stages.sampling
    assert (sampling.rate("checkout"), sampling.rate("other")) == (0.2, 0.01)
    assert sampling.sample_salt == "s" and sampling.always == ("metadata.feedback=down",)


def test_a_run_that_sampling_left_empty_is_not_nothing_valid():
    from rt4chart.pipeline.results.summary import Summary
    from rt4chart.pipeline.run.jobs import nothing_valid

    assert not nothing_valid(Summary(traces=0, seen=5))  # --sample 0: all seen, none picked
    assert nothing_valid(Summary(traces=0, seen=1, sampled=1))  # picked, then dead-lettered
    assert nothing_valid(Summary())
