"""Whether a judge endpoint whose call timed out is slow or down.

A call that times out says little on its own: a server with one slot and a queue of calls
(llama-cpp-python) answers each late, and a server that stopped answers none. The circuit
breaker must count only the second (a busy server gets fewer calls at once and deadlines from
its measured speed instead). An endpoint is alive when it gave a token or a reply to any call
since the timed-out call started (endpoint_speed.EndpointSpeed.alive_since), or when its
health check, the model list (``GET /models``, which OpenAI, llama.cpp, llama-cpp-python,
vLLM and Ollama serve), answers within HEALTH_TIMEOUT_S.
"""

from __future__ import annotations

from typing import Any

import httpx
import openai

HEALTH_TIMEOUT_S = 5.0
# Sent with the health check: a server's log (and the tests' fake server) tells it from the
# launcher's one model listing (served_models.py), which reads the same route.
HEALTH_HEADER = "X-Rt4chart-Health-Check"


async def answers_health_check(client: openai.AsyncOpenAI) -> bool:
    """Whether the endpoint's model list answers (any HTTP 2xx) within HEALTH_TIMEOUT_S."""
    try:
        reply: Any = await client.get("/models", cast_to=httpx.Response,
                                      options={"timeout": HEALTH_TIMEOUT_S,
                                                        "headers": {HEALTH_HEADER: "1"}})
    except (openai.APIError, httpx.HTTPError):
        return False
    return 200 <= reply.status_code < 300


def timed_out(exc: BaseException) -> bool:
    """A timeout of any kind: no first token, an idle reply, a deadline, a whole read."""
    return isinstance(exc, openai.APITimeoutError)
