"""The API's keyword options are the command's: the same declarations, the same parsed values."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rt4chart.pipeline.api import _audit_parser, namespace, option_value
from rt4chart.pipeline.cli.flags import AUDIT

NUMERIC = [(dest, opt) for dest, opt in AUDIT if opt.kind == "value" and opt.parse in (int, float)]


def parsed(flag: str, text: str):
    """What the command line gives for `flag text`."""
    return _audit_parser().parse_args([flag, text])


@pytest.mark.parametrize("dest, opt", NUMERIC, ids=[d for d, _ in NUMERIC])
@settings(max_examples=30)  # per option: a dozen of them
@given(number=st.integers(min_value=0, max_value=10**9))
def test_a_number_is_what_its_text_on_the_command_line_gives(dest, opt, number):
    assert option_value(dest, opt, number) == getattr(parsed(opt.flag, str(number)), dest)
    assert option_value(dest, opt, str(number)) == option_value(dest, opt, number)


@given(st.dictionaries(st.text(alphabet="abcdefghij_", min_size=1), st.text(), max_size=4))
def test_judge_option_mapping_is_the_repeated_flag(options):
    (dest, opt), = [(d, o) for d, o in AUDIT if d == "judge_option"]
    argv = [a for k, v in options.items() for a in ("--judge-option", f"{k}={v}")]
    assert option_value(dest, opt, options) == getattr(_audit_parser().parse_args(argv), dest)


def test_defaults_are_the_commands_defaults():
    args = namespace(["x.jsonl"], "out", {})
    command = _audit_parser().parse_args(["x.jsonl", "--out", "out"])
    assert {k: v for k, v in vars(args).items() if k != "command"} == vars(command)


@given(st.one_of(st.booleans(), st.lists(st.integers()), st.dictionaries(st.text(), st.text())))
def test_a_value_of_the_wrong_kind_is_refused(value):
    (dest, opt), = [(d, o) for d, o in AUDIT if d == "window_size"]
    with pytest.raises(TypeError, match="window_size"):
        option_value(dest, opt, value)
