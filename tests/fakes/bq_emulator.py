"""A local BigQuery for tests: bqemulator in a subprocess, and a client for Beam's sink.

`start_bqemulator(project)` runs ``infra/local/bqemulator_offline.py`` (bqemulator without
DuckDB's spatial extension, so it starts offline) on a free port and waits until it answers.
`BqEmulator.client()` is a google-cloud-bigquery client for it whose calls give up after a
few seconds: the client's default retry would hide an emulator error for 600 s.

`BeamBigQueryClient` is what Beam's `WriteToBigQuery(test_client=...)` needs on the
STREAMING_INSERTS path. Beam uses the one object in two roles (see `BigQueryWrapper` in
``apache_beam/io/gcp/bigquery_tools.py``): as its apitools client, where `BigQueryWriteFn`
calls ``tables.Get`` and, for CREATE_IF_NEEDED, ``tables.Insert`` (``datasets.Get/Insert``
only serve Beam's temporary datasets, not this path; forwarded anyway), and as a
google-cloud-bigquery client, where it calls ``insert_rows_json`` (tabledata.insertAll). It
forwards all of these to the emulator and records every insertAll call (table, insert ids,
rows) under its `recorder` id, so that a test can see what Beam sent.
"""

from __future__ import annotations

import collections
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from apitools.base.py import encoding
from apitools.base.py.exceptions import HttpError
from google.api_core import exceptions as api_exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery

WRAPPER = Path(__file__).resolve().parents[2] / "infra" / "local" / "bqemulator_offline.py"

# insertAll calls seen by BeamBigQueryClient objects, by recorder id. Beam pickles the client
# into its DoFn, so the copies that run share this module-level state (in-process runners only).
_CALLS: dict[str, list[dict]] = collections.defaultdict(list)
_LOST_RESPONSES: dict[str, int] = collections.defaultdict(int)
_LOCK = threading.Lock()


def free_port() -> int:
    """An ephemeral TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ddl_type(field: bigquery.SchemaField) -> str:
    """A column's type in BigQuery DDL, as bqemulator translates it (no NOT NULL in a STRUCT)."""
    if field.field_type in ("RECORD", "STRUCT"):
        base = "STRUCT<" + ", ".join(f"`{f.name}` {_ddl_type(f)}" for f in field.fields) + ">"
    else:
        base = {"INTEGER": "INT64", "FLOAT": "FLOAT64", "BOOLEAN": "BOOL"}.get(
            field.field_type, field.field_type)
    return f"ARRAY<{base}>" if field.mode == "REPEATED" else base


class ShortClient(bigquery.Client):
    """A BigQuery client whose every API call times out and stops retrying after seconds."""

    deadline_s: float = 10.0
    timeout_s: float = 5.0

    def _call_api(self, retry, span_name=None, span_attributes=None, job_ref=None,
                  headers=None, **kwargs):
        if retry:
            retry = retry.with_timeout(self.deadline_s)
        if kwargs.get("timeout") is None:
            kwargs["timeout"] = self.timeout_s
        return super()._call_api(retry, span_name, span_attributes, job_ref, headers, **kwargs)

    def update_table(self, table, fields, *args, **kwargs):
        """tables.patch; bqemulator then changes the table's metadata but not its storage, so
        that an insert with a new column fails: the columns added are also added to the
        storage, by DDL (which in turn would not change the metadata). BigQuery needs either
        one, not both."""
        before = {f.name for f in self.get_table(table.reference).schema}
        updated = super().update_table(table, fields, *args, **kwargs)
        if "schema" in fields:
            ref = f"`{table.project}.{table.dataset_id}.{table.table_id}`"
            for field in updated.schema:
                if field.name not in before:
                    self.query(f"ALTER TABLE {ref} ADD COLUMN IF NOT EXISTS `{field.name}` "
                               f"{_ddl_type(field)}", job_retry=None).result(timeout=10)
        return updated


def short_client(endpoint: str, project: str, deadline_s: float = 10.0) -> ShortClient:
    """A google-cloud-bigquery client of the emulator at `endpoint`, anonymous, short timeouts."""
    client = ShortClient(
        project=project,
        credentials=AnonymousCredentials(),
        client_options={"api_endpoint": endpoint},
    )
    client.deadline_s = deadline_s
    client.timeout_s = min(5.0, deadline_s)
    return client


@dataclass
class BqEmulator:
    """A running emulator process; stop it with `stop()`."""

    project: str
    endpoint: str
    process: subprocess.Popen
    log_path: Path

    def client(self, deadline_s: float = 10.0) -> ShortClient:
        return short_client(self.endpoint, self.project, deadline_s)

    def beam_client(self, **kwargs) -> BeamBigQueryClient:
        return BeamBigQueryClient(self.endpoint, self.project, **kwargs)

    def query(self, sql: str, timeout_s: float = 15.0) -> list[dict]:
        """Rows of a standard-SQL query as dicts, with no silent job retries."""
        job = self.client().query(sql, job_retry=None)
        return [dict(row.items()) for row in job.result(timeout=timeout_s)]

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout_s: float = 10.0) -> None:
        """Terminate the emulator's process group (its PID is the group id) and wait for it."""
        if self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout_s)
        except ProcessLookupError:
            self.process.wait(timeout_s)


def _ready(endpoint: str) -> bool:
    try:
        with urllib.request.urlopen(f"{endpoint}/readyz", timeout=1) as resp:
            return resp.status == 200
    except OSError:
        return False


