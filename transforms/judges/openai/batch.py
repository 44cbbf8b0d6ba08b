"""The `openai-batch` judge: the same calls through the OpenAI Batch API, for backfills that can
wait (half the price, a separate rate-limit pool).

Calls are gathered as the stage submits them; after `batch_idle_s` without a new call (or at
`batch_max_requests`) they are written as one JSONL batch file, uploaded (`/v1/files`), and
submitted (`/v1/batches`, 24 h window); the batch is polled until it ends and each call gets its
own answer, which goes through the same parsing, validation and grounding as a direct call.
The stages follow one another as usual: global verification starts once local results exist.

Resumable: every request is named by the sha256 of its body (`custom_id`), and `batch_state_dir`
keeps which batch each request was submitted in and every answer received. A rerun after an
interruption (same command, `--overwrite`) takes stored answers at once, polls the batches still
running, and submits only requests never submitted, so nothing is paid twice. A call still
unanswered after `batch_max_wait_s` fails with that reason (its answer is `incomplete`, to be
redone by a rerun).
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
import os
import time
from dataclasses import dataclass, field

import openai
import orjson

from rt4chart.transforms.judges.base import JudgeError, queued
from rt4chart.transforms.judges.openai.judge import OpenAIConfig, OpenAIJudge
from rt4chart.transforms.judges.openai.kind import BATCH_TRAITS
from rt4chart.transforms.judges.openai.pricing import batch_prices
from rt4chart.transforms.judges.option_values import judge_option, take

logger = logging.getLogger(__name__)

ENDPOINT = "/v1/chat/completions"
ENDED = ("completed", "failed", "expired", "cancelled")


@dataclass(frozen=True)
class BatchConfig:
    state_dir: str
    idle_s: float = field(default=2.0, metadata=judge_option("batch_idle_s"))
    max_requests: int = field(default=5000, metadata=judge_option("batch_max_requests"))
    poll_s: float = field(default=30.0, metadata=judge_option("batch_poll_s"))
    max_wait_s: float = field(default=24 * 3600.0, metadata=judge_option("batch_max_wait_s"))

    @classmethod
    def pop_from(cls, options: dict[str, str]) -> BatchConfig:
        """Take the batch_* options out of a judge's options."""
        state = options.pop("batch_state_dir", None)
        if not state:
            raise ValueError("openai-batch judge: batch_state_dir is required (it makes a run "
                             "resumable); the CLI sets it to OUT/_batch_state")
        return cls(state, **take(cls, options, "openai-batch judge"))


class BatchState:
    """Files under `state_dir`: answers/<custom_id>.json and submitted/<custom_id> -> batch id."""

    def __init__(self, state_dir: str):
        self.answers = os.path.join(state_dir, "answers")
        self.submitted = os.path.join(state_dir, "submitted")
        os.makedirs(self.answers, exist_ok=True)
        os.makedirs(self.submitted, exist_ok=True)

    def answer(self, custom_id: str) -> dict | None:
        path = os.path.join(self.answers, f"{custom_id}.json")
        if not os.path.exists(path):
            return None
        with open(path, "rb") as fh:
            return orjson.loads(fh.read())

    def keep_answer(self, custom_id: str, record: dict) -> None:
        path = os.path.join(self.answers, f"{custom_id}.json")
        with open(path + ".tmp", "wb") as fh:
            fh.write(orjson.dumps(record))
        os.replace(path + ".tmp", path)

    def batch_of(self, custom_id: str) -> str | None:
        path = os.path.join(self.submitted, custom_id)
        if not os.path.exists(path):
            return None
        with open(path) as fh:
            return fh.read().strip() or None

    def keep_submitted(self, custom_ids: list[str], batch_id: str) -> None:
        for custom_id in custom_ids:
            with open(os.path.join(self.submitted, custom_id), "w") as fh:
                fh.write(batch_id)


