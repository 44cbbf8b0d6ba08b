"""One redaction step for every reason, note and report string that leaves a judge call.

An endpoint may echo what it was sent (an ``Authorization`` header, an ``api-key`` header, a
key in a URL) in its error body, and that body becomes a failed call's reason. :func:`redact`
removes, from any text:

- the configured secret values (the judge's API key), wherever they appear, and as an echo
  may have changed them: in any case, URL-encoded, split by whitespace or line breaks, in hex,
  inside base64 text (at any of its 3 byte alignments) or base32 text (any of its 5), and in
  the views of :mod:`.redact_views`: HTML entities and backslash escapes resolved, invisible
  (zero-width, format) characters removed, reversed, and with any separators between its
  characters (commas, spaces, dashes, dots, quotes);
- ``Bearer <token>`` credentials;
- ``sk-…``-like keys (OpenAI, Anthropic and similar providers' key format), also behind
  entities or invisible characters;
- the values of key-carrying headers or parameters echoed back: ``api-key: …``,
  ``x-api-key: …``, ``Authorization: …``, ``api_key=…``, ``Ocp-Apim-Subscription-Key: …``.

:func:`redact` is pure; :func:`redact_configured` adds the keys configured in the environment
(the well-known variables of KEY_ENV_NAMES, read only) and those of a run's :class:`Redactor`.

Which variables hold keys is part of a run's configuration, not of the process: a
:class:`Redactor` (frozen, small) names the variables a run's judges and clients read their
keys from (``JudgeKind.key_envs``: a judge's ``api_key_env``) and holds the key values a
component keeps itself (a key its judge read from Secret Manager). The launcher builds one from
the run's config (its log lines, its error lines), the pipeline passes its names to the stages
and sinks that redact (pickled with them, so that local worker processes have them too), and a
worker's judge runtime adds the keys its judges hold. A held value is never pickled: it stays in
the process that read it. Nothing here writes the environment.
"""

from __future__ import annotations

import base64
import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rt4chart.transforms.common.redact_views import (
    Span,
    plain_view,
    replace_spans,
    secret_spans,
    skeleton,
)

REDACTED = "[REDACTED]"
# The well-known key variables, always redacted when set: the OpenAI and Azure OpenAI judges'
# defaults, the Phoenix client's (pipeline/sources/phoenix_client.py) and the Langfuse
# client's (pipeline/annotate/langfuse.py), whose modules name them too.
KEY_ENV_NAMES = ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "PHOENIX_API_KEY",
                 "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY")
# A configured value shorter than this is not a real key ("x", "none", "not-needed" for a local
# endpoint): replacing it everywhere would garble reasons without hiding anything.
MIN_SECRET_CHARS = 12

_TOKEN = r"[A-Za-z0-9._~+/=\-]"
_BEARER = re.compile(rf"(?i)\b(bearer)(\s+){_TOKEN}{{8,}}")
_BEARER_TOKEN = re.compile(rf"(?i)\b(bearer)(\s+)({_TOKEN}{{8,}})")
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
_HEADER = re.compile(
    r"(?i)\b(api[-_]?key|x-api-key|authorization|ocp-apim-subscription-key|access[-_]token)"
    r"(\"?'?\s*[:=]\s*[\"']?)"
    r"((?:(?:bearer|basic|token)\s+)?[^\s\"',;&}\]]+)")


def redact(text: str | None, secrets: Iterable[str] = ()) -> str | None:
    """`text` without the `secrets` values and without anything shaped like a credential.

    None stays None (a row without a reason). Secrets shorter than MIN_SECRET_CHARS are
    ignored.
    """
    if not text:
        return text
    found = tuple(sorted({s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}, key=len,
                         reverse=True))
    if found:
        spans = secret_spans(text, _compiled(found), _skeletons(found), _credential_spans)
    else:
        view, where = plain_view(text)  # credentials behind entities or invisible characters
        spans = [] if where is None else [where.span(a, b) for a, b in _credential_spans(view)]
    if spans:
        text = replace_spans(text, spans, REDACTED)
    text = _HEADER.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    text = _BEARER.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    return _SK_KEY.sub(REDACTED, text)


def _credential_spans(text: str) -> list[Span]:
    """Spans of credential-shaped text: sk-… keys, bearer tokens, key-carrying header values."""
    return ([m.span() for m in _SK_KEY.finditer(text)]
            + [m.span(3) for m in _BEARER_TOKEN.finditer(text)]
            + [m.span(3) for m in _HEADER.finditer(text)])


@functools.lru_cache(maxsize=16)
def _skeletons(secrets: tuple[str, ...]) -> tuple[str, ...]:
    """The secrets' skeletons (letters and digits, lower case) long enough to be told apart."""
    return tuple(dict.fromkeys(k for k in map(skeleton, secrets) if len(k) >= MIN_SECRET_CHARS))


def _spelled(secret: str) -> str:
    """The secret in any case, each character as itself or percent-encoded (%XX, any case),
    with whitespace (or its JSON escape) anywhere between characters: what a proxy that
    upper-cases, URL-encodes or wraps a line does to a key it echoes."""
    gap = r"(?:\s|\\[nrt])*"
    chars = []
    for char in secret:
        encoded = "".join(f"%{byte:02x}" for byte in char.encode())
        chars.append(f"(?:{re.escape(char)}|{re.escape(encoded)})")
    return "(?i:" + gap.join(chars) + ")"


