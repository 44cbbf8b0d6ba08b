"""The docs' option tables (docs/options.md) are the declarations'
(pipeline/options/reference.py)."""

from __future__ import annotations

from pathlib import Path

from rt4chart.pipeline.options import reference
from rt4chart.pipeline.options.flags import AUDIT

OPTIONS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "options.md"


def test_docs_option_tables_are_current():
    text = OPTIONS_PAGE.read_text()
    assert reference.current(text) == text, (
        "docs/options.md's option tables are not current: run "
        "python -m rt4chart.pipeline.options.reference docs/options.md")


def test_a_table_row_per_option_with_its_flag_default_and_help():
    table = reference.table(AUDIT)
    assert len(table.splitlines()) == 2 + len(AUDIT)
    assert "| `--out OUT` | `rt4chart-out` | output directory (default: rt4chart-out) |" in table
    assert "| `--example` |  | audit the bundled example traces |" in table  # a switch
    assert "%(default)s" not in table
