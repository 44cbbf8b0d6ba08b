"""Beam's import-time notices kept out of the host's logging.

`import apache_beam` imports its BigQuery clients and, without the `[gcp]` extra (the base
install leaves them out on purpose), calls `logging.warning("apitools not found ...")` at module
level. That call configures the root logger when it has no handler yet (`logging.basicConfig`
at WARNING, to stderr): the line reaches every terminal, notebook and pytest run that imports
rt4chart, and a host's (or the command line's own) later `basicConfig` becomes a no-op, so INFO
lines such as a batch run's progress were never written to a log.

`install()` (called once by `rt4chart/__init__.py`) puts a finder at the front of
`sys.meta_path` that waits for the first `import apache_beam`; that import alone runs with a
handler on the root logger (so nothing is configured implicitly) and a filter dropping the
records Beam's own modules log while they are imported; both are removed as soon as the import
ends, whether it succeeds or fails, and so is the finder. The host's handlers, levels and
filters are as it set them before and after. Beam imported before rt4chart: nothing is done.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import logging
import os
import sys
from collections.abc import Iterator

BEAM = "apache_beam"


def _from_beam(record: logging.LogRecord) -> bool:
    return f"{os.sep}{BEAM}{os.sep}" in (record.pathname or "")


class _DropBeamRecords(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _from_beam(record)


@contextlib.contextmanager
def beam_notices_dropped() -> Iterator[None]:
    """While the block runs: the root logger has a handler (so no module-level
    `logging.warning` configures it) and drops the records Beam's modules log."""
    root = logging.getLogger()
    placeholder = logging.NullHandler()
    dropping = _DropBeamRecords()
    root.addHandler(placeholder)
    root.addFilter(dropping)
    try:
        yield
    finally:
        root.removeFilter(dropping)
        root.removeHandler(placeholder)


class _QuietLoader(importlib.abc.Loader):
    """The real loader of `apache_beam`, whose module is executed with Beam's notices dropped;
    everything else is the real loader's."""

    def __init__(self, real: importlib.abc.Loader):
        self._real = real

    def create_module(self, spec):
        return self._real.create_module(spec)

    def exec_module(self, module) -> None:
        with beam_notices_dropped():
            self._real.exec_module(module)

    def __getattr__(self, name: str):
        return getattr(self._real, name)


class QuietBeamFinder(importlib.abc.MetaPathFinder):
    """Finds `apache_beam` through the other finders, once, and hands its spec back with the
    quiet loader; then leaves `sys.meta_path`."""

    def find_spec(self, fullname, path, target=None):
        if fullname != BEAM:
            return None
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _QuietLoader(spec.loader)
                return spec
        return None


def install() -> None:
    """The finder in place, unless Beam is imported already or the finder is in place."""
    if BEAM in sys.modules or any(isinstance(f, QuietBeamFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, QuietBeamFinder())
