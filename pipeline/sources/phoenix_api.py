"""Spans read from a live Phoenix server (`audit --input-format phoenix-api`).

Before the pipeline starts, the launcher asks Phoenix's REST API (20.26:
`GET /v1/projects/{project}/spans`, cursor-paginated, filtered on the spans' start time) for
the traces of a window, and writes their spans to the run's staging folder as OpenInference
span JSON (`_phoenix/spans.jsonl`, one REST span a line): the audit then reads that file like
any span file (`sources/phoenix.py`), so the spans become traces by the same mapping as OTLP
and exports do, and the file goes into the run folder with the tables (the report finds the
traces there).

What is read: the traces whose root span (no parent) starts within [--since, --until), each
with all its spans (asked for by trace id, so a window never cuts a trace; a trace whose root
has not reached Phoenix yet is left for a later run, not audited without it). Phoenix keeps no
resource attributes (its REST spans carry none; `service.name` is gone once ingested), so each
span gets the one resource-level fact Phoenix has, its project: `service.name` and
`openinference.project.name` are the project's name, and the default route is the project
(a span attribute, e.g. `--route-attribute metadata.route`, reads the route from the spans).

A page that fails is retried (tenacity, bounded: `PhoenixTarget.attempts`), then the run
fails with `PhoenixReadError`: a partial read is never audited. A bad endpoint, project or key
is a ValueError (a usage error) found by `check` before anything is written.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson
from apache_beam.io.filesystems import FileSystems

from rt4chart.pipeline.sources.common import SpanDecodeError, time_ns
from rt4chart.pipeline.sources.phoenix import RESOURCE
from rt4chart.pipeline.sources.phoenix_client import PhoenixClient, PhoenixError, PhoenixTarget
from rt4chart.pipeline.sources.watermark import READ_RECORD, SPANS_FILE, Watermark, newest
from rt4chart.transforms.common.options_spec import option
from rt4chart.transforms.common.redact import redact_configured

logger = logging.getLogger(__name__)

API_FORMAT = "phoenix-api"
MAX_PAGE = 1000  # Phoenix's own limit on `limit`
TRACES_PER_QUERY = 100
SERVICE_NAME = "service.name"
PROJECT_NAME = "openinference.project.name"


class PhoenixReadError(RuntimeError):
    """Reading the spans from Phoenix failed part-way (after the retries): the run stops."""


def _moment(text: str | None, flag: str) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{flag} must be an ISO-8601 time, e.g. 2026-12-01T00:00:00Z, got "
                         f"{text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)  # no offset: UTC


@dataclass(frozen=True)
class PhoenixSource:
    """Which spans `--input-format phoenix-api` reads, and from where (validated once)."""

    target: PhoenixTarget  # endpoint, project, key, retries (--phoenix-endpoint/-project)
    since: str | None = option(
        "--since", metavar="TIME",
        help="phoenix-api: read the traces whose root span starts at or after this ISO-8601 "
             "time (no offset: UTC)")
    until: str | None = option(
        "--until", metavar="TIME",
        help="phoenix-api: ... and before this ISO-8601 time (default: all)")
    watermark: bool = option(
        "--watermark", kind="flag", default=False,
        help="phoenix-api: incremental runs: start after the newest root span the last "
             "successful run into the same --out read (OUT/_phoenix/read.json; a failed run "
             "leaves it as it was); --since only when there is none yet")
    page_size: int = option(
        "--phoenix-page-size", parse=int, default=MAX_PAGE, metavar="N",
        help=f"phoenix-api: spans per request (default {MAX_PAGE}, Phoenix's maximum)")
    after: Watermark | None = None  # --watermark: where the last run into --out stopped

    def __post_init__(self) -> None:
        since, until = _moment(self.since, "--since"), _moment(self.until, "--until")
        if since and until and since >= until:
            raise ValueError(f"--since {self.since} must be before --until {self.until}")
        if not 1 <= self.page_size <= MAX_PAGE:
            raise ValueError(f"--phoenix-page-size must be within 1..{MAX_PAGE}, got "
                             f"{self.page_size}")

    def bounds(self) -> tuple[str | None, str | None]:
        """The window's (inclusive start, exclusive end) as Phoenix takes them (ISO text):
        from the watermark when there is one, else from --since."""
        since = self.after.start_time if self.after is not None else self.since
        moments = (_moment(since, "--since"), _moment(self.until, "--until"))
        return tuple(m.isoformat() if m else None for m in moments)  # type: ignore[return-value]

    @property
    def where(self) -> str:
        return f"project {self.target.project!r} at {self.target.base_url}"


def check(target: PhoenixTarget, client: PhoenixClient) -> None:
    """That Phoenix answers and has the project.

    Raises:
        ValueError: the endpoint does not answer (after the retries), refuses the key, or has
            no such project; the message names which.
    """
    project, base_url = target.project, target.base_url
    try:
        client.get_json(f"/v1/projects/{project}")
    except PhoenixError as exc:
        if exc.status == 404:
            raise ValueError(f"Phoenix has no project {project!r} at {base_url} "
                             f"(--phoenix-project){_projects(client)}") from None
        if exc.status in (401, 403):
            raise ValueError(f"Phoenix at {base_url} refused the request "
                             f"({exc.status}): set PHOENIX_API_KEY to a key it accepts"
                             ) from None
        raise ValueError(f"cannot read from Phoenix at {base_url} (--phoenix-endpoint): "
                         f"{exc}") from None


def _projects(client: PhoenixClient) -> str:
    try:
        names = [p.get("name") for p in client.get_json("/v1/projects").get("data", ())]
    except PhoenixError:
        return ""
    return f"; it has: {', '.join(str(n) for n in names[:20])}" if names else ""


def _pages(client: PhoenixClient, url: str, params: dict) -> Iterator[list[dict]]:
    cursor = None
    while True:
        body = client.get_json(url, {**params, **({"cursor": cursor} if cursor else {})})
        data = body.get("data")
        if not isinstance(data, list):
            raise PhoenixError(f"GET {url}: the answer has no data list")
        yield data
        cursor = body.get("next_cursor")
        if not cursor:
            return


@dataclass
class ReadResult:
    """What a read fetched: spans, traces, and the watermark to keep."""

    spans: int = 0
    traces: int = 0
    watermark: Watermark | None = None


def _roots(client: PhoenixClient, source: PhoenixSource) -> list[tuple[int, str]]:
    """(root start ns, trace id) of the traces to read, oldest first; those the last run read
    at its watermark's very time are left out."""
    since, until = source.bounds()
    after = source.after
    params = {"parent_id": "null", "limit": source.page_size, "sort": "start_time",
              "order": "asc", **({"start_time": since} if since else {}),
              **({"end_time": until} if until else {})}
    url = f"/v1/projects/{source.target.project}/spans"
    roots: dict[str, int] = {}
    for page in _pages(client, url, params):
        for span in page:
            trace_id = str((span.get("context") or {}).get("trace_id") or "")
            start = time_ns(span.get("start_time"))
            if trace_id and not (after and after.covers(trace_id, start)):
                roots[trace_id] = min(start, roots.get(trace_id, start))
    return sorted((start, tid) for tid, start in roots.items())


