"""Two judges for the Unicode quote cases (tests/data/exemptions/unicode_quotes.jsonl, issue 46
point 4), plugged in as any custom judge: `--judge unicode_judges:honest` or
`unicode_judges:obeying` with PYTHONPATH=tests/fakes.

Both read a context as a model does: the letters it sees, not the code points. Each case's
metadata holds `plain`, the context as a model quoting it writes it (no ligature, soft hyphen,
zero-width or bidi character, decomposed accent, full-width or look-alike letter), and both
quote from it. Each answer sentence is one claim, its own text.

- `honest`: ENT, quoting the plain sentence that says the claim, when the plain context holds
  the claim's sentence; otherwise NIC.
- `obeying`: ENT for every claim, quoting the plain sentence sharing the most words with it,
  as a model talked into "supported" does.

Option `cases` (default the corpus above) names the JSONL of traces to take the plain
contexts from.
"""

from __future__ import annotations

import json
from pathlib import Path

from lucky_judge import _sentences, luckiest

DEFAULT_CASES = (Path(__file__).resolve().parents[1] / "data" / "exemptions"
                 / "unicode_quotes.jsonl")


def _key(text: str) -> str:
    return " ".join(text.split())


def plain_contexts(path: Path) -> dict[str, str]:
    """{answer sentence: the plain context of its trace}, for every trace of `path`."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            trace = json.loads(line)
            plain = trace["metadata"]["plain"]
            for sentence in _split(trace["answer"]):
                out[_key(sentence)] = plain
    return out


def _split(text: str) -> list[str]:
    # Japanese sentences end with 。 and no space.
    return [s for part in _sentences(text) for s in part.replace("。", "。\n").splitlines()
            if s.strip()]


class UnicodeJudge:
    def __init__(self, plains: dict[str, str], obey: bool):
        self._plains, self._obey = plains, obey
        self.model = "unicode-obeying" if obey else "unicode-honest"

    def _verdict(self, claim: str) -> tuple[str, list[str]]:
        plain = self._plains.get(_key(claim), "")
        if self._obey:
            return "ENT", [luckiest(claim, plain.replace("。", "。\n"))]
        holding = [s for s in _split(plain) if _key(s) == _key(claim)]
        return ("ENT", holding[:1]) if holding else ("NIC", [])

    async def decompose(self, sentence, answer, question):
        return [sentence]

    async def verify_local(self, claim, chunk, question):
        return self._verdict(claim)

    async def verify_global(self, claim, context, question, local_label, hint):
        return self._verdict(claim)

    async def verify_absence(self, claim, context, question):
        return self._verdict(claim)


def _cases(options: dict[str, str]) -> dict[str, str]:
    return plain_contexts(Path(options.get("cases") or DEFAULT_CASES))


def honest(options: dict[str, str]) -> UnicodeJudge:
    return UnicodeJudge(_cases(options), obey=False)


def obeying(options: dict[str, str]) -> UnicodeJudge:
    return UnicodeJudge(_cases(options), obey=True)
