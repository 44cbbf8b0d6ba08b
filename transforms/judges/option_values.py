"""Judge options parsed by one typed converter, from their declarations.

A judge option (`--judge-option KEY=VALUE`, always a string) is a field of a frozen dataclass:
the openai judge's config (every field an option under its own name) and the throughput
tuning's parts (the fields declared with :func:`judge_option`, under the option's name). Each
value is converted to its field's declared type, resolved from the annotations, by pydantic's
`TypeAdapter`; nothing here matches type names as text, and no module keeps its own table of
option names and types.

A value that does not convert is a ValueError naming the option and the value, with Python's
own words for a number that is not one (as the options always said) and "expected true or
false" for a flag, which takes true/false, 1/0 or yes/no.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping, MutableMapping
from typing import Annotated, Any

from pydantic import BeforeValidator, TypeAdapter, ValidationError

OPTION = "rt4chart_judge_option"  # field metadata: the option's name
TRUE, FALSE = ("true", "1", "yes"), ("false", "0", "no")


def judge_option(name: str) -> dict[str, str]:
    """Field metadata declaring the field as the judge option `name`:
    ``field(default=..., metadata=judge_option("output_quantile"))``."""
    return {OPTION: name}


def _flag(value: object) -> object:
    if isinstance(value, str):
        if value.lower() not in TRUE + FALSE:
            raise ValueError("expected true or false")
        return value.lower() in TRUE
    return value


Flag = Annotated[bool, BeforeValidator(_flag)]


def _declared_type(hint: Any) -> Any:
    """The type an option's string converts to: `X | None` is X (a given option is never
    None), a bool is a Flag."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = args[0] if len(args) == 1 else hint
    return Flag if hint is bool else hint


@functools.cache
def declarations(cls: type, every_field: bool) -> dict[str, tuple[str, TypeAdapter]]:
    """Option name -> (field name, its converter) of a dataclass: every field under its own
    name, or (`every_field` false) the fields declared with `judge_option`."""
    hints = typing.get_type_hints(cls, include_extras=True)
    out = {}
    for f in dataclasses.fields(cls):
        name = f.metadata.get(OPTION, f.name if every_field else None)
        if name is not None:
            out[name] = (f.name, TypeAdapter(_declared_type(hints[f.name])))
    return out


def _reason(exc: ValidationError, raw: str) -> str:
    error = exc.errors(include_url=False)[0]
    kind = error["type"]
    if kind == "float_parsing":
        return f"could not convert string to float: {raw!r}"
    if kind in ("int_parsing", "int_from_float", "int_parsing_size"):
        return f"invalid literal for int() with base 10: {raw!r}"
    if kind == "value_error":
        return str(error.get("ctx", {}).get("error", error["msg"]))
    return error["msg"]


def convert(cls: type, options: Mapping[str, str], what: str,
            every_field: bool = True) -> dict[str, Any]:
    """The options `cls` declares, converted to their fields' types: {field name: value}, in
    the options' order. ValueError (`what` option KEY='VALUE': why) on the first that does not
    convert; options `cls` does not declare are left to the caller."""
    declared = declarations(cls, every_field)
    out = {}
    for key, raw in options.items():
        if key not in declared:
            continue
        field_name, adapter = declared[key]
        try:
            out[field_name] = adapter.validate_python(raw)
        except ValidationError as exc:
            raise ValueError(f"{what} option {key}={raw!r}: {_reason(exc, raw)}") from None
    return out


def take(cls: type, options: MutableMapping[str, str], what: str) -> dict[str, Any]:
    """The options `cls` declares with `judge_option`, converted and removed from `options`
    (in the order `cls` declares them)."""
    declared = declarations(cls, False)
    mine = {key: options.pop(key) for key in declared if key in options}
    return convert(cls, mine, what, every_field=False)