def start_bqemulator(project: str, ready_timeout_s: float = 30.0,
                     log_dir: str | None = None) -> BqEmulator:
    """Start bqemulator (offline wrapper) on a free port and wait until it is ready.

    Raises:
        RuntimeError: the emulator exited or was not ready in time; the message holds the
            tail of its log.
    """
    port = free_port()
    log_fd, log_name = tempfile.mkstemp(prefix="bqemulator-", suffix=".log", dir=log_dir)
    cmd = [
        sys.executable, str(WRAPPER), "start",
        "--rest-host", "127.0.0.1", "--rest-port", str(port),
        "--grpc-host", "127.0.0.1", "--grpc-port", str(free_port()),
        "--project", project, "--ephemeral", "--log-level", "warning",
    ]
    with os.fdopen(log_fd, "wb") as log:
        process = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    emu = BqEmulator(project, f"http://127.0.0.1:{port}", process, Path(log_name))
    deadline = time.monotonic() + ready_timeout_s
    while not _ready(emu.endpoint):
        if process.poll() is not None:
            raise RuntimeError(
                f"bqemulator exited with code {process.returncode} before it was ready;"
                f" log {log_name} ends with:\n{emu.log_tail()}"
            )
        if time.monotonic() > deadline:
            emu.stop()
            raise RuntimeError(
                f"bqemulator not ready on {emu.endpoint} after {ready_timeout_s:.0f} s;"
                f" log {log_name} ends with:\n{emu.log_tail()}"
            )
        time.sleep(0.1)
    return emu


# --- Beam's test_client ------------------------------------------------------------------


def _http_error(exc: Exception, url: str) -> HttpError:
    """The apitools error Beam expects (it tests `status_code` for 404 and 409)."""
    code = getattr(exc, "code", None) or getattr(getattr(exc, "cause", None), "code", None)
    return HttpError({"status": code or 500}, str(exc).encode(), url)


class _Resource:
    """`client.tables` / `client.datasets`: apitools-style Get and Insert."""

    def __init__(self, owner: BeamBigQueryClient, kind: str):
        self._owner = owner
        self._kind = kind

    def Get(self, request):  # noqa: N802 - apitools naming
        return self._owner._call(self._kind, "get", request)

    def Insert(self, request, **_):  # noqa: N802 - apitools naming
        return self._owner._call(self._kind, "insert", request)


@dataclass
class BeamBigQueryClient:
    """Beam's `test_client` for STREAMING_INSERTS, forwarding to the emulator.

    Args:
        endpoint: the emulator's URL.
        project: default project of the google-cloud-bigquery client.
        recorder: key under which insertAll calls are recorded (`calls()`).
        lost_responses: the first N insertAll calls reach the emulator but report every row
            as failed with a transient error (``backendError``), as when a response is lost:
            Beam must then resend those rows, with the same insert ids.
    """

    endpoint: str
    project: str
    recorder: str = field(default_factory=lambda: uuid.uuid4().hex)
    lost_responses: int = 0

    def __post_init__(self):
        self._client = None

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_client"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._client = None

    @property
    def gcp(self) -> ShortClient:
        if self._client is None:
            self._client = short_client(self.endpoint, self.project)
        return self._client

    @property
    def tables(self) -> _Resource:
        return _Resource(self, "tables")

    @property
    def datasets(self) -> _Resource:
        return _Resource(self, "datasets")

    def calls(self) -> list[dict]:
        """insertAll calls seen so far by this client and its pickled copies."""
        with _LOCK:
            return list(_CALLS[self.recorder])

    def _call(self, kind: str, verb: str, request):
        from apache_beam.io.gcp.internal.clients import bigquery as bq_messages

        gcp = self.gcp
        try:
            if kind == "tables" and verb == "get":
                ref = f"{request.projectId}.{request.datasetId}.{request.tableId}"
                resource = gcp.get_table(ref).to_api_repr()
                return encoding.DictToMessage(resource, bq_messages.Table)
            if kind == "tables":
                body = encoding.MessageToDict(request.table)
                table = gcp.create_table(bigquery.Table.from_api_repr(body))
                return encoding.DictToMessage(table.to_api_repr(), bq_messages.Table)
            if verb == "get":
                resource = gcp.get_dataset(f"{request.projectId}.{request.datasetId}")
                return encoding.DictToMessage(resource.to_api_repr(), bq_messages.Dataset)
            body = encoding.MessageToDict(request.dataset)
            dataset = gcp.create_dataset(bigquery.Dataset.from_api_repr(body))
            return encoding.DictToMessage(dataset.to_api_repr(), bq_messages.Dataset)
        except (api_exceptions.GoogleAPICallError, api_exceptions.RetryError) as exc:
            raise _http_error(exc, f"{self.endpoint} {kind}.{verb}") from exc

    def insert_rows_json(self, table, json_rows, row_ids=None, skip_invalid_rows=None,
                         ignore_unknown_values=None, timeout=None, **_):
        """tabledata.insertAll, as `google.cloud.bigquery.Client.insert_rows_json`."""
        with _LOCK:
            _CALLS[self.recorder].append(
                {"table": table, "row_ids": list(row_ids or []), "rows": list(json_rows)}
            )
            lose = _LOST_RESPONSES[self.recorder] < self.lost_responses
            if lose:
                _LOST_RESPONSES[self.recorder] += 1
        errors = self.gcp.insert_rows_json(
            table, json_rows, row_ids=row_ids, skip_invalid_rows=skip_invalid_rows,
            ignore_unknown_values=ignore_unknown_values, timeout=timeout or 10,
        )
        if lose:
            transient = {"reason": "backendError", "message": "response lost (fake)"}
            return [{"index": i, "errors": [transient]} for i in range(len(json_rows))]
        return errors
