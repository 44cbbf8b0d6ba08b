"""`rt4chart check-judge`: the start-up probe of `audit` (judge_check.py), then one
decomposition and one verification of a built-in example, printing what the endpoint supports,
the mode rt4chart will use, latencies and tokens (exit 1 when the judge cannot be used, with
the server's message)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

import orjson

from rt4chart.pipeline.options.flags import add_options
from rt4chart.pipeline.run.judge_probe import negotiate
from rt4chart.transforms.common.options_spec import from_values
from rt4chart.transforms.judges.base import (
    CLAIM,
    CONTEXT,
    QUESTION,
    JudgeError,
    JudgeUnusable,
    metered,
)
from rt4chart.transforms.judges.contract import Judge, JudgeSpec, close_judge, judge_keys
from rt4chart.transforms.judges.judge_options import JudgeOptions

ANSWER = "The city museum opened in 1990. It holds about 5,000 paintings."


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "check-judge", allow_abbrev=False,
        help="check that a judge endpoint can be used, and how",
        description="Probe the judge's endpoint as `audit` does before its first trace, then "
                    "run one decomposition and one verification of a built-in example: what "
                    "the endpoint accepts, the request rt4chart will send, latency and tokens. "
                    "Exit 1 when the judge cannot be used.")
    add_options(p, JudgeOptions)
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    return p


def run(args: argparse.Namespace) -> int:
    spec = from_values(JudgeOptions, args).spec()
    if not spec.kind().traits.negotiates:
        print(f"rt4chart: judge {spec.name!r} is not an OpenAI-compatible endpoint: there is "
              "nothing to probe; it is checked when a run builds it", file=sys.stderr)
        return 1
    try:
        spec, found = negotiate(spec)
    except (JudgeUnusable, ValueError) as exc:
        print(f"rt4chart: the judge cannot be used: {judge_keys(spec).redact(str(exc))}",
              file=sys.stderr)
        return 1
    calls, speed = asyncio.run(_example_calls(spec))
    failed = [c for c in calls if c.get("error")]
    findings = {"judge": spec.name, "options": _shown(spec), "probe": found, "calls": calls,
                "speed": speed, "usable": not failed}
    if args.json:
        print(orjson.dumps(findings, option=orjson.OPT_INDENT_2).decode())
    else:
        for line in lines(findings):
            print(line)
    if failed:
        print(f"rt4chart: the judge cannot be used: {failed[0]['call']}: {failed[0]['error']}",
              file=sys.stderr)
        return 1
    return 0


def _shown(spec: JudgeSpec) -> dict[str, str]:
    return {k: v for k, v in spec.options if k != "negotiated"}


async def _example_calls(spec: JudgeSpec) -> tuple[list[dict[str, Any]], dict | None]:
    """One decomposition and one verification through the negotiated judge; a failed one
    says why (the other is still made). And the endpoint's measured speed (see `speed`)."""
    judge = spec.build()
    keys = judge_keys(spec).with_values(*judge.held_keys())  # a key it read from Secret Manager
    sentence = ANSWER.split(". ")[0] + "."
    examples = {
        "decompose": (lambda: judge.decompose(sentence, ANSWER, QUESTION),
                      lambda claims: {"claims": [c.text for c in claims]}),
        "verify": (lambda: judge.verify_local(CLAIM, CONTEXT, QUESTION),
                   lambda v: {"label": v.label, "evidence": list(v.quotes)}),
    }
    out = []
    try:
        for name, (call, shown) in examples.items():
            started = time.monotonic()
            try:
                result, usage = await metered(call)
                entry = {**shown(result), **_tokens(usage)}
            except JudgeError as exc:
                entry = {"error": keys.redact(str(exc))}
            out.append({"call": name, "seconds": round(time.monotonic() - started, 3), **entry})
        return out, speed(judge)
    finally:
        await close_judge(judge)


def speed(judge: Judge) -> dict[str, Any] | None:
    """The endpoint's speed as the judge measured it (probe and example calls), the time of a
    long call at that speed, and the options that give it to `--estimate` and a run."""
    return judge.endpoint_speed()


def _tokens(usage: Any) -> dict[str, Any]:
    return {"prompt_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cost_usd": usage.cost_usd}


def lines(findings: dict[str, Any]) -> list[str]:
    """check-judge's report, for people."""
    out = [f"judge: {findings['judge']} ({', '.join(f'{k}={v}' for k, v in sorted(findings['options'].items())) or 'defaults'})"]  # noqa: E501
    found = findings["probe"]
    if found:
        req = found["request"]
        out.append(f"probe: {found['probe_calls']} call(s) in {found['probe_seconds']:.1f} s; "
                   f"prompt counted {found['prompt_tokens_counted']} tokens (rt4chart "
                   f"estimated {found['prompt_tokens_estimated']})")
        out.append(f"mode: structured output {req['structured_output']}, schema bounds "
                   f"{'sent' if req['schema_bounds'] else 'not sent'}, output limit as "
                   f"{req['token_parameter']}, logprobs {'on' if req['logprobs'] else 'off'}, "
                   f"not sent: {', '.join(req['dropped']) or 'nothing'}")
        out += [f"adapted: {change}" for change in found["changes"]]
        out += [f"note: {warning}" for warning in found["warnings"]]
        if found["slots"]:
            out.append(f"capacity: {found['slots']} call(s) at once ({found['slots_from']})")
        if found["adapted_options"]:
            out.append("options for this endpoint: " + ", ".join(
                f"{k}={v}" for k, v in sorted(found["adapted_options"].items())))
    for call in findings["calls"]:
        if call.get("error"):
            out.append(f"{call['call']}: failed after {call['seconds']:.1f} s: {call['error']}")
            continue
        what = (f"{len(call['claims'])} claim(s)" if call["call"] == "decompose"
                else f"label {call['label']}, {len(call['evidence'])} quote(s)")
        cost = "cost unknown" if call["cost_usd"] is None else f"${call['cost_usd']:.6f}"
        out.append(f"{call['call']}: {what} in {call['seconds']:.1f} s "
                   f"({call['prompt_tokens']} prompt + {call['output_tokens']} output tokens, "
                   f"{cost})")
    out += _speed_lines(findings.get("speed"))
    if findings["usable"]:
        out.append("the judge can be used")
    return out


def _speed_lines(found: dict[str, Any] | None) -> list[str]:
    if not found:
        return []
    given = " ".join(f"--judge-option {k}={v}" for k, v in found["options"].items())
    return [f"speed: reads {found['prompt_tokens_per_s']:g} prompt tokens/s, writes "
            f"{found['output_tokens_per_s']:g} tokens/s ({found['replies_measured']} replies "
            f"measured), {found['calls_at_once']} call(s) at once; a "
            f"{found['long_call_prompt_tokens']}-token prompt and a "
            f"{found['long_call_output_tokens']}-token reply take about "
            f"{found['long_call_seconds']:g} s",
            f"how long a run takes at this speed: rt4chart audit INPUT --estimate {given}"]

