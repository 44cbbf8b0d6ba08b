"""Separate SDK workers, as Flink, Spark and Dataflow run them, from Beam's own pieces.

`worker_pool(env, log)` starts Beam's worker pool (``apache_beam.runners.worker.worker_pool_main``)
in a process group of its own, with `env` as its whole environment (the workers it starts see
that, not the launcher's), and stops the group by its id. A job reaches it with
`portable_args(port)`: Beam's portable runner, its job server embedded in the launcher, and
every stage run by the pool's workers (``--environment_type EXTERNAL``). `audit_on_pool` runs
`rt4chart audit` (a process of its own, the launcher) against a local OpenAI-compatible fake on
such a pool and collects what came of it.

The pool starts each worker with the ``python`` first on its PATH: the venv's ``bin`` goes first,
else the workers die without Apache Beam and the job waits forever.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from fake_openai_server import FakeOpenAI
from testutil import read_tables, write_jsonl

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
RUN_TIMEOUT_S = 900  # a run ends by itself; this only stops a hung one
PROBE_HEADER = "x-rt4chart-probe"  # the launcher's probe calls (judges/openai/probe.py)


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


def launcher_env(extra: Mapping[str, str]) -> dict[str, str]:
    """The launcher's environment: this process's without any judge setting, plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "AZURE_OPENAI_"))}
    return {**env, **extra}


@dataclass
class PoolRun:
    """What came of an audit on a worker pool."""

    code: int
    stdout: str
    stderr: str
    out: Path
    answers: list[dict]
    summary: dict | None
    received: list  # the server's requests (strict_profiles.Received)
    pool_log: str

    @property
    def probe_calls(self) -> list:
        return [r for r in self.received if PROBE_HEADER in r.headers]

    @property
    def run_calls(self) -> list:
        """The requests of the run's stages (the workers'), not the launcher's probe."""
        return [r for r in self.received if PROBE_HEADER not in r.headers]


def audit_on_pool(folder: Path, traces: list[dict], pool_env: Mapping[str, str],
                  env: Mapping[str, str], *args: str) -> PoolRun:
    """`rt4chart audit TRACES --judge openai ARGS` in a launcher process whose environment is
    `env` plus OPENAI_BASE_URL (a fresh FakeOpenAI's), its stages on a fresh worker pool whose
    environment is `pool_env`."""
    path = write_jsonl(folder / "traces.jsonl", traces)
    out, log = folder / "out", folder / "pool.log"
    with FakeOpenAI() as server, worker_pool(pool_env, log) as port:
        done = subprocess.run(
            [sys.executable, "-m", "rt4chart.pipeline.launcher", "audit", str(path),
             "--judge", "openai", "--out", str(out), *args, *portable_args(port)],
            env={**env, "OPENAI_BASE_URL": server.base_url}, capture_output=True, text=True,
            timeout=RUN_TIMEOUT_S)
        received = list(server.received)
    summary = out / "summary.json"
    return PoolRun(done.returncode, done.stdout, done.stderr, out,
                   read_tables(out).get("answers", []) if (out / "answers").exists() else [],
                   json.loads(summary.read_text()) if summary.exists() else None, received,
                   log.read_text(errors="replace"))