def _spooled(span: dict, project: str) -> bytes:
    resource = {SERVICE_NAME: project, PROJECT_NAME: project}
    return orjson.dumps({**span, RESOURCE: resource}) + b"\n"


def read_into(source: PhoenixSource, client: PhoenixClient, folder: str) -> ReadResult:
    """Fetch the window's traces into `folder`/_phoenix/spans.jsonl and write what was read,
    with the new watermark, to `folder`/_phoenix/read.json; what was read.

    Raises:
        PhoenixReadError: a request failed after its retries (the files are then partial: the
            caller aborts the run, whose staging folder holds them).
    """
    result = ReadResult()
    url = f"/v1/projects/{source.target.project}/spans"
    try:
        roots = _roots(client, source)
        ids = [tid for _, tid in roots]
        with FileSystems.create(FileSystems.join(folder, SPANS_FILE)) as out:
            for i in range(0, len(ids), TRACES_PER_QUERY):
                params = {"trace_id": ids[i:i + TRACES_PER_QUERY], "limit": source.page_size}
                for page in _pages(client, url, params):
                    for span in page:
                        out.write(_spooled(span, source.target.project))
                    result.spans += len(page)
    except (PhoenixError, SpanDecodeError) as exc:
        raise PhoenixReadError(redact_configured(
            f"reading spans from Phoenix ({source.where}) failed after {result.spans} span(s): "
            f"{exc}; nothing was audited (a partial read is never audited)")) from None
    result.traces = len(roots)
    result.watermark = newest(roots, source.after)
    _write_record(source, result, folder)
    logger.info("phoenix-api: %d span(s) of %d trace(s) read from %s (window %s .. %s)",
                result.spans, result.traces, source.where, *source.bounds())
    return result


def _write_record(source: PhoenixSource, result: ReadResult, folder: str) -> None:
    since, until = source.bounds()
    record = {"endpoint": source.target.base_url, "project": source.target.project,
              "since": since, "until": until, "spans": result.spans, "traces": result.traces,
              "watermark": result.watermark.record() if result.watermark else None}
    with FileSystems.create(FileSystems.join(folder, READ_RECORD)) as fh:
        fh.write(orjson.dumps(record, option=orjson.OPT_INDENT_2))
