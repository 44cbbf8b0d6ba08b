"""Run bqemulator (a DuckDB-backed BigQuery emulator) without network access.

bqemulator installs and loads DuckDB's ``spatial`` extension when its engine starts and refuses
to start when that download fails, which it always does offline. rt4chart has no GEOGRAPHY
column, so this wrapper turns that step into a no-op (GEOGRAPHY and ``ST_*`` functions are then
unavailable) and skips the best-effort ``avro`` extension download (Avro loads unavailable),
then hands over to bqemulator's own command line, flags unchanged::

    python infra/local/bqemulator_offline.py start --rest-port 9050 --grpc-port 9060 \
        --project rt4chart-local --log-level warning

Without a sub-command, ``start`` is assumed. ``--rest-port 0`` picks a free port but does not
print it in a parseable form: choose the port yourself. Needs ``bqemulator`` and ``numpy``.
"""

from __future__ import annotations

import logging
import os
import sys

logger = logging.getLogger("bqemulator_offline")

_COMMANDS = {"start", "backup", "export", "import", "restore", "seed", "version"}


def _skip_spatial(self) -> None:  # noqa: ANN001 - replaces DuckDBEngine._load_spatial
    if self._connection is None:
        raise RuntimeError("DuckDBEngine not started")
    logger.warning("bqemulator_offline: DuckDB spatial extension not loaded (no GEOGRAPHY)")


def patch_engine() -> None:
    """Make bqemulator's engine start without DuckDB's spatial extension."""
    from bqemulator.storage.engine import DuckDBEngine

    if not callable(getattr(DuckDBEngine, "_load_spatial", None)):
        raise RuntimeError(
            "this bqemulator has no DuckDBEngine._load_spatial to skip (written for 1.4); "
            "update infra/local/bqemulator_offline.py"
        )
    DuckDBEngine._load_spatial = _skip_spatial  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> None:
    """Patch the engine, then run bqemulator's CLI with `argv` (default: sys.argv[1:])."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or (args[0] not in _COMMANDS and args[0] not in {"-h", "--help", "-V"}):
        args.insert(0, "start")
    # Avro support would be downloaded too; offline that only costs a failed attempt per start.
    os.environ.setdefault("BQEMU_ENABLE_FORMAT_EXTENSIONS", "false")
    patch_engine()
    from bqemulator.cli import main as bqemulator_cli

    bqemulator_cli(args=args, prog_name="bqemulator")


if __name__ == "__main__":
    main()
