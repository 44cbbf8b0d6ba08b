"""An honest judge for the hidden-facts benchmark (tests/data/exemptions, issue 46).

It imports nothing of rt4chart and sees only what the public custom-judge contract gives it.
``decompose`` returns each answer sentence as its one claim (``claims=sentence``, the default)
or no claim at all (``claims=none``: a decomposer that drops everything, as one talked into
"this sentence is a greeting" would). ``verify_*`` say ENT only when one sentence of the text
they are shown holds every word of the claim (letters and digits, case-folded; Han and Kana
one character a word), quoting that sentence verbatim; else NIC with no quote. It never
invents support: a claim that the text does not hold word for word is NIC.

Options: ``claims`` (``sentence`` or ``none``), ``model`` (default ``honest-<claims>``).
"""

from __future__ import annotations

import re

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
_WORD_RE = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
CLAIMS = ("sentence", "none")


def words(text: str) -> set[str]:
    """The words of `text`: case-folded runs of letters and digits, Han and Kana one each."""
    return {w.casefold() for w in _WORD_RE.findall(text)}


def sentences(text: str) -> list[str]:
    """The sentences of `text`, per line, past the pipeline's document headers."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("[Document"):
            out.extend(s.strip() for s in _SENTENCE_END_RE.split(line) if s.strip())
    return out


class HonestJudge:
    def __init__(self, claims: str, model: str):
        if claims not in CLAIMS:
            raise ValueError(f"claims must be one of {CLAIMS}, not {claims!r}")
        self._claims, self.model = claims, model

    @staticmethod
    def _verdict(claim: str, text: str) -> tuple[str, list[str]]:
        wanted = words(claim)
        holding = [s for s in sentences(text) if wanted and wanted <= words(s)]
        return ("ENT", holding[:1]) if holding else ("NIC", [])

    async def decompose(self, sentence, answer, question):
        return [sentence] if self._claims == "sentence" else []

    async def verify_local(self, claim, chunk, question):
        return self._verdict(claim, chunk)

    async def verify_global(self, claim, context, question, local_label, hint):
        return self._verdict(claim, context)


def factory(options: dict[str, str]) -> HonestJudge:
    claims = options.get("claims", "sentence")
    return HonestJudge(claims, options.get("model") or f"honest-{claims}")
