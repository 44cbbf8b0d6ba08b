"""One redaction step for every reason, note and report string that leaves a judge call.

An endpoint may echo what it was sent (an ``Authorization`` header, an ``api-key`` header, a
key in a URL) in its error body, and that body becomes a failed call's reason. :func:`redact`
removes, from any text:

- the configured secret values (the judge's API key), wherever they appear;
- ``Bearer <token>`` credentials;
- ``sk-…``-like keys (OpenAI, Anthropic and similar providers' key format);
- the values of key-carrying headers or parameters echoed back: ``api-key: …``,
  ``x-api-key: …``, ``Authorization: …``, ``api_key=…``, ``Ocp-Apim-Subscription-Key: …``.

:func:`redact` is pure; :func:`redact_configured` adds the keys configured in the environment
(``OPENAI_API_KEY``, ``AZURE_OPENAI_API_KEY`` and any variable a judge registered with
:func:`register_key_env`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

REDACTED = "[REDACTED]"
KEY_ENV_NAMES = ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY")
# A configured value shorter than this is not a real key ("x", "none", "not-needed" for a local
# endpoint): replacing it everywhere would garble reasons without hiding anything.
MIN_SECRET_CHARS = 12

_TOKEN = r"[A-Za-z0-9._~+/=\-]"
_BEARER = re.compile(rf"(?i)\b(bearer)(\s+){_TOKEN}{{8,}}")
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
_HEADER = re.compile(
    r"(?i)\b(api[-_]?key|x-api-key|authorization|ocp-apim-subscription-key|access[-_]token)"
    r"(\"?'?\s*[:=]\s*[\"']?)"
    r"((?:(?:bearer|basic|token)\s+)?[^\s\"',;&}\]]+)")

_REGISTERED_ENV: set[str] = set()


def redact(text: str | None, secrets: Iterable[str] = ()) -> str | None:
    """`text` without the `secrets` values and without anything shaped like a credential.

    None stays None (a row without a reason). Secrets shorter than MIN_SECRET_CHARS are
    ignored.
    """
    if not text:
        return text
    for secret in sorted({s for s in secrets if s and len(s) >= MIN_SECRET_CHARS},
                         key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _HEADER.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    text = _BEARER.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    return _SK_KEY.sub(REDACTED, text)


def register_key_env(name: str) -> None:
    """Have :func:`redact_configured` also remove the value of environment variable `name` (a
    judge's configured ``api_key_env``)."""
    _REGISTERED_ENV.add(name)


def configured_secrets(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of the key variables: KEY_ENV_NAMES and the registered ones."""
    env = os.environ if environ is None else environ
    names = dict.fromkeys((*KEY_ENV_NAMES, *sorted(_REGISTERED_ENV)))  # each name once
    return tuple(value for value in (env.get(name) for name in names) if value)


def redact_configured(text: str | None) -> str | None:
    """:func:`redact` with the keys configured in the environment."""
    return redact(text, configured_secrets())
