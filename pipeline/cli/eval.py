"""The `rt4chart eval` command: `rt4chart eval --dataset F --data P --out DIR`,
`rt4chart eval compare RUN_A RUN_B` and `rt4chart eval calibrate --dataset F --data P --out DIR
--write FILE`.

The `rt4chart` command line adds the parser with `add_parsers(subparsers)` and dispatches to
`run(args, beam_args)`; Beam's options go to Beam, as for `audit`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rt4chart.pipeline.cli import parsers as cli_args
from rt4chart.pipeline.eval import calibrate as calibrate_mod
from rt4chart.pipeline.eval import compare as compare_mod
from rt4chart.pipeline.eval import phoenix_labels
from rt4chart.pipeline.eval.measures_report import fmt
from rt4chart.pipeline.eval.runner import EvalOptions, redact, run_eval
from rt4chart.pipeline.options.flags import SHARED, add_eval_args
from rt4chart.pipeline.run import jobs
from rt4chart.transforms.common.options_spec import declared, from_values
from rt4chart.transforms.confirm import ConfirmConfig

SECRET_FLAGS = ("--judge-option", "--confirm-judge-option")  # KEY=VALUE: redacted in the report


def add_parsers(subparsers: Any) -> argparse.ArgumentParser:
    """Add `eval` (with its `compare` sub-command) to the root parser's sub-commands."""
    p = subparsers.add_parser(
        "eval", allow_abbrev=False, help="evaluate the audit on a labelled dataset",
        description="Convert labelled records to traces, audit them as `audit` does, and write "
                    "a report (Markdown, JSON, plots) of the judge against the gold and trivial "
                    "references. `rt4chart eval compare RUN_A RUN_B` compares two runs.")
    add_eval_args(p)
    sub = p.add_subparsers(dest="eval_command")
    c = sub.add_parser("compare", allow_abbrev=False, help="compare two eval runs",
                       description="Differences B - A of every measure with paired bootstrap "
                                   "intervals, and the answers whose verdict changed.")
    c.add_argument("run_a", metavar="RUN_A")
    c.add_argument("run_b", metavar="RUN_B")
    c.add_argument("--out", dest="compare_out", metavar="DIR",
                   help="also write compare.json and compare.md in DIR (without --out: the "
                        "Markdown is printed, no file is written)")
    c.add_argument("--seed", dest="compare_seed", type=int, default=0)
    c.add_argument("--bootstrap", dest="compare_bootstrap", type=int, default=1000)
    k = sub.add_parser("calibrate", allow_abbrev=False, help="fit a judge's calibration map",
                       description="Audit the dev part with the judge's calibration off and fit "
                                   "its claim and answer maps (isotonic); see "
                                   "rt4chart.pipeline.eval.calibrate.")
    add_eval_args(k)
    k.add_argument("--write", metavar="FILE",
                   help="write the calibration here (e.g. transforms/judges/"
                        "calibration_offline.json); use it with --judge-option calibration=FILE")
    return p


