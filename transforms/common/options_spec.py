"""An option declared once, as a config dataclass field's metadata: its flags, help, type and
default for the command line. `pipeline/options/flags.py` lists each command's options from these;
the argparse parsers, Beam's `PipelineOptions` views, the option strings of Beam's argv split,
the Flex Template metadata and the README's option tables are all made from that list.

No argparse here: stages under `transforms/` declare what they take, `pipeline/` decides how
it is parsed. Validation stays in the config's `__post_init__`, so a value is checked once
whichever surface it came from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

KINDS = ("value", "flag", "append")  # a value, a store-true switch, a repeatable value
_KEY = "rt4chart.option"


@dataclass(frozen=True)
class Flex:
    """The option as a Dataflow Flex Template parameter (`infra/flex_template/metadata.py`
    writes metadata.json from these): its label and help in the console, the regexes a value
    must match, whether it may be left out, its type there; `name` defaults to the dest."""

    label: str
    help: str
    regexes: tuple[str, ...] = ()
    optional: bool = True
    param_type: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class Option:
    """One command-line option: `flags` (the first long one names it), `kind` (see KINDS),
    `parse` (str -> value; None keeps the string), `default` as the parser gives it (None: not
    given, the config's own default applies), and argparse's `metavar` and `choices`."""

    flags: tuple[str, ...]
    help: str | None = None
    kind: str = "value"
    parse: Callable[[str], Any] | None = None
    default: Any = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    dest: str | None = None  # the parsed value's name; default: the field's
    flex: Flex | None = None  # a Flex Template parameter of `rt4chart stream`
    zero_off: bool = False  # a parsed 0 means "off": the config gets None
    required: bool = False  # by the command's parser (and the config: no default)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"option kind must be one of {', '.join(KINDS)}, got {self.kind!r}")

    @property
    def flag(self) -> str:
        """The option's name on the command line (its first long flag)."""
        return next(f for f in self.flags if f.startswith("--"))


def option(*flags: str, default: Any = None, **spec: Any) -> Any:
    """A dataclass field declared as a command-line option: `default` is the config's default
    (None: the option is optional; `dataclasses.MISSING`: the config needs a value, which the
    parser may still default), and the parser's unless `spec` gives `parsed_default`."""
    parsed_default = spec.pop("parsed_default", default)
    parsed_default = None if parsed_default is dataclasses.MISSING else parsed_default
    factory = spec.pop("default_factory", None)  # a mutable default (the parser's: parsed_default)
    meta = {_KEY: Option(tuple(flags), default=parsed_default, **spec)}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    if spec.get("required") or default is dataclasses.MISSING:
        return dataclasses.field(metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def declared(cls: type) -> Iterator[tuple[str, Option]]:
    """(dest, Option) for each field of `cls` declared with :func:`option`, in field order."""
    for f in dataclasses.fields(cls):
        opt = f.metadata.get(_KEY)
        if opt is not None:
            yield opt.dest or f.name, opt


def field_option(cls: type, name: str) -> tuple[str, Option]:
    """(dest, Option) of the field `name` of `cls`."""
    [opt] = [f.metadata[_KEY] for f in dataclasses.fields(cls) if f.name == name]
    return opt.dest or name, opt


def fields_options(cls: type, *names: str) -> tuple[tuple[str, Option], ...]:
    """(dest, Option) of the fields `names` of `cls`, in that order."""
    return tuple(field_option(cls, n) for n in names)


def _value(opt: Option, raw: Any) -> Any:
    return None if opt.zero_off and raw == 0 else raw


def from_values(cls: type, values: object, **extra: Any) -> Any:
    """`cls` built from the parsed `values` (an object with the options' dests as attributes):
    an option not given (None) keeps the config's default, a `zero_off` option given as 0 is
    None; a field in `extra` is taken from there. ValueError from the config's validation."""
    given = {}
    for f in dataclasses.fields(cls):
        opt = None if f.name in extra else f.metadata.get(_KEY)
        raw = None if opt is None else getattr(values, opt.dest or f.name, None)
        if raw is not None:
            given[f.name] = _value(opt, raw)
    return cls(**given, **extra)
