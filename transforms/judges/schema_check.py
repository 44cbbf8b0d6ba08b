"""Validation of a judge's JSON answer against the strict schemas in ``prompts/``.

Only the subset the schemas use: object, array, string, integer, enum, required and
``additionalProperties: false``. A mismatch is retried by the judge, then recorded as a judge
error: a malformed answer is never read as a label.
"""

from __future__ import annotations

from typing import Any


class SchemaMismatch(ValueError):
    """The judge's answer does not match the schema."""


def validate(value: Any, schema: dict, path: str = "$") -> None:
    """Raise SchemaMismatch if `value` does not match `schema`."""
    kind = schema.get("type")
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaMismatch(f"{path}: {value!r:.80} not one of {schema['enum']}")
    if kind == "string":
        if not isinstance(value, str):
            raise SchemaMismatch(f"{path}: expected a string")
    elif kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            raise SchemaMismatch(f"{path}: expected an integer")
    elif kind == "array":
        if not isinstance(value, list):
            raise SchemaMismatch(f"{path}: expected an array")
        for i, item in enumerate(value):
            validate(item, schema.get("items", {}), f"{path}[{i}]")
    elif kind == "object":
        _validate_object(value, schema, path)


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
