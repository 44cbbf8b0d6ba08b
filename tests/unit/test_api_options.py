"""The API's keyword options are the command's: the same declarations, the same parsed values,
the same defaults; the API reaches them without argparse (`run/settings.py`), and these tests
compare them with what the command's own argparse parser gives."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rt4chart.pipeline.api import keyword_values, option_value, option_values
from rt4chart.pipeline.cli import parsers as cli_args
from rt4chart.pipeline.options.beam import KnownOptionsParser
from rt4chart.pipeline.options.flags import AUDIT

NUMERIC = [(dest, opt) for dest, opt in AUDIT if opt.kind == "value" and opt.parse in (int, float)]


@functools.cache
def _audit_parser():
    root = KnownOptionsParser(prog="rt4chart", allow_abbrev=False)
    return cli_args.add_audit_parser(root.add_subparsers(dest="command"))


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
    values = option_values(["x.jsonl"], "out", {})
    command = _audit_parser().parse_args(["x.jsonl", "--out", "out"])
    assert vars(values) == {k: v for k, v in vars(command).items() if k != "command"}


def test_the_same_values_build_the_same_config():
    argv = ["x.jsonl", "--out", "out", "--window-size", "9", "--window-overlap", "2",
            "--judge", "offline", "--sample", "faq=0.5", "--max-usd", "3"]
    given_ = keyword_values({"window_size": 9, "window_overlap": "2", "judge": "offline",
                             "sample": ["faq=0.5"], "max_usd": 3})
    api = cli_args.audit_config(option_values(["x.jsonl"], "out", given_))
    assert api == cli_args.audit_config(_audit_parser().parse_args(argv))


@given(st.one_of(st.booleans(), st.lists(st.integers()), st.dictionaries(st.text(), st.text())))
def test_a_value_of_the_wrong_kind_is_refused(value):
    (dest, opt), = [(d, o) for d, o in AUDIT if d == "window_size"]
    with pytest.raises(TypeError, match="window_size"):
        option_value(dest, opt, value)
