"""`rt4chart audit --sample/--always` end to end: the same traces on every run and in chunks,
the traffic accounting in route_rates and summary.json, and an exact --redo."""

from __future__ import annotations

import json
import re
from collections import Counter

from sampled_traces import SAMPLING_ARGS, expected_ids, sampled_records

from rt4chart.pipeline.report.page import render
from rt4chart.pipeline.results.load import load_run
from rt4chart.schemas.records import NO_ROUTE
from rt4chart.transforms.sampling import SamplingConfig

from testutil import write_jsonl

TRAFFIC = ("seen", "sampled", "always", "audited", "skipped_cap", "dead_lettered")


def _totals(rates: list[dict]) -> dict[str, int]:
    return {k: sum(r[k] for r in rates) for k in TRAFFIC}


def test_a_run_and_a_run_in_chunks_audit_the_same_traces(tmp_path, audit):
    records = sampled_records(1000)
    path = write_jsonl(tmp_path / "t.jsonl", [*records, {"trace_id": "bad"}])  # a dead letter
    want = expected_ids(records)
    runs = [audit(str(path), "--judge", "offline", *SAMPLING_ARGS, *extra,
                  out=tmp_path / name)
            # One pipeline run over the whole input, and the default: runs of 400 traces.
            for name, extra in (("one", ("--chunk-traces", "0")), ("chunks", ()))]
    for code, tables, out in runs:
        assert code == 0
        assert sorted(a["trace_id"] for a in tables["answers"]) == sorted(want)
        summary = json.loads((out / "summary.json").read_text())
        totals = _totals(tables["route_rates"])
        down = sum(r["metadata"]["feedback"] == "down" for r in records)
        assert totals == {"seen": 1000, "sampled": len(want) - down, "always": down,
                          "audited": len(want), "skipped_cap": 0, "dead_lettered": 1}
        assert {k: summary[k] for k in TRAFFIC} == totals
        assert summary["unsampled"] == 1000 - len(want) == (
            summary["seen"] - summary["sampled"] - summary["always"])
        # Per route: nothing left out unsaid; the invalid record, routeless, has its own row.
        by_route = {r["route"]: r for r in tables["route_rates"]}
        assert by_route[NO_ROUTE]["dead_lettered"] == 1 and by_route[NO_ROUTE]["seen"] == 0
        for route, n in Counter(r["route"] for r in records).items():
            assert by_route[route]["seen"] == n
            ids = {a["trace_id"] for a in tables["answers"] if a["route"] == route}
            assert by_route[route]["audited"] == len(ids)
        # Sampled at 0.1: weight 10; always: 1.
        weights = {a["sample_weight"] for a in tables["answers"]}
        assert weights == {1.0, 10.0}
    # The report shows seen versus audited per route.
    html = render(load_run(str(runs[0][2])), None, max_traces=5, title="t")
    for route in ("checkout", "search", "help"):
        row = re.search(f'<tr data-route="{route}">.*?</tr>', html, re.S).group(0)
        seen = re.search(r'<td class="seen">(\d+)</td><td class="audited">(\d+)</td>', row)
        assert (int(seen.group(1)), int(seen.group(2))) == (
            by_route[route]["seen"], by_route[route]["audited"])


CTX = "Tokyo is the capital of Japan. It has about 14 million inhabitants."


def _judge(down) -> tuple[str, ...]:
    return ("--judge", "fake_judges:keyword", "--judge-option", f"down_file={down}",
            "--judge-option", "down_on=FLAKY")


def test_a_redo_of_a_sampled_run_re_audits_exactly_its_incomplete_answers(tmp_path, audit,
                                                                          capsys):
    records = [{"trace_id": f"t{i:02d}", "route": "r", "timestamp": "2024-05-01T09:30:00Z",
                "contexts": [CTX], "answer": f"Tokyo is the capital of Japan, answer {i}."
                + (f" Osaka is a FLAKY city, answer {i}." if i % 2 else "")}
               for i in range(40)]
    path = write_jsonl(tmp_path / "t.jsonl", records)
    sample = ("--sample", "r=0.5", "--sample-salt", "redo")
    want = expected_ids(records, SamplingConfig(sample=("r=0.5",), sample_salt="redo"))
    down = tmp_path / "down"
    down.write_text("down for FLAKY")
    code, first, out = audit(str(path), *_judge(down), *sample, out=tmp_path / "R")
    assert code == 3  # answers left incomplete
    incomplete = {a["trace_id"] for a in first["answers"] if a["status"] != "ok"}
    assert {a["trace_id"] for a in first["answers"]} == want and incomplete
    down.unlink()
    # Another sampling would re-decide (and reweigh) the earlier run's picks: a usage error.
    code, _, _ = audit("--redo", str(out), "--overwrite", *_judge(down), "--sample", "r=0.2",
                       out=out)
    assert code == 2 and "--sample" in capsys.readouterr().err
    code, after, _ = audit("--redo", str(out), "--overwrite", *_judge(down), *sample, out=out)
    assert code == 0
    assert sorted(a["trace_id"] for a in after["answers"]) == sorted(want)
    assert all(a["status"] == "ok" for a in after["answers"])
    assert {a["sample_weight"] for a in after["answers"]} == {2.0}
    [rate] = after["route_rates"]  # the earlier run's traffic, not the redo's alone
    assert (rate["seen"], rate["sampled"], rate["audited"]) == (40, len(want), len(want))
