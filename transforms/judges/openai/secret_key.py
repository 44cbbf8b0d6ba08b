"""The judge's API key from Google Secret Manager, for workers that have no key of their own.

Dataflow's stock workers start without the launching machine's environment, so a judge that
reads ``OPENAI_API_KEY`` there finds nothing. Two ways get the key to them without a file:

- the rt4chart image (infra/flex_template), whose entrypoint reads the secret named in
  ``RT4CHART_OPENAI_SECRET`` into the environment before Beam starts (infra/.../openai_key.py);
- the judge option ``api_key_secret`` (any runner, stock workers included): each worker's judge
  reads the secret version when it is built and holds it (memory, never a file nor the
  environment); its judge runtime redacts it from what the stages write (``held_keys``).
  The launcher reads it too, so a wrong name or a missing permission stops the launch rather
  than every worker.

A name is a secret id in the job's project, ``projects/P/secrets/S`` (version ``latest``) or
``projects/P/secrets/S/versions/V``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

logger = logging.getLogger("rt4chart")

_FULL = re.compile(r"^projects/[^/]+/secrets/[^/]+(/versions/[^/]+)?$")
_ID = re.compile(r"^[A-Za-z0-9_-]{1,255}$")


def is_full_name(secret: str) -> bool:
    """Whether `secret` names its project (projects/P/secrets/S[/versions/V])."""
    return bool(_FULL.match(secret.strip()))


def version_name(secret: str, project: str | None, what: str = "api_key_secret") -> str:
    """The resource name of the secret version to read (`what` names the setting in errors).

    Raises:
        ValueError: the name is malformed, or a bare id is given and no project is known.
    """
    secret = secret.strip()
    if _FULL.match(secret):
        return secret if "/versions/" in secret else f"{secret}/versions/latest"
    if not _ID.match(secret):
        raise ValueError(f"{what} is neither a secret id nor projects/P/secrets/S: {secret!r}")
    if not project:
        raise ValueError(f"{what}={secret!r} is a bare id and the project is unknown "
                         "(give projects/P/secrets/S)")
    return f"projects/{project}/secrets/{secret}/versions/latest"


def default_project() -> str | None:
    """The project of the environment's Google credentials (None without any)."""
    import google.auth
    import google.auth.exceptions

    try:
        return google.auth.default()[1]
    except google.auth.exceptions.DefaultCredentialsError:
        return None


def access_secret(name: str) -> str:
    """The payload of secret version `name` (Secret Manager's client, the default credentials)."""
    from google.cloud import secretmanager

    response = secretmanager.SecretManagerServiceClient().access_secret_version(name=name)
    return response.payload.data.decode("utf-8").strip()


def read_api_key(secret: str, access: Callable[[str], str] | None = None,
                 project: Callable[[], str | None] | None = None) -> str:
    """The key held in `secret` (a secret id or resource name); `access` and `project` default
    to Secret Manager's client and the credentials' project.

    Raises:
        ValueError: a malformed name, or an empty secret version.
        google.api_core.exceptions.GoogleAPICallError: Secret Manager refused or failed.
    """
    name = version_name(secret, None if is_full_name(secret) else (project or default_project)())
    value = (access or access_secret)(name)
    if not value:
        raise ValueError(f"secret version {name} is empty")
    logger.info("judge API key read from %s", name)  # the name, never the value
    return value
