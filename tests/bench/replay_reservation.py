"""Replay recorded judge replies through the output reservation, over a grid of its settings.

    python tests/bench/bench_throughput.py --instant --traces 48 --replies /tmp/replies.jsonl
    python tests/bench/replay_reservation.py /tmp/replies.jsonl

Each recorded reply (schema, user message, the tokens the judge wrote) is sent, in order, one at
a time, through `OutputReservation` as the openai judge uses it (stage, size class, proportional
decompositions): a reply of at least its reservation is cut off, which wastes the attempt's
prompt and reservation, and retried with twice as much. The script prints, for the defaults and
for the best settings of the grid, the tokens per call reserved and not written (or wasted on
cut-off attempts), the share of calls cut off, and admitted / used tokens (prompt + reply). One
call at a time is the reservation's best case: under a fan-out, calls go out before the replies
they would learn from have come back.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from collections.abc import Iterable
from pathlib import Path

from rt4chart import prompts
from rt4chart.transforms.judges.openai.reservation import (
    OutputReservation,
    ReservationConfig,
    after_cut_off,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fakes"))
# Recorded requests have only their prompts: their stage and size are read as a provider would.
from prompt_facts import _restates, _stage, reply_size  # noqa: E402

INITIAL, CAP = 256, 2048  # the judge's max_output_tokens and max_output_tokens_cap
SYSTEM = {"decompose": "decompose_system.txt", "verify_absence": "verify_absence_system.txt"}
GRID = {"quantile": (0.95, 0.98, 0.99, 1.0), "margin": (0.0, 0.05, 0.1, 0.25),
        "slack": (4, 8, 16), "warmup": (8, 16, 32), "class_warmup": (4, 8, 16, 32)}


def calls(path: Path) -> list[tuple[str, int, int, int, bool]]:
    """(stage, size, reply tokens, prompt tokens, proportional) per recorded reply."""
    out = []
    for line in path.read_text().splitlines():
        schema, user, written = json.loads(line)
        claims = user.count("\n[") + 1 if schema == "verify_many" else None
        system = prompts.load(SYSTEM.get(schema, "verify_system.txt"))
        out.append((_stage(schema, claims, user), reply_size(schema, user), int(written),
                    math.ceil((len(system) + len(user)) / 4) + 9, _restates(schema)))
    return out


def replay(recorded: Iterable[tuple[str, int, int, int, bool]], config: ReservationConfig
           ) -> dict[str, float]:
    reservation = OutputReservation(INITIAL, CAP, config)
    waste = cut = n = used = 0
    for stage, size, written, prompt, proportional in recorded:
        budget = reservation.budget(stage, size, proportional)
        while written >= budget:  # cut off: the attempt is wasted, retried with more
            waste += prompt + budget
            cut += 1
            budget = after_cut_off(budget, INITIAL, CAP)
        waste += budget - written
        used += prompt + written
        n += 1
        reservation.observe(stage, written, budget, size, proportional)
    return {"waste_per_call": round(waste / n, 1), "cut_off_share": round(cut / n, 4),
            "admitted_over_used": round((used + waste) / used, 4), "calls": n}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("replies", type=Path, help="from bench_throughput.py --replies")
    args = ap.parse_args(argv)
    recorded = calls(args.replies)
    default = replay(recorded, ReservationConfig())
    results = []
    for values in itertools.product(*GRID.values()):
        settings = dict(zip(GRID, values, strict=True))
        results.append((replay(recorded, ReservationConfig(**settings)), settings))
    results.sort(key=lambda r: r[0]["admitted_over_used"])
    report = {"defaults": default, "best": [{**f, **s} for f, s in results[:5]],
              "settings_tried": len(results)}
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
