"""A prompt's tokens as the provider will count them, estimated before the call.

The judge's rate limiter must charge a call its tokens before the provider has counted them.
Characters / 4 undercounts: the provider adds a few tokens per chat message (OpenAI: 3 per
message and 3 to prime the reply), and a real tokenizer cuts JSON, numbers and names into more
tokens than prose. A budget charged less than the provider counts is exceeded, and the
provider answers 429 (and the judge pauses).

:class:`PromptTokens` estimates `ratio x characters + 3 x messages + 3`, the ratio learned from
the `usage.prompt_tokens` the provider reports for the last `window` calls (1/4 until it has
reported `warmup` of them). One instance per judge (one event loop: no locking). Any backend
may use it; a judge's kind hands out its counting for the estimate (`JudgeKind.call_sizes`).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

PER_MESSAGE = 3  # tokens the chat format adds per message
PRIMING = 3  # and to prime the reply
DEFAULT_RATIO = 0.25  # tokens per character before the provider has counted any
CHARS_PER_TOKEN = 4  # a reply's characters per token, before any count (its size, estimated)


class PromptTokens:
    def __init__(self, window: int = 256, warmup: int = 8):
        self.window, self.warmup = window, warmup
        self._seen: deque[tuple[int, int]] = deque(maxlen=window)  # (chars, content tokens)
        self._chars = self._tokens = 0

    @property
    def ratio(self) -> float:
        """Tokens per character of message content."""
        if len(self._seen) < self.warmup or self._chars <= 0:
            return DEFAULT_RATIO
        return self._tokens / self._chars

    def estimate(self, contents: Sequence[str]) -> int:
        """The tokens a prompt of these messages' contents will be counted."""
        chars = sum(len(c) for c in contents)
        return math.ceil(self.ratio * chars) + PER_MESSAGE * len(contents) + PRIMING

    def observe(self, contents: Sequence[str], prompt_tokens: int | None) -> None:
        """The provider counted `prompt_tokens` for a prompt of these contents."""
        if not prompt_tokens:
            return
        chars = sum(len(c) for c in contents)
        tokens = max(0, int(prompt_tokens) - PER_MESSAGE * len(contents) - PRIMING)
        if len(self._seen) == self._seen.maxlen:
            old_chars, old_tokens = self._seen[0]
            self._chars -= old_chars
            self._tokens -= old_tokens
        self._seen.append((chars, tokens))
        self._chars += chars
        self._tokens += tokens
