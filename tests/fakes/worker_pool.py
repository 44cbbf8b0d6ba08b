"""Separate SDK workers, as Flink, Spark and Dataflow run them, from Beam's own pieces.

`worker_pool(env)` starts Beam's worker pool (``apache_beam.runners.worker.worker_pool_main``)
in a process group of its own, with `env` as its whole environment (the workers it starts see
that, not the launcher's), and stops the group by its id. A job reaches it with
`portable_args(port)`: Beam's portable runner, its job server embedded in the launcher, and
every stage run by the pool's workers (``--environment_type EXTERNAL``).

The pool starts each worker with the ``python`` first on its PATH: the venv's ``bin`` goes first,
else the workers die without Apache Beam and the job waits forever.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def worker_env(extra: Mapping[str, str]) -> dict[str, str]:
    """A worker's whole environment: the venv's ``bin`` first on PATH, a home and a temp
    folder, and `extra` (the key, for instance). Nothing of the launcher's judge settings."""
    venv_bin = str(Path(sys.executable).parent)
    env = {"PATH": os.pathsep.join([venv_bin, os.environ.get("PATH", "/usr/bin:/bin")]),
           "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8"}
    for name in ("TMPDIR", "HYPOTHESIS_PROFILE"):
        if name in os.environ:
            env[name] = os.environ[name]
    return {**env, **extra}


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def worker_pool(env: Mapping[str, str], log: Path) -> Iterator[int]:
    """A worker pool on a free loopback port whose environment is exactly `env` (see
    worker_env); yields the port. Its output goes to `log`. Stopped, with every worker it
    started, by its process group's id."""
    port = free_port()
    with open(log, "wb") as out:
        pool = subprocess.Popen(
            [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main",
             f"--service_port={port}"],
            env=dict(env), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _listening(port):
            if pool.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker pool did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield port
    finally:
        _stop(pool)


def _stop(pool: subprocess.Popen) -> None:
    """The pool's process group (the pool and the workers it forked): TERM, then KILL."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pool.pid, signal.SIGTERM)
    try:
        pool.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pool.pid, signal.SIGKILL)
        pool.wait()
    with contextlib.suppress(ProcessLookupError):  # a worker that outlived the pool
        os.killpg(pool.pid, signal.SIGKILL)


def portable_args(port: int) -> list[str]:
    """Beam's options that run a job's stages on the pool at `port`."""
    return ["--runner", "PortableRunner", "--job_endpoint", "embed",
            "--environment_type", "EXTERNAL", "--environment_config", f"localhost:{port}"]
