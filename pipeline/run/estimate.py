"""`--estimate`: the inputs read, validated and segmented as the audit does, then estimated.

A small local Beam pipeline (the audit's own ReadTraces, ValidateTraces and Segment, so the
same formats and the same dead letters) whose traces are estimated by
`transforms.estimate.estimate_trace`; no judge is built and nothing goes on the network. The
report gives the configured run and its alternatives (`--claims-per-call`, `--prune-windows`,
`--batch-api`), USD for the configured model and every model of the price table.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import tempfile
from collections.abc import Mapping

import apache_beam as beam

from rt4chart.pipeline.sources.traces import ReadTraces
from rt4chart.schemas.usage import add_cost
from rt4chart.transforms.common.guard import GuardedDoFn
from rt4chart.transforms.estimate import (
    EstimateConfig,
    StageEstimate,
    TraceEstimate,
    cost,
    estimate_trace,
)
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.prices import Prices, PriceTable, load_table
from rt4chart.transforms.judges.speed import Speed, run_seconds
from rt4chart.transforms.sampling import Sample
from rt4chart.transforms.segment import Segment
from rt4chart.transforms.validate import ValidateTraces

CONFIRM = "confirm"
TIME_NOTE = ("unknown without the endpoint's measured speed: `rt4chart check-judge` "
             "measures it and prints the --judge-option prompt_tokens_per_s=... "
             "output_tokens_per_s=... to pass")
ALT_CLAIMS_PER_CALL = 4  # the alternative shown when the run checks one claim per call


def variants(config: EstimateConfig) -> dict[str, EstimateConfig]:
    """The configured run and one alternative per option that changes calls or tokens."""
    out = {"configured": config}
    cpc = 1 if config.claims_per_call > 1 else ALT_CLAIMS_PER_CALL
    out[f"claims_per_call={cpc}"] = dataclasses.replace(config, claims_per_call=cpc)
    out[f"prune_windows={not config.prune_windows}"] = dataclasses.replace(
        config, prune_windows=not config.prune_windows)
    return out


class _EstimateFn(GuardedDoFn):
    """A prepared trace -> its estimate per variant; a trace it cannot estimate -> a dead
    letter (stage "estimate"), reported by name."""

    stage = "estimate"

    def __init__(self, configs: Mapping[str, EstimateConfig]):
        self._configs = dict(configs)

    def process(self, prepared):
        yield {name: estimate_trace(prepared, c) for name, c in self._configs.items()}


def estimate_inputs(inputs, stages, configs: Mapping[str, EstimateConfig],
                    input_format: str = "auto", spans=None,
                    max_record_bytes: int | None = None) -> tuple[dict, int, int, list]:
    """({variant: summed TraceEstimate over the traces sampling picks}, dead letters, valid
    traces seen, [(trace_id, reason)] of the traces that could not be estimated)."""
    kwargs = {} if max_record_bytes is None else {"max_record_bytes": max_record_bytes}
    with tempfile.TemporaryDirectory(prefix="rt4chart-estimate-") as tmp:
        with beam.Pipeline(runner="DirectRunner") as p:
            read = p | "ReadTraces" >> ReadTraces(tuple(inputs), input_format, False, spans,
                                                  **kwargs)
            valid = read.records | "Validate" >> ValidateTraces(stages.windowing,
                                                                stages.dedupe_horizon_s)
            # The run's own sampling decision (--sample, --always): the traces it would audit.
            picked, _, _ = valid.traces | "Sample" >> Sample(stages.sampling)
            seg = picked | "Segment" >> Segment(stages.segment)
            estimated = seg.prepared | "Estimate" >> beam.ParDo(_EstimateFn(configs)).with_outputs(
                "dead", main="est")
            failed = (estimated.dead | "Failed" >> beam.Map(lambda d: (d.trace_id, d.reason))
                      | "FailedList" >> beam.combiners.ToList())
            _ = failed | "WriteFailed" >> beam.Map(_dump, os.path.join(tmp, "failed.pkl"))
            dead = ((read.dead_letters, valid.dead_letters, seg.dead_letters, estimated.dead)
                    | "Dead" >> beam.Flatten() | "CountDead" >> beam.combiners.Count.Globally())
            seen = valid.traces | "CountSeen" >> beam.combiners.Count.Globally()
            _ = seen | "WriteSeen" >> beam.Map(_dump, os.path.join(tmp, "seen.pkl"))
            est = estimated.est | "Sum" >> beam.CombineGlobally(_sum_all)
            _ = est | "WriteEst" >> beam.Map(_dump, os.path.join(tmp, "est.pkl"))
            _ = dead | "WriteDead" >> beam.Map(_dump, os.path.join(tmp, "dead.pkl"))
        with open(os.path.join(tmp, "est.pkl"), "rb") as fh:
            totals = pickle.load(fh)
        with open(os.path.join(tmp, "dead.pkl"), "rb") as fh:
            dead_count = pickle.load(fh)
        with open(os.path.join(tmp, "seen.pkl"), "rb") as fh:
            seen_count = pickle.load(fh)
        with open(os.path.join(tmp, "failed.pkl"), "rb") as fh:
            failed_list = sorted(pickle.load(fh), key=str)
    return (totals or {name: TraceEstimate() for name in configs}, dead_count, seen_count,
            failed_list)


def _sum_all(items) -> dict:
    out: dict = {}
    for item in items:
        for name, est in item.items():
            out[name] = out[name] + est if name in out else est
    return out


def _dump(value, path: str) -> None:
    with open(path, "wb") as fh:
        pickle.dump(value, fh)


class _Priced:
    """USD of an estimate: the first judge's stages at a model's prices (the Batch API's
    discount with `batch_api`), and the confirm stage at the confirming judge's own (`second`:
    its model and prices) when a second judge confirms."""

    def __init__(self, prices: PriceTable, second: tuple[str, Prices | None] | None):
        self.prices, self.second = prices, second

    def usd(self, est: TraceEstimate, model: str, batch_api: bool) -> float | None:
        if self.second is None:
            return est.usd(model, self.prices, batch_api)
        return add_cost(self.first_usd(est, model, batch_api), self.confirm_usd(est))

    def first_usd(self, est: TraceEstimate, model: str, batch_api: bool) -> float | None:
        own = sum((v for s, v in est.stages.items() if s != CONFIRM or self.second is None),
                  StageEstimate())
        factor = self.prices.batch_discount if batch_api else 1.0
        return cost(self.prices.lookup(model), own, factor)

    def confirm_usd(self, est: TraceEstimate) -> float | None:
        # The confirming judge is never the Batch API's (--batch-api is the first judge's).
        return cost(self.second[1], est.stages.get(CONFIRM, StageEstimate()))

    def by_judge_model(self, est: TraceEstimate, model: str, batch_api: bool) -> dict:
        out = {model: self.first_usd(est, model, batch_api)}
        if self.second is not None:
            out[self.second[0]] = add_cost(out.get(self.second[0], 0.0), self.confirm_usd(est))
        return out


def report(totals: Mapping[str, TraceEstimate], dead: int, model: str, prices: PriceTable,
           batch_api: bool, per: int | None = None, per_hour: int | None = None,
           confirm: tuple[str, Prices | None] | None = None, speed: Speed | None = None
           ) -> dict:
    """The machine form of the estimate (what --json prints); `per`: scale to that many
    traces (stream: per 1,000), `per_hour`: also per hour at that many traces; `confirm`: the
    confirming judge's model and prices (`--confirm-judge`): its stage is priced at those, in
    every variant and in `per_model` (which reprices the first judge only); `speed`: the
    endpoint's measured speed, for each variant's `time`."""
    out: dict = {"dead_letters": dead, "model": model, "batch_api": batch_api, "runs": {}}
    if confirm is not None:
        out["confirm_model"] = confirm[0]
    priced = _Priced(prices, confirm)
    for name, est in totals.items():
        scale = (per / est.traces) if per and est.traces else 1.0
        run: dict = {"traces": est.traces, "sentences": est.sentences, "windows": est.windows,
                     "claims": est.claims, "stages": {
                         s: dataclasses.asdict(v) for s, v in est.stages.items()},
                     "total": dataclasses.asdict(est.total)}
        usd = {m: _scaled(priced.usd(est, m, False), scale) for m in sorted(prices.models)}
        run["usd"] = {"configured": _scaled(priced.usd(est, model, batch_api), scale),
                      "configured_other_api": _scaled(priced.usd(est, model, not batch_api),
                                                      scale),
                      "per_model": usd,
                      "per_model_batch_api": {m: _scaled(priced.usd(est, m, True), scale)
                                              for m in sorted(prices.models)},
                      "by_judge_model": {m: _scaled(v, scale) for m, v in
                                         priced.by_judge_model(est, model, batch_api).items()}}
        if per:
            run["per_traces"] = per
            run["calls_per_trace_scaled"] = round(est.total.calls * scale, 1)
        if speed is not None:  # scaled as the costs are (per `per` traces)
            run["time"] = run_time(est.total, speed)
            run["time"]["seconds"] = round(run["time"]["seconds"] * scale, 1)
        if per_hour and est.traces:
            run["usd_per_hour"] = _scaled(priced.usd(est, model, batch_api),
                                          per_hour / est.traces)
        out["runs"][name] = run
    return out


def speed_of(options: Mapping[str, str], name: str) -> Speed | None:
    """The judge endpoint's measured speed from its options (`prompt_tokens_per_s`,
    `output_tokens_per_s`: what check-judge prints), calls at once from `max_concurrency`;
    None when not given (or the judge has no endpoint speed): its kind's."""
    spec = JudgeSpec.of(name, options)
    return spec.kind().speed(spec)


