"""Validation of a judge's JSON answer against the strict schemas in ``prompts/``.

Only the subset the schemas use: object, array, string, integer, enum, required,
``additionalProperties: false``, and the size bounds (``maxItems``, ``minItems``,
``maxLength``, ``minLength``, ``minimum``, ``maximum``). A mismatch is retried by the judge,
then recorded as a judge error: a malformed answer is never read as a label. A reply beyond a
size bound (`OutOfBounds`: 500 claims where the schema allows 8) is never read either, whether
or not the endpoint was sent the bounds: the work and cost of a run stay bounded by what
rt4chart asked for, whatever a server returns.
"""

from __future__ import annotations

from typing import Any

# Attempts a call gets when its replies go beyond the schema's bounds (OutOfBounds): one
# retry, as a reply that big is rarely a fluke, and each costs its whole output budget.
OUT_OF_BOUNDS_ATTEMPTS = 2


class SchemaMismatch(ValueError):
    """The judge's answer does not match the schema."""


class OutOfBounds(SchemaMismatch):
    """The judge's answer goes beyond a size bound of the schema, or gives other verdicts than
    the claims asked: retried once, then a judge error (see `openai_judge`)."""


def validate(value: Any, schema: dict, path: str = "$") -> None:
    """Raise SchemaMismatch (OutOfBounds for a size bound) if `value` does not match
    `schema`."""
    kind = schema.get("type")
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaMismatch(f"{path}: {value!r:.80} not one of {schema['enum']}")
    if kind == "string":
        if not isinstance(value, str):
            raise SchemaMismatch(f"{path}: expected a string")
        _check_size(len(value), schema, "minLength", "maxLength", f"{path}: a string of")
    elif kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            raise SchemaMismatch(f"{path}: expected an integer")
        _check_size(value, schema, "minimum", "maximum", f"{path}: the value")
    elif kind == "array":
        if not isinstance(value, list):
            raise SchemaMismatch(f"{path}: expected an array")
        _check_size(len(value), schema, "minItems", "maxItems", f"{path}: an array of")
        for i, item in enumerate(value):
            validate(item, schema.get("items", {}), f"{path}[{i}]")
    elif kind == "object":
        _validate_object(value, schema, path)


def _check_size(size: int, schema: dict, low: str, high: str, what: str) -> None:
    """OutOfBounds when `size` is below schema[low] or above schema[high] (each optional)."""
    if low in schema and size < schema[low]:
        raise OutOfBounds(f"{what} {size}, below {low}={schema[low]}")
    if high in schema and size > schema[high]:
        raise OutOfBounds(f"{what} {size}, beyond {high}={schema[high]}")


def _validate_object(value: Any, schema: dict, path: str) -> None:
    if not isinstance(value, dict):
        raise SchemaMismatch(f"{path}: expected an object")
    props = schema.get("properties", {})
    missing = [k for k in schema.get("required", []) if k not in value]
    if missing:
        raise SchemaMismatch(f"{path}: missing {missing}")
    if schema.get("additionalProperties") is False:
        extra = set(value) - set(props)
        if extra:
            raise SchemaMismatch(f"{path}: unexpected {sorted(extra)}")
    for key, sub in props.items():
        if key in value:
            validate(value[key], sub, f"{path}.{key}")
