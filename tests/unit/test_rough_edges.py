"""Rough edges of issue 48, point 7, each with a test: `python -m rt4chart`, `-v`'s help, the
unpriced model's warning once per process."""

from __future__ import annotations

import logging
import subprocess
import sys
from types import SimpleNamespace

from rt4chart.pipeline.cli.main import parsers
from rt4chart.transforms.judges.openai import pricing


def test_python_dash_m_rt4chart_is_the_command():
    done = subprocess.run([sys.executable, "-m", "rt4chart", "--help"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "audit" in done.stdout and "report" in done.stdout


def test_every_commands_verbose_flag_says_what_it_does():
    _root, commands = parsers()
    for name, command in commands.items():
        parsers_of = [command]
        for action in command._actions:  # annotate's sub-commands (phoenix, langfuse)
            choices = getattr(action, "choices", None)
            if isinstance(choices, dict):
                parsers_of.extend(choices.values())
        for parser in parsers_of:
            for action in parser._actions:
                if "--verbose" in action.option_strings:
                    assert action.help and "debug" in action.help, (name, parser.prog)


def test_an_unpriced_model_is_warned_about_once_per_process(caplog):
    pricing._warn_unpriced.cache_clear()
    config = SimpleNamespace(model="our-local-model-xyz", price_model=None, price_input=None,
                             price_output=None, prices=None,
                             price_cached=None)
    with caplog.at_level(logging.WARNING):
        prices = [pricing.prices_for(config) for _ in range(3)]
    assert prices == [None, None, None]  # unknown, never guessed
    warned = [r for r in caplog.records if "no price for model" in r.getMessage()]
    assert len(warned) == 1