def _label_map(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        raw, sep, label = item.rpartition("=")
        if not sep or not raw:
            raise ValueError(f"--gold-label expects RAW=CON|NIC, got {item!r}")
        out[raw] = label.strip().upper()
    return out


def _audit_args(args: argparse.Namespace) -> tuple[str, ...]:
    """The judge and window flags as `audit` takes them (recorded in the report): every option
    `flags.SHARED` declares, so a judge option added there is recorded without a change here,
    and the confirmation's (`--confirm-ent`, `--confirm-judge`)."""
    out: list[str] = []
    for dest, opt in (*SHARED, *declared(ConfirmConfig)):
        value = getattr(args, dest, None)
        if opt.kind == "flag":
            out += [opt.flag] if value else []
        elif opt.kind == "append":
            for item in value or []:
                out += [opt.flag, str(item)]
        elif value is not None:
            out += [opt.flag, str(value)]
    return tuple(out)


def options(args: argparse.Namespace, beam_args: list[str]) -> EvalOptions:
    """The eval's options from the parsed command line (ValueError on a usage error)."""
    missing = [f"--{n}" for n in ("dataset", "data", "out") if not getattr(args, n)]
    if missing:
        raise ValueError(f"eval needs {', '.join(missing)} (or: eval compare RUN_A RUN_B)")
    tasks = tuple(t.strip() for t in (args.tasks or "").split(",") if t.strip())
    audit_args = _audit_args(args)
    shown = [redact([v])[0] if flag in SECRET_FLAGS else v
             for flag, v in zip(("", *audit_args), audit_args, strict=False)]
    config = {"judge": args.judge, "judge_options": redact(args.judge_option),
              "confirm_judge": args.confirm_judge,
              "confirm_judge_options": redact(args.confirm_judge_option),
              "model": args.model, "base_url": args.base_url,
              "window_size": args.window_size, "window_overlap": args.window_overlap,
              "audit_args": shown}
    return from_values(
        EvalOptions, args, tasks=tasks, label_map=_label_map(args.gold_label),
        stages=cli_args.stages_config(args), beam_args=tuple(beam_args), config=config)


def _print_summary(report: dict, out: str) -> None:
    print(f"rt4chart eval: report in {out}/report.md ({', '.join(report['reported_parts'])} "
          "part)")
    for name, group in report["groups"].items():
        judge, c = group["systems"]["judge"], group["counts"]
        print(f"  {name}: {c['answers']} answers, answer F1 {fmt(judge['answer.f1']['value'])}, "
              f"span F1 {fmt(judge['span.f1']['value'])}, AUROC {fmt(judge['auroc']['value'])}")


def run(args: argparse.Namespace, beam_args: list[str]) -> int:
    """Run `eval` or `eval compare`; the exit code (usage errors raise ValueError)."""
    if getattr(args, "eval_command", None) == "compare":
        result = compare_mod.compare(args.run_a, args.run_b, args.compare_bootstrap,
                                     args.compare_seed)
        if args.compare_out:
            compare_mod.write(result, args.compare_out)
        sys.stdout.write(compare_mod.markdown(result))
        return 0
    if getattr(args, "eval_command", None) == "calibrate":
        content = calibrate_mod.calibrate(options(args, beam_args), args.write)
        fit = content["fit"]
        print(f"rt4chart eval calibrate: {fit['claims']} claims, {fit['answers']} answers (dev); "
              f"claim threshold {fmt(fit['claim_threshold'])}, answer threshold "
              f"{fmt(fit['answer_threshold'])}; dev answer ECE {fmt(fit['dev_answer_ece_raw'])}"
              f" -> {fmt(fit['dev_answer_ece'])}" + (f"; written to {args.write}"
                                                       if args.write else ""))
        return 0
    if getattr(args, "gold", None):  # the judge against reviewers' labels in Phoenix
        return phoenix_labels.run(args)
    opts = options(args, beam_args)
    code, report = run_eval(opts)
    if code == 0:
        _print_summary(report, opts.out)
    else:
        print(f"rt4chart: {jobs.NO_ANSWER_JUDGED}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    """`python -m rt4chart.pipeline.cli.eval ARGS`: the eval command on its own (the same as
    `rt4chart eval ARGS`), with the same exit codes (2 usage, 1 failure)."""
    import logging

    argv = list(sys.argv[1:] if argv is None else argv)
    # Before any PipelineOptions is made: its constructor sets up the root logger otherwise.
    logging.basicConfig(level=logging.DEBUG if {"-v", "--verbose"} & set(argv) else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    ours, beam_args = cli_args.split_beam_args(argv)
    root = argparse.ArgumentParser(prog="rt4chart", allow_abbrev=False)
    add_parsers(root.add_subparsers(dest="command", required=True))
    args, unknown = root.parse_known_args(["eval", *ours])
    logging.getLogger("apache_beam").setLevel(logging.WARNING)
    try:
        return run(args, beam_args + unknown)
    except (ValueError, FileExistsError) as exc:
        print(f"rt4chart: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
