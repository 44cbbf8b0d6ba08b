"""Prompt templates and judge JSON schemas, shipped as package data and hashed.

Templates use ``{{name}}`` placeholders. Trace contents are untrusted: before substitution,
anything in them that looks like one of the prompt's delimiting tags is neutralised, so a trace
cannot close the block that holds it and speak outside it.
"""

from __future__ import annotations

import functools
import hashlib
import re
from importlib import resources

import orjson

PROMPT_FILES = (
    "decompose_system.txt",
    "decompose_user.txt",
    "verify_system.txt",
    "verify_local_user.txt",
    "verify_global_user.txt",
    "verify_global_hint_user.txt",
    "decompose.schema.json",
    "verify.schema.json",
    "verify_local_many_user.txt",
    "verify_many.schema.json",
    "verify_absence_system.txt",
    "verify_absence_user.txt",
    "verify_absence.schema.json",
)

TAGS = ("question", "answer", "sentence", "passage", "context", "hint", "claims", "claim")
_TAG_RE = re.compile(r"<(\s*/?\s*)(" + "|".join(TAGS) + r")\b", re.IGNORECASE)
_PLACEHOLDER_RE = re.compile(r"\{\{(\w+)\}\}")


@functools.cache
def load(name: str) -> str:
    """The text of one prompt file."""
    if name not in PROMPT_FILES:
        raise ValueError(f"unknown prompt file {name!r}")
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


@functools.cache
def schema(name: str) -> dict:
    """A judge JSON schema by name: "decompose", "verify", "verify_many" or
    "verify_absence"."""
    return orjson.loads(load(f"{name}.schema.json"))


@functools.cache
def prompt_hash(request_mode: str | None = None) -> str:
    """sha256 over every prompt file and schema (first 16 hex digits), recorded on each row;
    with the judge's request mode (capabilities.py) when it has one: a reply obtained with the
    schema in the system message, or without logprobs, was asked differently."""
    digest = hashlib.sha256()
    if request_mode:
        digest.update(request_mode.encode() + b"\0")
    for name in PROMPT_FILES:
        digest.update(name.encode())
        digest.update(b"\0")
        digest.update(load(name).encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def neutralise(data: str) -> str:
    """Make untrusted text unable to open or close one of the prompt's tags.

    ``</context>`` becomes ``‹/context>``: still readable, still quotable (evidence alignment
    ignores punctuation), but no longer the delimiter.
    """
    return _TAG_RE.sub(lambda m: "\u2039" + m.group(1) + m.group(2), data)


def render(name: str, **values: str) -> str:
    """Fill a template in one pass; every value is neutralised first."""
    template = load(name)
    missing = set(_PLACEHOLDER_RE.findall(template)) - set(values)
    if missing:
        raise ValueError(f"{name}: missing values for {sorted(missing)}")
    return _PLACEHOLDER_RE.sub(lambda m: neutralise(values[m.group(1)]), template)
