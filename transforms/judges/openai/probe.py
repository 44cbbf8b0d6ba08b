"""The start-up probe of an OpenAI-compatible judge: a few short calls before the first trace.

It learns, from what the endpoint does and never from the model's name:

1. **limit**: a verification prompt with a 2-token output limit. An error that names a field is
   corrected (capabilities.py) and the call sent again; any other error (a wrong key, a wrong
   model, no chat endpoint, nothing listening) makes the judge unusable, with the server's own
   message. A reply longer than the limit without ``finish_reason: length`` means the server
   ignores that limit's parameter (llama-cpp-python reads only ``max_tokens``): the other one is
   tried. A prompt counted far shorter than sent means the server's chat template dropped part
   of it (a template without a system role drops rt4chart's instructions): unusable.
2. **reply**: the same prompt with a real budget; the reply must match the verification schema
   (else one step down the structured-output ladder, to plain text); a reply without the
   requested ``logprobs`` turns them off (``p_unsupported`` then comes from the verdict).
3. **capacity** (endpoints on this machine or a private network only): the server's slots
   (llama.cpp's ``/props``), else whether two calls at once take twice as long (one slot).
4. **timing**: the endpoint's speed (tokens read and written per second, from the streamed
   probe calls: the run's running estimate starts there), and the time a long call would take;
   a slow server gets a longer wait for a first token and a later breaker instead of being
   declared down.

Probe calls carry the header ``X-Rt4chart-Probe`` (the step) and are not part of any trace.
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import time
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import httpx
import openai

from rt4chart import prompts
from rt4chart.transforms.common.redact import redact
from rt4chart.transforms.judges.base import CLAIM, CONTEXT, QUESTION, JudgeUnusable
from rt4chart.transforms.judges.openai.capabilities import (
    describe_change,
    error_text,
    json_in,
    loads_lenient,
    step_down,
)
from rt4chart.transforms.judges.openai.endpoint_speed import LONG_PROMPT_TOKENS
from rt4chart.transforms.judges.openai.faults import MESSAGE_CHARS, Overlong
from rt4chart.transforms.judges.openai.pricing import token_count
from rt4chart.transforms.judges.openai.served_models import offered
from rt4chart.transforms.judges.schema_check import SchemaMismatch, validate

PROBE_HEADER = "X-Rt4chart-Probe"
PROBE_CACHE_KEY = "rt4chart-probe"
LIMIT_TOKENS = 2
CAPACITY_TOKENS = 16
# Two calls at once that take this many times one call's time were served one after the other
# (2.0 when strictly serial, about 1.0 with two slots).
SERIAL_RATIO = 1.5
# A reply this much over the limit, not cut off, is a server ignoring the limit's parameter.
IGNORED_MARGIN = 6
# A prompt counted under this share of rt4chart's own estimate lost part of its text.
DROPPED_SHARE = 0.5
# A probe call's timeout on an endpoint of the user's own (the probe is there to find a slow
# server, not to declare it down); a hosted API's calls keep the judge's timeout_s.
LOCAL_PROBE_TIMEOUT_S = 900.0
SLOW_SHARE = 0.5  # adapt when a long call would take more than this share of the timeout

@dataclass
class Step:
    name: str
    seconds: float
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None


@dataclass
class ProbeReport:
    """What the probe found (see the module docstring); `options` are the judge options it
    sets for the run (`negotiated` and the adapted timings)."""

    capabilities: Any
    steps: list[Step] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    prompt_estimate: int | None = None
    prompt_counted: int | None = None  # the server's count of the prompt the check read
    slots: int | None = None
    slots_from: str | None = None
    options: dict[str, str] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return len(self.steps)

    def describe(self) -> dict[str, Any]:
        return {"request": self.capabilities.describe(), "changes": self.changes,
                "warnings": self.warnings, "probe_calls": self.calls,
                "probe_seconds": round(sum(s.seconds for s in self.steps), 3),
                "prompt_tokens_counted": self.prompt_counted,
                "prompt_tokens_estimated": self.prompt_estimate,
                "slots": self.slots, "slots_from": self.slots_from,
                "adapted_options": {k: v for k, v in self.options.items() if k != "negotiated"},
                "steps": [s.__dict__ for s in self.steps]}


def is_local(base_url: str | None) -> bool:
    """Whether an endpoint is on this machine or a private network (a server of the user's,
    whose capacity is worth measuring), not a hosted API."""
    if not base_url:
        return False
    host = urlsplit(base_url).hostname or ""
    if host in ("localhost",) or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private


def _messages() -> list[dict]:
    user = prompts.render("verify_local_user.txt", chunk=prompts.neutralise(CONTEXT),
                          question=QUESTION, claim=CLAIM)
    return [{"role": "system", "content": prompts.load("verify_system.txt")},
            {"role": "user", "content": user}]


class Prober:
    """One probe of one OpenAI judge (see the module docstring)."""

    def __init__(self, judge: Any, user_options: set[str]):
        self.judge = judge
        self.user_options = user_options  # options the user set: never adapted
        self.messages = _messages()
        self.report = ProbeReport(judge.capabilities)

    def _fail(self, why: str) -> JudgeUnusable:
        return JudgeUnusable(redact(why, self.judge._secrets()))

    async def _call(self, step: str, max_tokens: int, logprobs: bool = False,
                    whole: bool = False) -> Any:
        judge = self.judge
        client = judge._ensure_client()
        before = judge.capabilities
        started = time.monotonic()
        try:
            timeout = (max(judge.config.timeout_s, LOCAL_PROBE_TIMEOUT_S)
                       if is_local(judge.base_url) else None)
            # prompt_cache_key as the run sends it (named after the shared prefix), so that
            # an endpoint that refuses it says so here
            completion = await judge._send_adapting(client, self.messages, "verify", logprobs,
                                                    PROBE_CACHE_KEY, max_tokens,
                                                    {PROBE_HEADER: step}, timeout,
                                                    whole=whole)
        except openai.APIStatusError as exc:
            message = error_text(exc)[0][:MESSAGE_CHARS * 2]
            # A 404 is most often a model the server does not serve: name those it does.
            listed = await offered(client) if exc.status_code == 404 else ""
            raise self._fail(f"the judge endpoint refused the probe call: HTTP "
                             f"{exc.status_code}: {message}{listed}") from None
        except openai.APITimeoutError as exc:
            raise self._fail(f"the judge endpoint {judge.base_url or 'api.openai.com'} did not "
                             f"answer the probe's {step!r} call in time (timeout_s="
                             f"{judge.config.timeout_s:g}): {exc}") from None
        except Overlong as exc:
            raise self._fail(f"the judge endpoint's reply to the probe's {step!r} call ran on: "
                             f"{exc}") from None
        except openai.APIConnectionError as exc:
            raise self._fail(f"the judge endpoint cannot be reached at "
                             f"{judge.base_url or 'api.openai.com'}: {type(exc).__name__}: "
                             f"{exc}") from None
        except SchemaMismatch as exc:  # an HTTP 200 that is not a chat completion
            raise self._fail(f"the judge endpoint's reply is not a chat completion: {exc}"
                             ) from None
        if judge.capabilities != before:
            self.report.changes.append(f"after the probe's {step!r} call, "
                                       f"{describe_change(before, judge.capabilities)}")
        usage = getattr(completion, "usage", None)
        choice = completion.choices[0] if completion.choices else None
        self.report.steps.append(Step(
            step, round(time.monotonic() - started, 3),
            token_count(getattr(usage, "prompt_tokens", None)),  # checked where read
            token_count(getattr(usage, "completion_tokens", None)),
            getattr(choice, "finish_reason", None)))
        return completion

    async def limit(self) -> None:
        """Step 1: the output limit is honoured, and the prompt arrives whole."""
        streamed = self.judge.capabilities.stream
        await self._call("limit", LIMIT_TOKENS)
        if streamed and not self.judge.capabilities.stream:
            # its streamed reply carried no usage report (the judge now reads replies whole):
            # ask again, for the counts this step checks
            await self._call("limit", LIMIT_TOKENS)
        if self._ignored(self.report.steps[-1]):
            caps = self.judge.capabilities
            other = ("max_tokens" if caps.token_param == "max_completion_tokens"
                     else "max_completion_tokens")
            self.report.warnings.append(
                f"the server ignored {caps.token_param} (asked for {LIMIT_TOKENS} tokens, got "
                f"{self.report.steps[-1].completion_tokens}): sending {other}")
            self.judge.capabilities = replace(caps, token_param=other)
            await self._call("limit", LIMIT_TOKENS)
            if self._ignored(self.report.steps[-1]):
                self.judge.capabilities = caps
                self.report.warnings.append("the server ignores both output limits: a reply "
                                            "can run to the end of its context")
        self._check_prompt(self.report.steps[-1])

    @staticmethod
    def _ignored(step: Step) -> bool:
        output = token_count(step.completion_tokens)
        return (step.finish_reason != "length" and output is not None
                and output > LIMIT_TOKENS + IGNORED_MARGIN)

    def _check_prompt(self, step: Step) -> None:
        estimate = self.judge.throughput.prompt_tokens.estimate(
            [m["content"] for m in self._sent_messages()])
        self.report.prompt_estimate = estimate
        counted = token_count(step.prompt_tokens)
        self.report.prompt_counted = counted
        if counted and counted < DROPPED_SHARE * estimate:
            raise self._fail(
                f"the server counted {counted} prompt tokens for a prompt of about {estimate}: "
                "its chat template dropped part of the prompt (a template without a system "
                "role drops rt4chart's instructions). Serve the model with a chat template "
                "that keeps the system message (llama-cpp-python: leave --chat_format unset so "
                "that the model's own template is used).")

    def _sent_messages(self) -> list[dict]:
        body = self.judge._request_body(self.messages, "verify", False, None, LIMIT_TOKENS)
        return body["messages"]

    async def reply(self) -> None:
        """Step 2: a whole reply that matches the schema, with logprobs if asked."""
        cfg = self.judge.config
        budget = cfg.max_output_tokens
        problems: list[str] = []
        while True:
            completion = await self._call("reply", budget, logprobs=cfg.logprobs)
            choice = completion.choices[0] if completion.choices else None
            content = getattr(getattr(choice, "message", None), "content", None) or ""
            if getattr(choice, "finish_reason", None) == "length" and \
                    budget < cfg.max_output_tokens_cap:
                budget = min(cfg.max_output_tokens_cap, budget * 2)
                continue
            try:
                validate(loads_lenient(json_in(content)), self.judge.schema("verify"))
                break
            except (ValueError, SchemaMismatch) as exc:
                problems.append(f"{self.judge.capabilities.structured}: {exc}")
                lower = step_down(self.judge.capabilities)
                if lower is None:
                    raise self._fail("the model's replies match the verification schema in no "
                                     "structured-output mode: " + "; ".join(problems)) from None
                self.judge.capabilities, change = lower
                self.report.changes.append(f"reply did not match the schema ({exc}): {change}")
        if cfg.logprobs and self.judge.capabilities.sends("logprobs") and \
                getattr(choice, "logprobs", None) is None:
            caps = self.judge.capabilities
            self.judge.capabilities = replace(caps, dropped=caps.dropped | {"logprobs",
                                                                            "top_logprobs"})
            self.report.warnings.append("the endpoint returned no logprobs: p_unsupported "
                                        "comes from the verdict (0 or 1)")

    async def capacity(self) -> None:
        """Step 3: how many calls the server runs at once (local endpoints only)."""
        if not is_local(self.judge.base_url):
            return
        slots = await _server_slots(self.judge.base_url)
        if slots:
            self.report.slots, self.report.slots_from = slots, "/props"
            return
        # Calls long enough (CAPACITY_TOKENS of output) that a server's own overhead does not
        # hide the queueing; the quicker of two single calls against two at once. Read whole:
        # two streams read at once cost this process twice the parsing, which is not the
        # server queueing.
        singles = []
        for _ in range(2):
            started = time.monotonic()
            await self._call("capacity", CAPACITY_TOKENS, whole=True)
            singles.append(time.monotonic() - started)
        single = min(singles)
        pair_started = time.monotonic()
        await asyncio.gather(self._call("capacity", CAPACITY_TOKENS, whole=True),
                             self._call("capacity", CAPACITY_TOKENS, whole=True))
        pair = time.monotonic() - pair_started
        if single > 0.05 and pair >= SERIAL_RATIO * single:
            self.report.slots, self.report.slots_from = 1, "latency of two calls at once"

    def timing(self) -> None:
        """Step 4: timeouts, breaker and concurrency for the server measured, and its speed
        (the run's running estimate starts there, see endpoint_speed)."""
        cfg, report, out = self.judge.config, self.report, {}
        if report.slots and report.slots < cfg.max_concurrency:
            out["max_concurrency"] = str(report.slots)
        streamed = self.judge.capabilities.stream
        speed = self.judge.speed.measured()
        if streamed and speed.known:
            out["prompt_tokens_per_s"] = f"{speed.prompt_tps:.4g}"
            out["output_tokens_per_s"] = f"{speed.output_tps:.4g}"
        long_call = self._long_call()
        if long_call is not None:
            prompt_s, output_s = long_call
            # A streamed reply waits timeout_s at least for its first token only: the prompt.
            first = prompt_s if streamed else prompt_s + output_s
            if first > SLOW_SHARE * cfg.timeout_s:
                timeout = math.ceil(3 * first)
                out["timeout_s"] = str(timeout)
                out["breaker_after_s"] = str(max(cfg.breaker_after_s, 3 * timeout))
            if prompt_s + output_s > SLOW_SHARE * cfg.timeout_s:
                # one doubling of a cut-off reply, not five: at a few tokens a second each
                # doubling costs minutes (a small model that loops would never end)
                out["max_output_tokens_cap"] = str(min(cfg.max_output_tokens_cap,
                                                       2 * cfg.max_output_tokens))
                report.warnings.append(
                    f"a slow endpoint: a {LONG_PROMPT_TOKENS}-token prompt would take about "
                    f"{prompt_s + output_s:.0f} s"
                    + (f"; timeout {out['timeout_s']} s" if "timeout_s" in out else ""))
        report.options = {k: v for k, v in out.items() if k not in self.user_options}
        report.capabilities = self.judge.capabilities
        report.options["negotiated"] = self.judge.capabilities.encode()

    def _long_call(self) -> tuple[float, float] | None:
        """(seconds to read a long prompt, seconds to write a full reply) at the measured
        speed: the streamed calls' running estimate, else the whole calls' latencies."""
        cfg, report = self.judge.config, self.report
        speed = self.judge.speed.measured()
        if self.judge.capabilities.stream and speed.known:
            return (LONG_PROMPT_TOKENS / speed.prompt_tps,
                    cfg.max_output_tokens / speed.output_tps)
        first, reply = report.steps[0], next(
            (s for s in report.steps if s.name == "reply"), None)
        if not (first.prompt_tokens and reply and reply.completion_tokens):
            return None
        per_prompt = first.seconds / max(1, first.prompt_tokens)
        per_output = max(0.0, reply.seconds - first.seconds) / max(1, reply.completion_tokens)
        return LONG_PROMPT_TOKENS * per_prompt, cfg.max_output_tokens * per_output


async def _server_slots(base_url: str) -> int | None:
    """llama.cpp's `llama-server` says how many requests it serves at once (`/props`)."""
    root = base_url.rstrip("/")
    root = root[:-3] if root.endswith("/v1") else root
    try:
        async with httpx.AsyncClient(timeout=5.0) as client:
            reply = await client.get(root + "/props")
        if reply.status_code == 200:
            slots = reply.json().get("total_slots")
            return int(slots) if isinstance(slots, int) and slots > 0 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return None


async def probe(judge: Any, user_options: set[str] | None = None) -> ProbeReport:
    """Probe an OpenAI judge (it keeps the capabilities found); JudgeUnusable if it cannot be
    used."""
    prober = Prober(judge, set(user_options or ()))
    await prober.limit()
    await prober.reply()
    await prober.capacity()
    prober.timing()
    return prober.report
