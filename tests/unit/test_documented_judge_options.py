"""The openai judge's options as the docs list them are the options its parser accepts (issue
47: the documented `call_deadline_s` was refused as unknown). Both ways, so that neither can
drift: an option documented but refused, or accepted but undocumented, fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.openai.batch import BatchConfig
from rt4chart.transforms.judges.openai.config import judge_options, option_names
from rt4chart.transforms.judges.openai.limits.shares import share_rate_limits
from rt4chart.transforms.judges.option_values import declarations

DOCS = Path(__file__).parents[2] / "docs"
NAME = re.compile(r"[a-z][a-z0-9_]*")


def _without_parentheses(text: str) -> str:
    """`text` with every parenthesised part (nested ones too) taken out."""
    out, depth = [], 0
    for char in text:
        depth += char == "("
        if not depth:
            out.append(char)
        depth -= char == ")" and depth > 0
    return "".join(out)


def documented() -> set[str]:
    """The names of the "All options" list of docs/judges.md (its paragraph): each item, once
    its parenthesised default and notes are taken out, is one name."""
    text = (DOCS / "judges.md").read_text()
    start = text.index("All options (`--judge-option KEY=VALUE`):")
    paragraph = text[start:text.index("\n\n", start)]
    items = re.split(r",|\band\b|:", _without_parentheses(paragraph).replace("`", ""))
    names = (item.strip(" .\n") for item in items)
    return {name for name in names if NAME.fullmatch(name)}


def test_the_documented_options_are_the_accepted_ones():
    names = documented()
    assert len(names) > 40  # the list was found and read
    accepted = option_names()
    assert names - accepted == set(), "documented but refused"
    assert accepted - names == set(), "accepted but not in docs/judges.md's option list"


@pytest.mark.parametrize("doc", ["judges.md", "local-model-servers.md"])
def test_every_option_named_in_a_docs_table_or_flag_is_accepted(doc):
    # `--judge-option NAME=` and the `..._s` options the tables name; `key=value` is a custom
    # judge's placeholder, `batch_*` the Batch API judge's own options.
    text = (DOCS / doc).read_text()
    named = set(re.findall(r"--judge-option ([a-z_]+)=", text)) - {"key"}
    named |= {m for m in re.findall(r"`([a-z]+_[a-z_]+)`", text) if m.endswith("_s")}
    assert named, doc
    batch = {n for n in named if n.startswith("batch_")}
    assert named - batch - option_names() == set()
    assert batch - set(declarations(BatchConfig, False)) == set()


@pytest.mark.parametrize("name", sorted(option_names()))
def test_no_accepted_option_is_refused_as_unknown_on_the_way_to_the_judge(name):
    # Each option alone, as the launcher reads it (the job's rate-limit share reads the
    # options before any judge is built): a value may be refused, the name never.
    for value in ("1", "true", "identity"):
        try:
            judge_options({name: value})
            share_rate_limits(JudgeSpec.of("openai", {name: value}), PipelineOptions([]))
        except ValueError as exc:
            assert "unknown" not in str(exc), exc
