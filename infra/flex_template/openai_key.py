"""Put the judge's API key into the environment from Secret Manager, never from a file.

The image names the secret in ``RT4CHART_OPENAI_SECRET``: a secret id (resolved in the
project the code runs in), ``projects/P/secrets/S``, or ``projects/P/secrets/S/versions/V``
(default version: ``latest``). Empty disables the lookup (a judge endpoint that needs no key).
An ``OPENAI_API_KEY`` already in the environment wins. Used by the Flex Template launcher
(`main.py`) and by the workers' entrypoint (`worker_boot.py`).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, MutableMapping

logger = logging.getLogger(__name__)

SECRET_ENV = "RT4CHART_OPENAI_SECRET"
KEY_ENV = "OPENAI_API_KEY"
_FULL = re.compile(r"^projects/[^/]+/secrets/[^/]+(/versions/[^/]+)?$")
_ID = re.compile(r"^[A-Za-z0-9_-]{1,255}$")


def version_name(secret: str, project: str | None) -> str:
    """The resource name of the secret version to read.

    Raises:
        ValueError: the name is malformed, or a bare id is given and no project is known.
    """
    secret = secret.strip()
    if _FULL.match(secret):
        return secret if "/versions/" in secret else f"{secret}/versions/latest"
    if not _ID.match(secret):
        raise ValueError(f"{SECRET_ENV} is neither a secret id nor projects/P/secrets/S: "
                         f"{secret!r}")
    if not project:
        raise ValueError(f"{SECRET_ENV}={secret!r} is a bare id and the project is unknown")
    return f"projects/{project}/secrets/{secret}/versions/latest"


def _default_project() -> str | None:
    import google.auth

    return google.auth.default()[1]


def _access(name: str) -> str:
    from google.cloud import secretmanager

    response = secretmanager.SecretManagerServiceClient().access_secret_version(name=name)
    return response.payload.data.decode("utf-8").strip()


def export_api_key(
    env: MutableMapping[str, str] | None = None,
    access: Callable[[str], str] = _access,
    project: Callable[[], str | None] = _default_project,
) -> bool:
    """Set ``OPENAI_API_KEY`` in `env` (default: os.environ) from the configured secret.

    Returns:
        True when the key was read from Secret Manager, False when nothing had to be done.

    Raises:
        ValueError: the secret name is malformed or the secret version is empty.
        google.api_core.exceptions.GoogleAPICallError: Secret Manager refused or failed.
    """
    env = os.environ if env is None else env
    secret = env.get(SECRET_ENV, "").strip()
    if env.get(KEY_ENV) or not secret:
        return False
    name = version_name(secret, None if _FULL.match(secret) else project())
    value = access(name)
    if not value:
        raise ValueError(f"secret version {name} is empty")
    env[KEY_ENV] = value
    logger.info("%s read from %s", KEY_ENV, name)  # the name, never the value
    return True