class _Batcher:
    """Gathers request bodies into batch jobs and resolves each call with its own answer."""

    def __init__(self, client: openai.AsyncOpenAI, config: BatchConfig):
        self._client = client
        self._config = config
        self._state = BatchState(config.state_dir)
        self._queue: dict[str, tuple[dict, list[asyncio.Future]]] = {}
        self._watched: dict[str, asyncio.Task] = {}
        self._waiters: dict[str, list[asyncio.Future]] = {}
        self._flush_handle: asyncio.TimerHandle | None = None
        self.batches_created = 0

    async def complete(self, body: dict) -> dict:
        """The answer (a chat completion as a dict) to one request body."""
        custom_id = hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()
        stored = self._state.answer(custom_id)
        if stored is None:
            future = asyncio.get_running_loop().create_future()
            self._waiters.setdefault(custom_id, []).append(future)
            batch_id = self._state.batch_of(custom_id)
            if batch_id is not None:
                self._watch(batch_id)  # submitted before an interruption: poll, not pay again
            elif custom_id not in self._queue:
                self._queue[custom_id] = (body, [])
                self._schedule()
            try:
                stored = await asyncio.wait_for(future, self._config.max_wait_s)
            except TimeoutError as exc:
                raise JudgeError(f"batch answer not ready after {self._config.max_wait_s:g} s; "
                                 "rerun the same command to resume") from exc
        if stored.get("error"):
            raise JudgeError(f"batch request failed: {stored['error']}"[:300])
        return stored["body"]

    def _schedule(self) -> None:
        loop = asyncio.get_running_loop()
        if len(self._queue) >= self._config.max_requests:
            loop.create_task(self._flush())
            return
        if self._flush_handle is not None:
            self._flush_handle.cancel()
        self._flush_handle = loop.call_later(self._config.idle_s,
                                             lambda: loop.create_task(self._flush()))

    async def _flush(self) -> None:
        if not self._queue:
            return
        queue, self._queue = self._queue, {}
        lines = b"".join(
            orjson.dumps({"custom_id": cid, "method": "POST", "url": ENDPOINT, "body": body})
            + b"\n" for cid, (body, _) in queue.items())
        try:
            upload = await self._client.files.create(
                file=("rt4chart-batch.jsonl", io.BytesIO(lines)), purpose="batch")
            batch = await self._client.batches.create(
                input_file_id=upload.id, endpoint=ENDPOINT, completion_window="24h")
        except Exception as exc:  # noqa: BLE001 - every waiting call must hear why
            self._fail(list(queue), f"batch submission failed: {type(exc).__name__}: {exc}")
            return
        self.batches_created += 1
        self._state.keep_submitted(list(queue), batch.id)
        logger.info("submitted batch %s with %d requests", batch.id, len(queue))
        self._watch(batch.id)

    def _watch(self, batch_id: str) -> None:
        if batch_id not in self._watched:
            self._watched[batch_id] = asyncio.get_running_loop().create_task(
                self._poll(batch_id))

    async def _poll(self, batch_id: str) -> None:
        try:
            await self._poll_until_ended(batch_id)
        except Exception as exc:  # noqa: BLE001 - a polling failure: the calls wait, then time
            logger.warning("polling batch %s failed: %s", batch_id, exc)  # out with a reason
        finally:
            self._watched.pop(batch_id, None)

    async def _poll_until_ended(self, batch_id: str) -> None:
        deadline = time.monotonic() + self._config.max_wait_s
        while True:
            batch = await self._client.batches.retrieve(batch_id)
            if batch.status in ENDED or time.monotonic() > deadline:
                break
            await asyncio.sleep(self._config.poll_s)
        if batch.status != "completed":
            logger.warning("batch %s ended %s", batch_id, batch.status)
            return  # waiters time out with a clear reason; a rerun resubmits nothing already paid
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                content = await self._client.files.content(file_id)
                self._resolve(content.read())

    def _resolve(self, jsonl: bytes) -> None:
        for line in jsonl.splitlines():
            if not line.strip():
                continue
            record = orjson.loads(line)
            response = record.get("response") or {}
            status = response.get("status_code", 0)
            kept = {"body": response.get("body")} if status == 200 else {
                "error": record.get("error") or f"HTTP {status}: {response.get('body')}"}
            self._state.keep_answer(record["custom_id"], kept)
            for future in self._waiters.pop(record["custom_id"], []):
                if not future.done():
                    future.set_result(kept)

    def _fail(self, custom_ids: list[str], reason: str) -> None:
        for custom_id in custom_ids:
            for future in self._waiters.pop(custom_id, []):
                if not future.done():
                    future.set_exception(JudgeError(reason[:300]))


class BatchOpenAIJudge(OpenAIJudge):
    """OpenAIJudge whose calls go through the Batch API (see the module docstring)."""

    kind_traits = BATCH_TRAITS

    def __init__(self, options: dict[str, str] | None = None):
        options = dict(options or {})
        self.batch_config = BatchConfig.pop_from(options)
        # Stable request bodies (a rerun finds its stored answers), no holding for a batch.
        options.update(output_reservation="fixed", prefix_gate="false")
        super().__init__(options)
        self.prices = batch_prices(self.prices, self.config)  # the table's batch_discount
        self._batcher: _Batcher | None = None

    async def _attempt(self, messages: list[dict], schema_name: str, logprobs: bool,
                       cache_key: str | None, max_tokens: int,
                       temperature: float | None = None) -> dict:
        client = self._ensure_client()
        if self._batcher is None:
            self._batcher = _Batcher(client, self.batch_config)
        body = self._request_body(messages, schema_name, logprobs, cache_key, max_tokens,
                                  temperature)
        with queued():  # a batch takes hours by design: the wait is not the call hanging
            answer = await self._batcher.complete(body)
        completion = openai.types.chat.ChatCompletion.model_validate(answer)
        return self._parse(completion, schema_name)


def factory(options: dict[str, str]) -> BatchOpenAIJudge:
    return BatchOpenAIJudge(options)


__all__ = ["BatchOpenAIJudge", "BatchConfig", "OpenAIConfig", "factory"]
