"""The offline judge: deterministic, no network, a lexical baseline.

It implements the judge contract with content-word coverage, number, negation and antonym
checks (see :mod:`rt4chart.transforms.judges.offline.lexical`), and returns with each verification a
graded p_unsupported fitted on the dev part of the bundled RAGTruth records. Its decompositions
give kinds and fragments (:mod:`rt4chart.transforms.judges.offline.claims`): no claim for a
sentence that asserts nothing, an absence claim for "the passages do not mention X", checked
lexically against the context. Its verdicts are a
baseline for runs with no endpoint configured, not a model's judgement; it quotes only text it
was given. It reads only the documents' text: the header lines rt4chart puts above each
document of the full context (with their numbers and doc ids) are blanked before it looks
(`text.headers.blank_headers`), and the question is never evidence (it only names what an absence
claim that names nothing says is missing: "None mentioned.").

Its vocabularies (verbs of saying, antonyms, negation) are English: a claim in another language
(`text.language.detect`) is compared word by word only, and the judge says so with a warning,
once per language and worker (docs/languages.md).
"""

from __future__ import annotations

import hashlib
import json
import logging

from rt4chart.transforms.judges.base import DecomposedClaim, Verdict
from rt4chart.transforms.judges.contract import Judge, JudgeKind, JudgeTraits
from rt4chart.transforms.judges.offline import claims as lexical_claims
from rt4chart.transforms.judges.offline import lexical
from rt4chart.transforms.text.headers import blank_headers
from rt4chart.transforms.text.language import UNDETERMINED, detect

logger = logging.getLogger(__name__)

# The version changes with the heuristics: judge_cache keys (--reuse) include it.
MODEL = "offline-lexical-v5"
# The map of its raw score to probabilities, fitted on the dev part of RAGTruth by
# `rt4chart eval calibrate` (tests/unit/test_calibration.py checks it fits this judge).
CALIBRATION = "package:calibration_offline.json"


class OfflineKind(JudgeKind):
    """The offline judge before it is built: no endpoint, no prices, its answers reproducible
    (a calibration map fitted for it checks its fingerprint)."""

    traits = JudgeTraits(model=MODEL, shares_event_loop=True, verifies_absence=True,
                         decision_threshold=lexical.P_THRESHOLD,  # the raw score below which
                         calibration=CALIBRATION)                 # it may say ENT
    builds = "rt4chart.transforms.judges.offline.judge:OfflineJudge"

    def analysis(self) -> LexicalAnalysis:
        """Its lexical analysis: what `--estimate` predicts claims, labels and quotes with."""
        return LexicalAnalysis()

    def fingerprint(self, examples: str) -> str:
        """A hash of its decompositions and raw scores on the example traces (JSONL: every
        answer sentence against every context): it changes exactly when its text analysis
        does, which invalidates a fitted map."""
        digest = hashlib.sha256(MODEL.encode())
        for line in examples.splitlines():
            trace = json.loads(line)
            context = "\n".join(c["text"] for c in trace.get("contexts") or [])
            for sentence in (trace.get("answer") or "").split(". "):
                for claim in lexical_claims.decompose_claims(sentence):
                    label, quotes, p = lexical.verify_scored(claim.text, context)
                    absent = lexical_claims.verify_absence_scored(claim.text, context)
                    digest.update(json.dumps([claim.text, claim.kind, label, quotes,
                                              round(p, 9), absent[0],
                                              round(absent[2], 9)]).encode())
        return digest.hexdigest()[:16]


class LexicalAnalysis:
    """The offline judge's analysis, synchronous and on the raw texts (contract.Analysis)."""

    def claims(self, sentence: str) -> list[lexical_claims.LexicalClaim]:
        return lexical_claims.decompose_claims(sentence)

    def verify(self, claim: str, passage: str, hint: str | None = None
               ) -> tuple[str, list[str]]:
        return lexical.verify(claim, passage, hint)

    def verify_absence(self, claim: str, context: str, question: str
                       ) -> tuple[str, list[str], float]:
        return lexical_claims.verify_absence_scored(claim, context, question)


class OfflineJudge(Judge):
    """Lexical judge; options are accepted for symmetry and ignored."""

    model = MODEL
    traits = OfflineKind.traits

    def __init__(self, options: dict[str, str] | None = None):
        self.options = dict(options or {})
        self._warned: set[str] = set()

    def _read(self, claim: str) -> None:
        """Warn, once per language, that a claim is in a language it has no vocabulary for."""
        language = detect(claim)
        if language not in ("en", UNDETERMINED) and language not in self._warned:
            self._warned.add(language)
            logger.warning(
                "offline judge: claims in language %r are compared word by word only (its "
                "negation, antonym and saying vocabularies are English); see "
                "docs/languages.md", language)

    async def decompose(self, sentence: str, answer: str, question: str) -> list[DecomposedClaim]:
        return [DecomposedClaim(c.text, c.kind, c.fragments)
                for c in lexical_claims.decompose_claims(sentence)]

    async def verify_local(self, claim: str, chunk: str, question: str) -> Verdict:
        self._read(claim)
        return Verdict(*lexical.verify_scored(claim, chunk))

    async def verify_global(
        self, claim: str, context: str, question: str, local_label: str, hint: str | None
    ) -> Verdict:
        return Verdict(*lexical.verify_scored(claim, blank_headers(context), hint))

    async def verify_absence(self, claim: str, context: str, question: str) -> Verdict:
        return Verdict(*lexical_claims.verify_absence_scored(claim, blank_headers(context),
                                                             question))


def factory(options: dict[str, str]) -> OfflineJudge:
    """Factory in the custom-judge form, for symmetry."""
    return OfflineJudge(options)
