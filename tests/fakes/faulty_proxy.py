"""A loopback HTTP proxy in front of a real server (the Phoenix of `phoenix_server.py`) that
answers 503 to chosen requests: the faults a page read must survive (retries) or fail on
(a clear error, never a partial read). It forwards everything else unchanged and records the
requests it saw (path, query, Authorization header).

    with FaultyProxy(upstream, fail=lambda n, path, query: ..., ) as proxy:
        ... proxy.url ...

`fail(n, path, query)` is asked for every request (`n`: how many requests with that path came
before) and says whether to answer it with 503 instead of forwarding it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import httpx

Rule = Callable[[int, str, dict], bool]


@dataclass
class Seen:
    method: str
    path: str
    query: dict
    authorization: str | None
    failed: bool


@dataclass
class FaultyProxy:
    upstream: str
    fail: Rule
    seen: list[Seen] = field(default_factory=list)

    def __enter__(self) -> FaultyProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _handle(self) -> None:
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)
                with lock:
                    n = sum(1 for s in proxy.seen if s.path == parts.path)
                    failed = proxy.fail(n, parts.path, query)
                    proxy.seen.append(Seen(self.command, parts.path, query,
                                           self.headers.get("Authorization"), failed))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if failed:
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "content-length", "connection")}
                answer = httpx.request(self.command, proxy.upstream + self.path, headers=headers,
                                       content=body, timeout=30.0)
                self.send_response(answer.status_code)
                for key, value in answer.headers.items():
                    if key.lower() not in ("content-length", "transfer-encoding", "connection",
                                           "content-encoding"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = _handle

        lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
