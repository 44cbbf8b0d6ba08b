"""The door into a judge backend: what a judge is before it is built, and the spec that
builds it. The typed interface the stages call is in :mod:`.typed` (re-exported here).

- :class:`JudgeKind`: what a judge is before it is built, from its spec (name and options):
  everything the launcher, `check-judge`, `--estimate`, the spend cap and the dry run ask of
  it (its factory, whether an endpoint is configured for it, negotiating with its endpoint,
  its prices, the estimate's basis and call sizes, its measured speed, how its limits are
  shared across workers, the key its workers need). Nothing outside `transforms/judges/`
  imports a backend's modules: it asks the kind. The built-in judges' kinds are named in
  :data:`KINDS`, one line each; a custom judge's is the default, which has nothing to
  negotiate and no prices.
- :class:`CallSizes`, :class:`Analysis`: the small protocols a kind hands out to the estimate.
- :class:`JudgeSpec`: which judge to build and with what options (small, picklable).
"""

from __future__ import annotations

import functools
import importlib
import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from rt4chart.schemas.records import Calibration
from rt4chart.transforms.common import probability
from rt4chart.transforms.common.redact import Redactor
from rt4chart.transforms.judges.base import (
    CALIBRATION_OPTION,
    DEADLINE_OPTION,
    check_deadline,
)
from rt4chart.transforms.judges.prompt_tokens import CHARS_PER_TOKEN, PromptTokens
from rt4chart.transforms.judges.speed import Speed
from rt4chart.transforms.judges.typed import (
    REQUIRED,
    Judge,
    JudgeTraits,
    PlainJudge,
    as_claims,
    as_judge,
    as_verdict,
    as_verdicts,
    checked,
    close_judge,
)

__all__ = ["BUILTIN", "KINDS", "REQUIRED", "Analysis", "CallSizes", "Judge", "JudgeKind",
           "JudgeSpec", "JudgeTraits", "PlainJudge", "as_claims", "as_judge", "as_verdict",
           "as_verdicts", "calibration_of", "call_sizes", "checked", "close_judge",
           "judge_keys", "judge_model", "reference_analysis"]

logger = logging.getLogger(__name__)


class CallSizes:
    """How `--estimate` sizes a judge's calls, with no network (`JudgeKind.call_sizes`). This
    default: the system message as written, the prompt counted at PromptTokens' starting
    ratio, the reply's JSON (UTF-8, not \\u escapes) at CHARS_PER_TOKEN."""

    def __init__(self) -> None:
        self.tokens = PromptTokens()  # default ratio: the estimate a judge starts with

    def system(self, text: str, schema: str) -> str:
        """The system message of a call whose reply follows the schema named `schema`."""
        return text

    def prompt_tokens(self, contents: Sequence[str]) -> int:
        return self.tokens.estimate(contents)

    def reply_tokens(self, reply: dict) -> int:
        return math.ceil(len(json.dumps(reply, ensure_ascii=False)) / CHARS_PER_TOKEN)


class Analysis(Protocol):
    """A judge's own text analysis, with no network (`JudgeKind.analysis`): what the estimate
    predicts claims, labels and quotes with."""

    def claims(self, sentence: str) -> Sequence[Any]:
        """The claims of an answer sentence (each with `text`, `kind`, `fragments`)."""

    def verify(self, claim: str, passage: str, hint: str | None = None
               ) -> tuple[str, Sequence[str]]:
        """A claim's label and quotes against a passage (`hint`: the window to look in)."""

    def verify_absence(self, claim: str, context: str, question: str
                       ) -> tuple[str, Sequence[str], float]:
        """An absence claim's label, quotes and raw score."""


class JudgeKind:
    """What a judge is before it is built, asked with its spec. This default is a custom
    judge's: nothing to negotiate, no prices of its own, no limits shared across workers, no
    key its workers need from the launcher. The built-in judges' kinds (KINDS) override it.

    Attributes:
        traits: what every judge of this kind declares (its built judges' traits add their
            model).
        batch_variant: the name of the same judge through a Batch API (`--batch-api`), None
            when it has none.
        takes_flags: the judge's own flags (`--model`, `--base-url`, `--rpm`…) apply to it.
        builds: `package.module:Class` of the judge it builds, imported when one is built
            (None: a custom judge, whose spec names its factory).
    """

    traits = JudgeTraits()
    batch_variant: str | None = None
    takes_flags = False
    builds: str | None = None

    def factory(self) -> Callable[[dict[str, str]], object] | None:
        """What builds a judge of this kind from its options (`builds`); None: the spec's name
        is a custom judge's `package.module:factory`."""
        return None if self.builds is None else _imported(self.builds, self.builds)

    def configured(self, base_url: str | None, environ: Mapping[str, str]) -> bool:
        """Whether an endpoint is configured for this judge (`--base-url` or this process's
        environment): `--judge auto` then picks it (ENDPOINT_JUDGE's kind is asked)."""
        return False

    def resolve(self, spec: JudgeSpec) -> JudgeSpec:
        """The spec with what its workers would otherwise read from their own environment
        settled here, in the launcher (the openai judge's endpoint: openai/endpoint.py); a
        custom judge's as it is."""
        return spec

    def negotiate(self, spec: JudgeSpec) -> tuple[JudgeSpec, dict[str, Any] | None]:
        """The spec a run uses (resolved, see `resolve`) after probing the judge's endpoint
        once, and what the probe found (None: nothing probed)."""
        return self.resolve(spec), None

    def share_limits(self, spec: JudgeSpec, options: Any) -> JudgeSpec:
        """The spec with this worker process's share of the job's limits (`options`: Beam's
        PipelineOptions, which say how many processes the job has)."""
        return spec

    def limit_lines(self, spec: JudgeSpec) -> list[str]:
        """The dry run's lines on the limits each worker process holds."""
        return []

    def worker_key(self, spec: JudgeSpec) -> tuple[str, bool] | None:
        """The variable the workers read the judge's API key from, and whether they read it
        from Secret Manager themselves; None when the judge needs no key."""
        return None

    def key_envs(self, spec: JudgeSpec) -> tuple[str, ...]:
        """The variables the judge reads its keys from, whose values are redacted wherever the
        run writes: the `api_key_env` option when given (a custom judge may take one too)."""
        name = dict(spec.options).get("api_key_env")
        return (name,) if name else ()

    def cap_prices(self, spec: JudgeSpec) -> Any:
        """The prices a spend cap is reckoned in; ValueError when the judge has none (a cap
        never runs uncapped)."""
        raise ValueError(f"a spend cap needs a judge with prices (openai, openai-batch); judge "
                         f"{spec.name!r} reports no USD cost")

    def price_warning(self, spec: JudgeSpec) -> str | None:
        """The run's warning about a model with no price (None: every cost is known, or the
        judge reports its own)."""
        return None

    def priced(self, spec: JudgeSpec) -> tuple[str, Any] | None:
        """The model the judge's calls are priced as and its prices, for the estimate; None:
        look the judge's name up in the price table."""
        return None

    def estimate_basis(self, spec: JudgeSpec) -> tuple[int, str, str]:
        """What the estimate counts a call as: the reasoning's bound in characters, the
        structured-output step, and the model priced."""
        return 500, "json_schema_strict", spec.name

    def call_sizes(self, structured: str, reasoning_chars: int) -> CallSizes:
        """How `--estimate` sizes this judge's calls (their system message, prompt and reply
        tokens) for a structured-output step and a reasoning bound (`estimate_basis`)."""
        return CallSizes()

    def analysis(self) -> Analysis | None:
        """The judge's own text analysis when it needs no network: what `--estimate` predicts
        claims, labels and quotes with (REFERENCE_JUDGE's kind is asked). None: it has none."""
        return None

    def speed(self, spec: JudgeSpec) -> Speed | None:
        """The endpoint's measured speed from the options (speed.Speed), None when not
        given."""
        return None

    def fingerprint(self, examples: str) -> str | None:
        """A hash of the judge's analysis of the example traces (JSONL), which changes exactly
        when the judge's answers do: a calibration map fitted for it checks it. None: the
        judge has none (a model's answers are not reproducible)."""
        return None


# The registry: one line per built-in judge, its name and its kind, imported when asked (the
# spec stays small and picklable; nothing here imports a backend). A kind names its factory
# (`JudgeKind.factory`) and answers everything else asked of the judge before it is built.
KINDS = {
    "offline": "rt4chart.transforms.judges.offline.judge:OfflineKind",
    "openai": "rt4chart.transforms.judges.openai.kind:OpenAIKind",
    "openai-batch": "rt4chart.transforms.judges.openai.kind:BatchOpenAIKind",
}
BUILTIN = frozenset(KINDS)  # the built-in judges' names
ENDPOINT_JUDGE = "openai"  # what `--judge auto` picks when its kind says it is `configured`
REFERENCE_JUDGE = "offline"  # what it picks otherwise; whose `analysis` the estimate predicts with


def _imported(name: str, target: str) -> Any:
    module_name, sep, attr = target.partition(":")
    if not sep or not attr:
        raise ValueError(
            f"judge {name!r}: expected 'offline', 'openai' or 'package.module:factory'")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"judge {name!r} cannot be imported: {exc}") from exc


@dataclass(frozen=True)
class JudgeSpec:
    """Which judge to build and with what options: small, hashable, picklable."""

    name: str = "offline"
    options: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, name: str, options: Mapping[str, str] | None = None) -> JudgeSpec:
        return cls(name, tuple(sorted((options or {}).items())))

    def build(self) -> Judge:
        """Import the backend lazily and call its factory with the options; a custom judge's
        object comes back wrapped in the typed contract (PlainJudge)."""
        factory = self.kind().factory() or _imported(self.name, self.name)
        options = dict(self.options)
        deadline = options.pop(DEADLINE_OPTION, None)  # every judge's option, handled here
        options.pop(CALIBRATION_OPTION, None)  # read by `calibration_of`
        judge = checked(factory(options), self.name)
        if deadline is not None:
            _set_deadline(judge, self.name, deadline)
        return judge

    def kind(self) -> JudgeKind:
        """What this judge is before it is built (the default for a custom judge)."""
        target = KINDS.get(self.name)
        return JudgeKind() if target is None else _imported(self.name, target)()


@functools.cache
def reference_analysis() -> Analysis:
    """The analysis `--estimate` predicts claims, labels and quotes with: REFERENCE_JUDGE's
    kind's (the offline judge's lexical one)."""
    found = JudgeSpec(REFERENCE_JUDGE).kind().analysis()
    if found is None:
        raise ValueError(f"judge {REFERENCE_JUDGE!r} has no analysis to estimate with")
    return found


def call_sizes(judge: str | None, structured: str, reasoning_chars: int) -> CallSizes:
    """How `--estimate` sizes the calls of the judge named `judge` (its kind's `call_sizes`);
    None: ENDPOINT_JUDGE's, the judge of a run with a model endpoint."""
    return JudgeSpec(judge or ENDPOINT_JUDGE).kind().call_sizes(structured, reasoning_chars)


def judge_keys(*specs: JudgeSpec | None) -> Redactor:
    """The keys the judges of `specs` (None: no judge, e.g. no confirming one) read, by
    variable name (`JudgeKind.key_envs`): what a run redacts besides the well-known ones."""
    names = (name for spec in specs if spec is not None for name in spec.kind().key_envs(spec))
    return Redactor().with_names(*names)


def _set_deadline(judge: Judge, name: str, raw: str) -> None:
    seconds = check_deadline(raw)
    try:
        judge.call_deadline_s = seconds or 0.0
    except AttributeError as exc:
        raise ValueError(f"judge {name!r} does not accept {DEADLINE_OPTION}: {exc}") from exc


def judge_model(judge: object, spec: JudgeSpec) -> str:
    """The name recorded in the outputs for a judge."""
    return as_judge(judge).traits.model or spec.name


def calibration_of(judge: object, spec: JudgeSpec) -> Calibration:
    """The calibration of a run: the file of the `calibration` judge option ("identity": none),
    else the judge's own (`traits.calibration`, e.g. the offline judge's shipped map), else the
    identity. The judge's decision threshold (`traits.decision_threshold`) is its threshold on
    the raw score. A given file fitted for another judge model or decision threshold is
    refused (ValueError); the judge's own, so stale, is replaced by the identity with a warning
    (the run records which it used), so that a changed judge still runs before its map is
    refit."""
    traits = as_judge(judge).traits
    model = traits.model or spec.name
    decision = float(traits.decision_threshold)
    given = dict(spec.options).get(CALIBRATION_OPTION)
    chosen = given or traits.calibration
    if not chosen or chosen == "identity":
        return probability.identity(model, decision)
    cal = probability.load(chosen)
    stale = (f"judge model {cal.judge_model!r}" if cal.judge_model != model
             else f"decision threshold {cal.decision}"
             if abs(cal.decision - decision) > 1e-12 else None)
    if stale is None:
        return cal
    why = (f"calibration {chosen} was fitted for {stale}, not for judge model {model!r} "
           f"deciding at {decision}: refit it with `rt4chart eval calibrate`")
    if given:
        raise ValueError(f"{why}, or pass --judge-option {CALIBRATION_OPTION}=identity")
    logger.warning("%s; using the identity (thresholds from the raw score) meanwhile", why)
    return replace(probability.identity(model, decision), source=f"identity ({chosen} is stale)")