def _base64_forms(secret: str) -> list[str]:
    """The parts of base64 (and base64url) text that encode the secret, at each of the 3 byte
    alignments it can have inside encoded data (e.g. `Basic base64(user:key)`): the characters
    that depend on the secret's bytes alone."""
    data = secret.encode()
    forms = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data).decode()
        start = -(-8 * offset // 6)  # the first character of the secret's bits alone
        end = 8 * (offset + len(data)) // 6
        part = encoded[start:end]
        forms += [part, part.replace("+", "-").replace("/", "_")]
    return forms


def _base32_forms(secret: str) -> list[str]:
    """The parts of base32 text that encode the secret, at each of the 5 byte alignments it
    can have inside encoded data: the characters that depend on the secret's bytes alone."""
    data = secret.encode()
    forms = []
    for offset in range(5):
        encoded = base64.b32encode(b"\0" * offset + data).decode()
        forms.append(encoded[-(-8 * offset // 5):8 * (offset + len(data)) // 5])
    return forms


def secrets_pattern(secrets: tuple[str, ...]) -> str:
    """A regular expression matching each secret as written, in any case, URL-encoded,
    split by whitespace, in hex, and inside base64 or base32 text."""
    forms = []
    for secret in secrets:
        forms += [rf"(?i:{re.escape(f)})[A-Za-z2-7]*=*"
                  for f in dict.fromkeys(_base32_forms(secret))]
        # The rest of the base64 token goes too (its characters before the match hold at most
        # a few bits of the key: a leading class here would cost a scan at every position).
        forms += [rf"{re.escape(f)}[A-Za-z0-9+/_\-]*=*"
                  for f in dict.fromkeys(_base64_forms(secret))]
        forms.append("(?i:" + re.escape(secret.encode().hex()) + ")")
        forms.append(_spelled(secret))
    return "|".join(forms)


@functools.lru_cache(maxsize=16)
def _compiled(secrets: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for every secret and encoding, built once per set of keys (a pure memo of
    `secrets_pattern`: every row's reason passes through `redact`)."""
    return re.compile(secrets_pattern(secrets))


@dataclass(frozen=True)
class Redactor:
    """The keys a run's texts are cleaned of, besides the well-known ones (KEY_ENV_NAMES).

    Attributes:
        names: the variables holding keys (a judge's ``api_key_env``), read when redacting.
        values: keys a component holds itself (read from Secret Manager); never pickled.
    """

    names: tuple[str, ...] = ()
    values: tuple[str, ...] = field(default=(), repr=False)

    def __reduce__(self) -> tuple:
        # What travels to workers is the names; a held key stays in the process that read it.
        return (Redactor, (self.names,))

    def with_names(self, *names: str) -> Redactor:
        """Also the values of the variables `names` (each name once, in order)."""
        return Redactor(tuple(dict.fromkeys((*self.names, *(n for n in names if n)))),
                        self.values)

    def with_values(self, *values: str) -> Redactor:
        """Also the key values `values` (each once, in order)."""
        return Redactor(self.names,
                        tuple(dict.fromkeys((*self.values, *(v for v in values if v)))))

    def joined(self, other: Redactor) -> Redactor:
        """The names and values of both."""
        return self.with_names(*other.names).with_values(*other.values)

    def secrets(self, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
        """The key values: those of KEY_ENV_NAMES and `names` in `environ` (by default the
        process's environment, read only), then the held ones."""
        env = os.environ if environ is None else environ
        names = dict.fromkeys((*KEY_ENV_NAMES, *self.names))  # each name once
        found = (value for value in (env.get(name) for name in names) if value)
        return tuple(dict.fromkeys((*found, *self.values)))

    def redact(self, text: str | None, environ: Mapping[str, str] | None = None) -> str | None:
        """:func:`redact` with these keys."""
        return redact(text, self.secrets(environ))

    def redact_document(self, value: Any, environ: Mapping[str, str] | None = None) -> Any:
        """:func:`redact_document` with these keys."""
        return redact_document(value, self.secrets(environ))


def redact_document(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A JSON document (what a run writes beside its tables: summary.json, a report's data)
    with every string in it redacted, the keys of its objects too: a judge's model name, an
    input's path or a reason may each hold a key, and a file is cleaned whole rather than field
    by field, so that a field added later is cleaned too. Numbers, booleans and None are kept;
    a tuple comes back as a list (as JSON has it)."""
    secrets = tuple(secrets)

    def clean(item: Any) -> Any:
        if isinstance(item, str):
            return redact(item, secrets)
        if isinstance(item, dict):
            return {clean(k) if isinstance(k, str) else k: clean(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [clean(v) for v in item]
        return item

    return clean(value)  # documents of ours: shallow, so the recursion is bounded


NO_EXTRA_KEYS = Redactor()


def configured_secrets(environ: Mapping[str, str] | None = None,
                       keys: Redactor = NO_EXTRA_KEYS) -> tuple[str, ...]:
    """The values of the key variables: KEY_ENV_NAMES and those `keys` names, and the values
    `keys` holds."""
    return keys.secrets(environ)


def redact_configured(text: str | None, keys: Redactor = NO_EXTRA_KEYS) -> str | None:
    """:func:`redact` with the keys configured in the environment (KEY_ENV_NAMES) and `keys`'s
    (a run's own variables and held values)."""
    return keys.redact(text)
