"""Entrypoint of the Dataflow worker container: the API key from Secret Manager, then Beam.

Dataflow starts the SDK container with its entrypoint and arguments; the SDK harness that
`/opt/apache/beam/boot` starts inherits this process's environment, so the judge built in
`setup()` finds ``OPENAI_API_KEY`` there, and no file ever holds it.
"""

from __future__ import annotations

import logging
import os
import sys

from openai_key import export_api_key

BOOT = "/opt/apache/beam/boot"


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="worker_boot: %(message)s")
    try:
        export_api_key()
    except Exception:  # noqa: BLE001 - a worker without its key must not start judging
        logging.exception("could not read the judge's API key from Secret Manager")
        sys.exit(1)
    os.execv(BOOT, [BOOT, *sys.argv[1:]])


if __name__ == "__main__":
    main()
