"""A custom judge, plugged in through the public `module:factory` contract, that holds the
judge key from its environment in its model name and writes it into every reply (claims and
evidence): what a careless custom judge does. Its key variable is OPENAI_API_KEY unless the
option `key_env` names another."""

from __future__ import annotations

import os

from rt4chart.transforms.judges.base import DecomposedClaim, Verdict


class KeyModelJudge:
    """Each answer sentence one claim with the key appended; every claim ENT quoting the key
    (evidence the text does not hold)."""

    def __init__(self, options: dict[str, str]):
        self.key = os.environ[options.get("key_env", "OPENAI_API_KEY")]
        self.model = f"custom-{self.key}"

    async def decompose(self, sentence, answer, question) -> list[DecomposedClaim]:
        return [DecomposedClaim(f"{sentence} (checked with {self.key})")]

    async def verify_local(self, claim, chunk, question) -> Verdict:
        return Verdict("ENT", (f"key {self.key}",))

    async def verify_global(self, claim, context, question, local_label, hint) -> Verdict:
        return Verdict("ENT", (f"key {self.key}",))


def key_model(options: dict[str, str]) -> KeyModelJudge:
    return KeyModelJudge(options)
