"""How fast `--input-format phoenix-api` reads spans from a real Phoenix server (not a test).

    python tests/bench/bench_phoenix_read.py [--traces 300] [--page-size 1000] [--url URL]

Starts a Phoenix server (tests/fakes/phoenix_server.py) unless --url names one, sends the
example traces under new ids (3 spans each) into a project of their own as OTLP protobuf, and
times the read into a folder (`phoenix_api.read_into`: root pages, then the traces' spans by
trace id, written as span JSON), printing spans/s.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "fakes"))

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue  # noqa: E402

from rt4chart.pipeline.sources.phoenix_api import (  # noqa: E402
    PhoenixSource,
    read_into,
)
from rt4chart.pipeline.sources.phoenix_client import (  # noqa: E402
    PhoenixClient,
    PhoenixTarget,
)

from phoenix_server import PhoenixServer  # noqa: E402
from span_export import example_records, otlp_request, trace_spans  # noqa: E402


def _send(url: str, project: str, n: int) -> int:
    valid = [r for r in example_records() if r.get("answer") is not None and r.get("contexts")]
    start, spans = datetime(2025, 1, 1, tzinfo=UTC), 0
    for batch in range(0, n, 50):
        request = ExportTraceServiceRequest()
        for i in range(batch, min(n, batch + 50)):
            record = {**valid[i % len(valid)], "trace_id": f"bench-{project}-{i}",
                      "timestamp": (start + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ")}
            one = otlp_request(trace_spans(record), "bench")
            one.resource_spans[0].resource.attributes.append(KeyValue(
                key="openinference.project.name", value=AnyValue(string_value=project)))
            request.resource_spans.extend(one.resource_spans)
            spans += len(trace_spans(record))
        httpx.post(f"{url}/v1/traces", content=request.SerializeToString(),
                   headers={"content-type": "application/x-protobuf"}, timeout=60
                   ).raise_for_status()
    return spans


def _wait(url: str, project: str, spans: int) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        got, cursor = 0, None
        while True:
            body = httpx.get(f"{url}/v1/projects/{project}/spans", timeout=60, params={
                "limit": 1000, **({"cursor": cursor} if cursor else {})}).json()
            got += len(body.get("data", []))
            cursor = body.get("next_cursor")
            if not cursor:
                break
        if got >= spans:
            return
        time.sleep(1)
    raise TimeoutError(f"Phoenix has {got} of {spans} spans")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=300)
    ap.add_argument("--page-size", type=int, default=1000)
    ap.add_argument("--url")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = None if a.url else PhoenixServer.start(Path(tmp))
        url = a.url or server.url
        try:
            project = f"bench-{uuid.uuid4().hex[:6]}"
            spans = _send(url, project, a.traces)
            _wait(url, project, spans)
            source = PhoenixSource(PhoenixTarget(url, project), page_size=a.page_size)
            started = time.monotonic()
            with PhoenixClient(source.target) as client:
                result = read_into(source, client, str(Path(tmp) / "out"))
            took = time.monotonic() - started
            print(f"{result.spans} spans of {result.traces} traces read in {took:.2f} s "
                  f"({result.spans / took:.0f} spans/s, page size {a.page_size})")
        finally:
            if server is not None:
                server.stop()


if __name__ == "__main__":
    main()