def run_time(total: StageEstimate, speed: Speed | None) -> dict | None:
    """How long the calls of an estimate take at the endpoint's measured speed: every prompt
    read and every reply written, `slots` calls at a time (a lower bound where rate limits
    hold the calls back; None without a measured speed)."""
    if speed is None:
        return None
    seconds = run_seconds(speed, total.input_tokens, total.output_tokens)
    return {"seconds": round(seconds, 1), "prompt_tokens_per_s": speed.prompt_tps,
            "output_tokens_per_s": speed.output_tps, "calls_at_once": speed.slots}


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else round(value * factor, 6)


def lines(data: dict) -> list[str]:
    """The human form: per run variant, per stage, then USD per model."""
    out = [f"estimate (no judge call made): model {data['model']}, "
           + (f"confirming judge model {data['confirm_model']}, " if "confirm_model" in data
              else "")
           + f"batch_api={data['batch_api']}, dead letters {data['dead_letters']}"
           + (f", valid traces {data['seen']}" if "seen" in data else "")]
    for name, run in data["runs"].items():
        out.append(f"[{name}] traces {run['traces']}, sentences {run['sentences']}, windows "
                   f"{run['windows']}, claims {run['claims']}")
        out.append(f"  {'stage':<14}{'calls':>8}{'input_tok':>12}{'output_tok':>12}")
        for stage, v in {**run["stages"], "total": run["total"]}.items():
            out.append(f"  {stage:<14}{v['calls']:>8}{v['input_tokens']:>12}"
                       f"{v['output_tokens']:>12}")
        usd = run["usd"]
        out.append(f"  USD {data['model']}: {_usd(usd['configured'])} (other API: "
                   f"{_usd(usd['configured_other_api'])})"
                   + (f", per hour {_usd(run['usd_per_hour'])}" if "usd_per_hour" in run
                      else "") + (f" [per {run['per_traces']} traces]" if "per_traces" in run
                                  else ""))
        if run.get("time"):
            t = run["time"]
            out.append(f"  time at the measured speed ({t['prompt_tokens_per_s']:g} prompt / "
                       f"{t['output_tokens_per_s']:g} output tokens/s, {t['calls_at_once']} "
                       f"call(s) at once): about {_duration(t['seconds'])}")
        if "confirm_model" in data:  # a second judge: what each judge's calls cost
            out.append("  USD by judge model: " + ", ".join(
                f"{m} {_usd(v)}" for m, v in usd["by_judge_model"].items()))
    for item in data.get("not_estimated", ()):
        out.append(f"not estimated (left out of the figures): trace {item['trace_id']}: "
                   f"{item['reason']}")
    if data.get("time_note"):
        out.append(f"  time: {data['time_note']}")
    first = next(iter(data["runs"].values()), None)
    if first:
        out.append(f"  {'model':<28}{'USD':>12}{'USD batch':>12}  (configured run)")
        for m, v in first["usd"]["per_model"].items():
            out.append(f"  {m:<28}{_usd(v):>12}{_usd(first['usd']['per_model_batch_api'][m]):>12}")
    return out


