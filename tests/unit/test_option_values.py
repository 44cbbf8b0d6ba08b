"""Judge options are converted by one typed converter from their declarations (the dataclass
fields and their `judge_option` names), with the messages the options always gave."""

from __future__ import annotations

import pytest

from rt4chart.transforms.judges.openai.batch import BatchConfig
from rt4chart.transforms.judges.openai.config import OpenAIConfig
from rt4chart.transforms.judges.openai.prefix_gate import GateConfig
from rt4chart.transforms.judges.openai.reservation import ReservationConfig
from rt4chart.transforms.judges.openai.throughput import ThroughputOptions
from rt4chart.transforms.judges.option_values import convert, declarations


def test_the_throughput_options_are_the_declared_fields():
    names = {cls: set(declarations(cls, False))
             for cls in (ReservationConfig, GateConfig, ThroughputOptions, BatchConfig)}
    assert names[ReservationConfig] == {
        "output_reservation", "output_quantile", "output_margin", "output_slack",
        "output_warmup", "output_class_warmup", "output_probes"}  # not the window
    assert names[GateConfig] == {"prefix_gate", "prefix_gate_timeout_s", "prefix_gate_ttl_s",
                                 "prefix_gate_min_tokens"}
    assert names[ThroughputOptions] == {"provider_limits"}
    assert names[BatchConfig] == {"batch_idle_s", "batch_max_requests", "batch_poll_s",
                                  "batch_max_wait_s"}


def test_values_take_their_declared_types():
    got = convert(OpenAIConfig, {"rpm": "60", "max_concurrency": "4", "stream": "No",
                                 "base_url": "http://127.0.0.1:1/v1", "price_input": "0.5",
                                 "logprobs": "1"}, "openai judge")
    assert got == {"rpm": 60.0, "max_concurrency": 4, "stream": False,
                   "base_url": "http://127.0.0.1:1/v1", "price_input": 0.5, "logprobs": True}
    assert type(got["rpm"]) is float and type(got["max_concurrency"]) is int
    options = {"output_slack": "3", "prefix_gate": "false", "provider_limits": "no", "x": "y"}
    tuning = ThroughputOptions.pop_from(options)
    assert (tuning.reservation.slack, tuning.gate.enabled, tuning.adopt_limits) == (3, False,
                                                                                   False)
    assert options == {"x": "y"}  # the others are left to the judge


@pytest.mark.parametrize(("options", "message"), [
    ({"rpm": "fast"}, "openai judge option rpm='fast': could not convert string to float: "
                      "'fast'"),
    ({"max_concurrency": "1.5"}, "openai judge option max_concurrency='1.5': invalid literal "
                                 "for int() with base 10: '1.5'"),
    ({"stream": "maybe"}, "openai judge option stream='maybe': expected true or false"),
    ({"prefix_gate": "on"}, "openai judge option prefix_gate='on': expected true or false"),
])
def test_a_bad_value_names_the_option_and_says_why(options, message):
    with pytest.raises(ValueError) as caught:
        if "prefix_gate" in options:
            ThroughputOptions.pop_from(dict(options))
        else:
            OpenAIConfig.from_options(options)
    assert str(caught.value) == message
