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
from collections.abc import Callable, MutableMapping

from rt4chart.transforms.judges.openai import secret_key

logger = logging.getLogger(__name__)

SECRET_ENV = "RT4CHART_OPENAI_SECRET"
KEY_ENV = "OPENAI_API_KEY"


def version_name(secret: str, project: str | None) -> str:
    """The resource name of the secret version to read (the judge option `api_key_secret`'s
    rule, rt4chart.transforms.judges.openai.secret_key).

    Raises:
        ValueError: the name is malformed, or a bare id is given and no project is known.
    """
    return secret_key.version_name(secret, project, SECRET_ENV)


def export_api_key(
    env: MutableMapping[str, str] | None = None,
    access: Callable[[str], str] = secret_key.access_secret,
    project: Callable[[], str | None] = secret_key.default_project,
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
    name = version_name(secret, None if secret_key.is_full_name(secret) else project())
    value = access(name)
    if not value:
        raise ValueError(f"secret version {name} is empty")
    env[KEY_ENV] = value
    logger.info("%s read from %s", KEY_ENV, name)  # the name, never the value
    return True