def _usd(v: float | None) -> str:
    return "unknown" if v is None else f"{v:.4f}"


def dumps(data: dict) -> str:
    return json.dumps(data, indent=2)


def price_table(options: Mapping[str, str]) -> PriceTable:
    return load_table(options.get("prices"))


def estimate_config(stages, reasoning_fill: float) -> tuple[EstimateConfig, str]:
    """The estimator's view of a run's stages and judge options, and the model priced."""
    reasoning, structured, model = stages.judge.kind().estimate_basis(stages.judge)
    config = EstimateConfig(stages.verify_local.claims_per_call,
                            stages.verify_local.prune_windows, stages.confirm.enabled,
                            reasoning, structured, reasoning_fill, stages.judge.name)
    return config, model


def confirm_prices(stages) -> tuple[str, Prices | None] | None:
    """The confirming judge's model and prices (`--confirm-judge`), None without one: the
    openai judge's as its calls are priced (price_model, --prices, price_* options), another
    judge's by its name in the price table (its `prices` option's)."""
    second = stages.confirm.judge_spec()
    if second is None:
        return None
    priced = second.kind().priced(second)
    if priced is not None:
        return priced
    return second.name, price_table(dict(second.options)).lookup(second.name)


def estimate(inputs, stages, *, batch_api: bool, reasoning_fill: float = 0.5,
             alternatives: bool = True, input_format: str = "auto", spans=None,
             max_record_bytes: int | None = None, per: int | None = None,
             per_hour: int | None = None) -> dict:
    """The estimate's report (`report`, plus `seen`) of the inputs under `stages`: the
    configured run, and with `alternatives` the variants (`variants`)."""
    config, model = estimate_config(stages, reasoning_fill)
    configs = variants(config) if alternatives else {"configured": config}
    totals, dead, seen, failed = estimate_inputs(inputs, stages, configs, input_format, spans,
                                                 max_record_bytes)
    options = dict(stages.judge.options)
    speed = None if batch_api else speed_of(options, stages.judge.name)
    data = report(totals, dead, model, price_table(options), batch_api,
                  per, per_hour, confirm_prices(stages), speed)
    if speed is None and not batch_api:
        data["time_note"] = TIME_NOTE
    data["seen"] = seen  # valid traces; each run's `traces`: those sampling picks
    # The traces the estimate itself failed on (a fault of the estimate, not of the trace):
    # named, so that the estimate's figures are known to leave them out.
    data["not_estimated"] = [{"trace_id": t, "reason": r} for t, r in failed]
    return data


def run(inputs, stages, *, batch_api: bool, json_path: str | None, reasoning_fill: float,
        input_format: str = "auto", spans=None, max_record_bytes: int | None = None,
        per: int | None = None, per_hour: int | None = None) -> int:
    """Estimate and print; the exit code (0)."""
    data = estimate(inputs, stages, batch_api=batch_api, reasoning_fill=reasoning_fill,
                    input_format=input_format, spans=spans, max_record_bytes=max_record_bytes,
                    per=per, per_hour=per_hour)
    if json_path == "-":
        print(dumps(data))
        return 0
    for line in lines(data):
        print(line)
    if json_path:
        with open(json_path, "w", encoding="utf-8") as fh:
            fh.write(dumps(data))
    return 0
