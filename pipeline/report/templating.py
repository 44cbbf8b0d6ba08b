"""The report's Jinja2 environment: templates shipped as package data, escaped by default.

Every value a template prints is HTML-escaped (autoescape), so trace content (untrusted) is
text wherever it lands; only values wrapped in `Markup` on purpose pass through, each with a
comment at the place it is wrapped. A variable a template names but is not given fails the
render (StrictUndefined) instead of printing nothing.

Template conventions: one file per page part (page, overview, route_table, flagged, compare,
trace, claims, context), each a macro taking the part's data, built in Python (page.py,
side_by_side.py, trace_view.py); shared pieces (badge, figure, counts_table, ...) in macros.html.
Line breaks in a template are free between block elements; inline content stays on one line,
and an empty whitespace-controlled comment at a line's end joins it with the next (so a table
row is one line of the page).
"""

from __future__ import annotations

from functools import cache

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from rt4chart.pipeline.results.summary import usd

PACKAGE = "rt4chart.pipeline.report"


def num(value: float | None, spec: str) -> str:
    """A number for people in a format spec (".1%", ".2f", ...); "n/a" when there is none."""
    return "n/a" if value is None else format(value, spec)


def threshold(value: float) -> str:
    """A threshold as a percentage with the digits it has (up to 4 decimals of the
    probability): 0.1508 is "15.08%", never "15%" next to a probability of 0.15."""
    return f"{value * 100:.2f}".rstrip("0").rstrip(".") + "%"


def _none_as_empty(value: object) -> object:
    # A missing value (None) prints as nothing, as the hand-written pages did; an undefined
    # name still fails (StrictUndefined).
    return "" if value is None else value


@cache
def environment() -> Environment:
    """The report's environment (built once per process: it caches the parsed templates)."""
    env = Environment(
        loader=PackageLoader(PACKAGE, "templates"),
        autoescape=select_autoescape(enabled_extensions=("html",), default_for_string=True,
                                     default=True),
        undefined=StrictUndefined,
        finalize=_none_as_empty,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.filters.update(num=num, usd=usd, threshold=threshold)
    return env


def render(template: str, **context: object) -> str:
    """A whole template, rendered with `context`."""
    return environment().get_template(template).render(**context)


def macro(template: str, name: str, *args: object) -> Markup:
    """One macro of a template (a page part rendered on its own)."""
    return getattr(environment().get_template(template).module, name)(*args)
