"""A real Arize Phoenix server for tests, on 127.0.0.1 (free ports), in a temporary folder.

The server (`arize-phoenix`, about 850 MB with its dependencies, some of whose pins differ
from what the project's venv holds) lives in its own venv: `.phoenix-venv/` at the repository
root, made by `.ci/run` (or by hand: `python3 -m venv .phoenix-venv && .phoenix-venv/bin/pip
install arize-phoenix==VERSION`, the version .ci/run names); `RT4CHART_PHOENIX` may name
another `phoenix` executable. `phoenix serve` forks workers: it is started in its own session
and stopped by its process group (SIGTERM, then SIGKILL after a bounded wait). Its SQLite
database and logs stay in the temporary working folder. External resources and telemetry are
switched off, so it makes no request beyond loopback. Start-up measured at 13-25 s.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 15.0


def phoenix_executable() -> Path:
    """The `phoenix` command to start: $RT4CHART_PHOENIX, else .phoenix-venv's."""
    path = Path(os.environ.get("RT4CHART_PHOENIX") or REPO / ".phoenix-venv" / "bin" / "phoenix")
    if not path.exists():
        raise FileNotFoundError(
            f"no Phoenix server at {path}: run `bash .ci/run`, or create the venv as "
            f"tests/fakes/phoenix_server.py says, or set RT4CHART_PHOENIX")
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _environment(workdir: Path, port: int, grpc_port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PHOENIX_")}
    env.update({
        "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port), "PHOENIX_WORKING_DIR": str(workdir),
        # Offline and quiet: no docs assistant, no external resources, no telemetry.
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false", "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
    })
    return env


@dataclass
class PhoenixServer:
    """A running `phoenix serve` process group; use `start()`."""

    process: subprocess.Popen
    url: str
    log_path: Path

    @classmethod
    def start(cls, workdir: Path) -> PhoenixServer:
        port, grpc_port = free_port(), free_port()
        log_path = workdir / "phoenix.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                [str(phoenix_executable()), "serve"], cwd=workdir, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                env=_environment(workdir, port, grpc_port))
        server = cls(process, f"http://127.0.0.1:{port}", log_path)
        try:
            server._wait_ready()
        except BaseException:
            server.stop()
            raise
        return server

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"phoenix serve exited ({self.process.returncode}):\n"
                                   f"{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        raise TimeoutError(f"phoenix serve not ready after {READY_TIMEOUT_S:.0f} s:\n"
                           f"{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def close(self) -> None:  # contextlib.closing
        self.stop()

    def stop(self) -> None:
        """Stop the server's process group (only it: its group id is its own PID)."""
        if self.process.poll() is not None:
            return
        pgid = self.process.pid  # start_new_session: the group of the server we started
        for sig, wait_s in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue
