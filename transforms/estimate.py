"""A trace's judge calls and tokens, estimated before a run (`--estimate`), with no network.

Everything is counted from what the stages themselves build, so that the estimate follows the
prompts and the schedule by itself:

- calls: decomposition, one per answer sentence; claims from the offline decomposer
  (`reference().claims`: the analysis the reference judge's kind hands out); local
  verification, one per (claim, window) or per window and group of `--claims-per-call`
  claims, without the pairs `--prune-windows` would skip (`prune.relevant`); global
  verification, one per claim (absence claims skip the windows and take `verify_absence`);
  confirmation (`--confirm-ent`), one per claim expected to end ENT.
- input tokens: the real prompt templates rendered with the trace's texts (`prompts.render`,
  `render_window`, `render_context`, `answer_excerpt`) and counted as the judge's kind sizes
  its calls (`JudgeKind.call_sizes`: `PromptTokens`, its default ratio); with a
  structured-output mode that puts the schema in the system message (the openai judge's
  json_object_schema, json_object, text), the schema's text too.
- output tokens: a reply of the schema's shape, serialized as UTF-8 JSON, / 4 characters per
  token: the JSON frame and labels, the claims with their fragments (decomposition), the
  evidence quotes and labels the offline (lexical) verifier gives for the same prompt's claim
  and passage (`reference().verify`: whole passage sentences for ENT/CON, none for NIC), and a
  `reasoning` field of `reasoning_fill` x `reasoning_chars` characters (0 without reasoning).
  A model's reasoning length is its own: `reasoning_fill` is the knob, 0.5 by default, not a
  measured constant.
- which claims get a location hint in the global prompt (the OR-join of the window labels,
  `joins.or_join`) and which end ENT (one more call with `--confirm-ent`) follow the offline
  verifier's labels: a model that labels differently quotes and confirms differently.
- `--reuse` is not read: the estimate is of a run that makes every call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rt4chart import prompts
from rt4chart.schemas.records import PreparedTrace
from rt4chart.transforms.common.joins import or_join
from rt4chart.transforms.common.options_spec import option
from rt4chart.transforms.decompose import answer_excerpt
from rt4chart.transforms.judges.contract import CallSizes, call_sizes, reference_analysis
from rt4chart.transforms.judges.prices import Prices, PriceTable
from rt4chart.transforms.prune import relevant
from rt4chart.transforms.segment import render_context, render_window

STAGES = ("decompose", "verify_local", "verify_global", "confirm")
ABSENCE = "absence"


@dataclass(frozen=True)
class EstimateConfig:
    """What changes the number or size of the calls (the run's options)."""

    claims_per_call: int = 1
    prune_windows: bool = False
    confirm_ent: bool = False
    reasoning_chars: int = 500
    structured: str = "json_schema_strict"
    reasoning_fill: float = 0.5
    judge: str | None = None  # whose calls are sized (None: a model endpoint's, call_sizes)

    def __post_init__(self) -> None:
        if self.claims_per_call < 1:
            raise ValueError(f"claims_per_call must be >= 1, got {self.claims_per_call}")
        if not 0.0 <= self.reasoning_fill <= 1.0:
            raise ValueError(f"reasoning_fill must be in [0, 1], got {self.reasoning_fill}")


@dataclass(frozen=True)
class StageEstimate:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: StageEstimate) -> StageEstimate:
        return StageEstimate(self.calls + other.calls, self.input_tokens + other.input_tokens,
                             self.output_tokens + other.output_tokens)


@dataclass(frozen=True)
class TraceEstimate:
    """Counts and per-stage calls/tokens of one trace (or, summed, of many)."""

    traces: int = 0
    sentences: int = 0
    windows: int = 0
    claims: int = 0
    stages: Mapping[str, StageEstimate] = field(default_factory=dict)

    def __add__(self, other: TraceEstimate) -> TraceEstimate:
        names = dict.fromkeys((*self.stages, *other.stages))
        return TraceEstimate(
            self.traces + other.traces, self.sentences + other.sentences,
            self.windows + other.windows, self.claims + other.claims,
            {n: self.stages.get(n, StageEstimate()) + other.stages.get(n, StageEstimate())
             for n in names})

    @property
    def total(self) -> StageEstimate:
        return sum(self.stages.values(), StageEstimate())

    def usd(self, model: str, prices: PriceTable, batch_api: bool = False) -> float | None:
        """The estimate's cost at a model's prices (the Batch API's discount with
        `batch_api`); None when the model has no price: unknown, not free."""
        found = prices.lookup(model)
        return cost(found, self.total, prices.batch_discount if batch_api else 1.0)


def cost(prices: Prices | None, total: StageEstimate, factor: float = 1.0) -> float | None:
    if prices is None:
        return None
    return prices.scaled(factor).cost(total.input_tokens, 0, total.output_tokens)


reference = reference_analysis  # what claims, labels and quotes are predicted with


class _Counter:
    def __init__(self, config: EstimateConfig):
        self.config = config
        self.sizes: CallSizes = call_sizes(config.judge, config.structured,
                                           config.reasoning_chars)

    def system(self, name: str, schema: str) -> str:
        return self.sizes.system(prompts.load(name), schema)

    def call(self, system: str, user: str, reply: dict) -> StageEstimate:
        return StageEstimate(1, self.sizes.prompt_tokens([system, user]),
                             self.reply_tokens(reply))

    def reasoning(self) -> dict:
        chars = self.config.reasoning_chars
        return {"reasoning": "x" * round(chars * self.config.reasoning_fill)} if chars > 0 else {}

    def reply_tokens(self, reply: dict) -> int:
        """A reply as the model writes it: UTF-8 text, not \\u escapes."""
        return self.sizes.reply_tokens(reply)

    def verdict(self, label: str, quotes) -> dict:
        return {**self.reasoning(), "evidence": list(quotes), "label": label}


def estimate_trace(prepared: PreparedTrace, config: EstimateConfig = EstimateConfig()
                   ) -> TraceEstimate:
    """The calls and tokens the audit of this trace is expected to make, per stage."""
    c = _Counter(config)
    stages = dict.fromkeys(STAGES, StageEstimate())
    claims = _decompose(c, prepared, stages)
    decided = _local(c, prepared, [t for t, kind in claims if kind != ABSENCE], stages)
    _global(c, prepared, claims, decided, stages)
    if not config.confirm_ent:
        del stages["confirm"]
    return TraceEstimate(1, len(prepared.sentences), len(prepared.windows), len(claims), stages)


def expected_calls(prepared: PreparedTrace, config: EstimateConfig = EstimateConfig()) -> int:
    """`estimate_trace(prepared, config).total.calls` without counting tokens: what a run's
    progress expects of each trace as it starts (the calls only, cheap enough for every trace;
    with `--confirm-ent` the whole estimate, whose labels decide the confirmations)."""
    if config.confirm_ent:
        return estimate_trace(prepared, config).total.calls
    claims = [x for s in prepared.answer_sentences
              for x in reference().claims(s.text)]
    local = [x.text for x in claims if x.kind != ABSENCE]
    per_call = config.claims_per_call
    if config.prune_windows:
        chunks = [render_window(prepared, w).text for w in prepared.windows]
        sent = [sum(1 for x in local if relevant(x, chunk)) for chunk in chunks]
    else:
        sent = [len(local)] * len(prepared.windows)
    # An empty retrieval's claims are decided without a global call (verify_global.py).
    global_calls = len(claims) if prepared.sentences else 0
    return len(prepared.answer_sentences) + sum(-(-n // per_call) for n in sent) + global_calls


def _decompose(c: _Counter, prepared: PreparedTrace, stages: dict) -> list[tuple[str, str]]:
    """One call per answer sentence; the offline decomposer's claims as (text, kind)."""
    t, claims = prepared.trace, []
    system = c.system("decompose_system.txt", "decompose")
    for position, sentence in enumerate(prepared.answer_sentences):
        found = reference().claims(sentence.text)
        claims.extend((x.text, x.kind) for x in found)
        user = prompts.render("decompose_user.txt", question=t.user_text,
                              answer=answer_excerpt(t.answer, prepared.answer_sentences,
                                                    position), sentence=sentence.text)
        reply = {**c.reasoning(), "claims": [
            {"text": x.text, "kind": x.kind, "fragments": list(x.fragments)} for x in found]}
        stages["decompose"] += c.call(system, user, reply)
    return claims


def _local(c: _Counter, prepared: PreparedTrace, local: list[str], stages: dict
           ) -> dict[str, tuple[str, str | None]]:
    """Local calls per window (pruned, packed); {claim: (local label, hint window)} by the
    OR-join of the offline verifier's window labels, as `verify_local.plan_global` joins."""
    config, question = c.config, prepared.trace.user_text
    system = c.system("verify_system.txt", "verify")
    many = c.system("verify_system.txt", "verify_many")
    chunks = [render_window(prepared, w).text for w in prepared.windows]
    labels: dict[str, list[str]] = {x: [] for x in local}
    for chunk in chunks:
        sent = [x for x in local if not config.prune_windows or relevant(x, chunk)]
        verdicts = {x: reference().verify(x, chunk) for x in sent}
        for x in labels:  # once per claim text: an answer may repeat a claim
            labels[x].append(verdicts[x][0] if x in verdicts else "NIC")  # pruned: NIC
        if config.claims_per_call == 1:
            for x in sent:
                user = prompts.render("verify_local_user.txt", chunk=chunk, question=question,
                                      claim=x)
                stages["verify_local"] += c.call(system, user, c.verdict(*verdicts[x]))
            continue
        for start in range(0, len(sent), config.claims_per_call):
            group = sent[start : start + config.claims_per_call]
            numbered = "\n".join(f"[{i}] {x}" for i, x in enumerate(group, start=1))
            user = prompts.render("verify_local_many_user.txt", chunk=chunk, question=question,
                                  claims=numbered)
            reply = {"verdicts": [{"claim": i, **c.verdict(*verdicts[x])}
                                  for i, x in enumerate(group, start=1)]}
            stages["verify_local"] += c.call(many, user, reply)
    out = {}
    for x, got in labels.items():
        label, deciding = or_join(got)
        out[x] = (label, None if deciding is None else chunks[deciding])
    return out


def _global(c: _Counter, prepared: PreparedTrace, claims: list[tuple[str, str]],
            decided: dict[str, tuple[str, str | None]], stages: dict) -> None:
    """One global call per claim (absence: its own prompt), and the ENT confirmations; none for
    an empty retrieval, whose claims are decided without the judge (verify_global.py)."""
    if not prepared.sentences:
        return
    question = prepared.trace.user_text
    context = render_context(prepared).text
    system = c.system("verify_system.txt", "verify")
    absence = c.system("verify_absence_system.txt", "verify_absence")
    for text, kind in claims:
        if kind == ABSENCE:
            user = prompts.render("verify_absence_user.txt", context=context, question=question,
                                  claim=text)
            label, quotes, _ = reference().verify_absence(text, context, question)
            stages["verify_global"] += c.call(absence, user, c.verdict(label, quotes))
            continue
        local_label, hint = decided[text]
        if hint is None:
            user = prompts.render("verify_global_user.txt", context=context, question=question,
                                  claim=text)
        else:
            user = prompts.render("verify_global_hint_user.txt", context=context,
                                  question=question, claim=text, local_label=local_label,
                                  hint=hint)
        label, quotes = reference().verify(text, context, hint)
        stages["verify_global"] += c.call(system, user, c.verdict(label, quotes))
        if c.config.confirm_ent and label == "ENT" and quotes:
            evidence = "\n".join(quotes)  # the quotes, alone, are its context
            user = prompts.render("verify_global_user.txt", context=evidence, question="",
                                  claim=text)
            stages["confirm"] += c.call(system, user, c.verdict(*reference().verify(text,
                                                                                 evidence)))


@dataclass(frozen=True)
class AuditEstimateSwitches:
    """`audit --estimate`: estimate the run instead of making it."""

    estimate: bool = option(
        "--estimate", kind="flag", default=False,
        help="read, validate and segment the inputs and print the expected judge calls, tokens "
             "and USD per stage and model (with and without --claims-per-call, --prune-windows, "
             "--batch-api); no judge call is made, nothing is written")
    estimate_json: str | None = option(
        "--estimate-json", metavar="PATH",
        help="with --estimate: also write the estimate as JSON to PATH ('-': print JSON only)")
    estimate_reasoning_fill: float = option(
        "--estimate-reasoning-fill", default=0.5, parse=float, metavar="F",
        help="with --estimate: the share of reasoning_chars a reply's reasoning is assumed to "
             "fill (default 0.5; a model's own habit, measure it on a real run)")


@dataclass(frozen=True)
class StreamEstimateSwitches:
    """`stream --estimate SAMPLE_FILE`: estimate a stream's spend from a sample of its traces."""

    estimate: str | None = option(
        "--estimate", metavar="SAMPLE_FILE",
        help="estimate the stream's judge calls, tokens and USD per 1,000 traces (and per hour "
             "with --traces-per-hour) from a sample file of its traces, then exit; no judge "
             "call, no subscription read")
    estimate_json: str | None = option(
        "--estimate-json", metavar="PATH",
        help="with --estimate: also write the estimate as JSON to PATH ('-': print JSON only)")
    estimate_reasoning_fill: float = option(
        "--estimate-reasoning-fill", default=0.5, parse=float, metavar="F",
        help="with --estimate: the share of reasoning_chars a reply's reasoning is assumed to "
             "fill (default 0.5)")
    traces_per_hour: int | None = option(
        "--traces-per-hour", parse=int, metavar="N",
        help="with --estimate: the stream's traffic, for USD per hour")
