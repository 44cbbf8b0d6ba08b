"""The dashboard views (infra/sql) on the local BigQuery emulator, over rows the test inserts.

The tables are created from the generated schemas Terraform uses, and each view's SQL is
rendered as Terraform's templatefile() would render it. "Today" in `worst_traces_today` is the
query's own clock: the test reads it in the same query as the view, so a run across midnight
expects what the view must return then instead of sleeping until the day is safe.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from google.cloud import bigquery

from rt4chart.transforms.common.joins import wilson

import bq_emulator  # noqa: E402

INFRA = Path(__file__).resolve().parents[2] / "infra"
PROJECT, DATASET = "rt4chart-test", "rt4chart"
NOW = datetime.now(UTC)
TODAY = NOW.replace(hour=0, minute=0, second=0, microsecond=0)
DAY1 = TODAY - timedelta(days=3)


def render(name: str) -> str:
    """infra/sql/<name>.sql with ${project} and ${dataset}, as Terraform's templatefile()."""
    values = {"project": PROJECT, "dataset": DATASET}
    return re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)],
                  (INFRA / "sql" / f"{name}.sql").read_text())


def ts(value: datetime) -> str:
    return value.isoformat()


def _window_row(route, start, pane_index, pane, **values):
    return {"route": route, "window_start": ts(start),
            "window_end": ts(start + timedelta(minutes=5)), "day": start.date().isoformat(),
            "pane": pane, "pane_index": pane_index,
            "emitted_at": ts(start + timedelta(minutes=5 + pane_index)), **values}


def _rate(route, start, pane_index, pane, traces, hallucinated):
    return _window_row(route, start, pane_index, pane, traces=traces,
                       hallucinated=hallucinated, rate=hallucinated / traces, con=hallucinated,
                       nic=0, incomplete=0, late=0, input_tokens=0, cached_tokens=0,
                       output_tokens=0, cost_usd=0.0, sample_trace_ids=[])


def _cost(route, model, start, pane_index, calls, cost):
    return _window_row(route, start, pane_index, "EARLY", judge_model=model, calls=calls,
                       input_tokens=10 * calls, cached_tokens=0, output_tokens=calls,
                       cost_usd=cost)


W1 = DAY1 + timedelta(hours=10)
W2 = W1 + timedelta(minutes=5)
ROUTE_RATES = [
    # Inserted out of order: the latest pane is chosen by pane_index, not by arrival.
    _rate("a", W1, 2, "LATE", 12, 6),
    _rate("a", W1, 0, "EARLY", 3, 1),
    _rate("a", W1, 1, "ON_TIME", 10, 4),
    _rate("a", W2, 0, "ON_TIME", 5, 0),
    _rate("b", W1, 0, "EARLY", 2, 2),
    _rate("b", W1, 1, "ON_TIME", 4, 2),
]
COSTS = [
    _cost("a", "m1", W1, 0, 10, 1.0),
    _cost("a", "m1", W1, 1, 25, 2.5),  # accumulates pane 0: the window costs 2.5, not 3.5
    _cost("a", "m1", W2, 0, 10, 1.0),
    _cost("a", "m2", W1, 0, 5, 0.5),
    _cost("a", "m1", W1 + timedelta(days=1), 0, 40, 4.0),
    _cost("b", "m1", W1, 0, 2, 0.25),
]


def _answer(trace_id, label, spans, cost, *, when=None, status="ok", late=False,
            audited=None):
    when = when or NOW
    hallucinated = None if label is None else label != "ENT"
    return {"trace_id": trace_id, "route": "a", "event_time": ts(when), "label": label,
            "hallucinated": hallucinated, "status": status, "n_claims": 3,
            "hallucinated_spans": [{"char_start": 10 * i, "char_end": 10 * i + 5,
                                    "label": label or "NIC"} for i in range(spans)],
            "reason": None, "input_tokens": 100, "cached_tokens": 0, "output_tokens": 10,
            "judge_calls": 5, "cost_usd": cost, "judge_model": "m1", "prompt_hash": "h",
            "task": None, "generator": None, "audited_at": ts(audited or when), "late": late}


def _claim(trace_id, index, label, when=None):
    return {"trace_id": trace_id, "route": "a", "event_time": ts(when or NOW),
            "claim_index": index, "claim": f"{trace_id} claim {index}", "sentence_index": index,
            "sentence": f"sentence {index}", "answer_start": 0, "answer_end": 5,
            "window_labels": [label], "local_label": label, "deciding_window": 0,
            "label": label, "status": "ok", "note": None,
            "evidence": [], "judge_model": "m1", "prompt_hash": "h"}


ANSWERS = [
    _answer("t-nic-1", "NIC", 3, 0.10),
    _answer("t-con-2", "CON", 1, 0.05),
    _answer("t-con-2", "CON", 1, 0.05, audited=NOW - timedelta(seconds=5)),  # redelivered
    _answer("t-con-1", "CON", 2, 0.01),
    _answer("t-nic-2", "NIC", 3, 0.20),
    _answer("t-ent", "ENT", 0, 0.30),
    _answer("t-late", "ENT", 0, 0.01, late=True),
    _answer("t-incomplete", None, 0, 0.02, status="incomplete"),
    _answer("t-old", "CON", 4, 9.99, when=DAY1 + timedelta(hours=1)),
]
CLAIMS = [
    _claim("t-con-1", 0, "CON"), _claim("t-con-1", 1, "ENT"), _claim("t-con-1", 2, "NIC"),
    _claim("t-con-2", 0, "CON"), _claim("t-con-2", 1, "ENT"), _claim("t-con-2", 2, "ENT"),
    *(_claim(t, i, "NIC") for t in ("t-nic-1", "t-nic-2") for i in range(3)),
    _claim("t-ent", 0, "ENT"),
    _claim("t-old", 0, "CON", when=DAY1 + timedelta(hours=1)),
]


def _create_tables(client: bigquery.Client) -> None:
    settings = json.loads((INFRA / "terraform" / "schemas" / "tables.json").read_text())
    client.create_dataset(f"{PROJECT}.{DATASET}")
    for name, s in settings.items():
        fields = json.loads((INFRA / "terraform" / "schemas" / f"{name}.json").read_text())
        table = bigquery.Table(f"{PROJECT}.{DATASET}.{name}",
                               schema=[bigquery.SchemaField.from_api_repr(f) for f in fields])
        table.time_partitioning = bigquery.TimePartitioning(type_=s["partition_type"],
                                                            field=s["partition_field"])
        table.clustering_fields = s["cluster_fields"]
        client.create_table(table)


def _insert(client: bigquery.Client, name: str, rows: list[dict]) -> None:
    errors = client.insert_rows_json(f"{PROJECT}.{DATASET}.{name}", rows)
    assert errors == [], errors


@pytest.fixture(scope="module")
def bq():
    emu = bq_emulator.start_bqemulator(PROJECT)
    try:
        client = emu.client()
        _create_tables(client)
        for name, rows in (("route_rates", ROUTE_RATES), ("costs", COSTS),
                           ("answers", ANSWERS), ("claims", CLAIMS)):
            _insert(client, name, rows)
        for view in sorted(p.stem for p in (INFRA / "sql").glob("*.sql")):
            table = bigquery.Table(f"{PROJECT}.{DATASET}.{view}")
            table.view_query = render(view)
            client.create_table(table)
        yield emu
    finally:
        emu.stop()


def _view(bq, name: str, order: str) -> list[dict]:
    return bq.query(f"SELECT * FROM `{PROJECT}.{DATASET}.{name}` ORDER BY {order}")


def test_route_rates_latest_keeps_the_latest_pane_of_each_window(bq):
    rows = _view(bq, "route_rates_latest", "route, window_start")
    got = [(r["route"], r["window_start"], r["pane_index"], r["pane"], r["traces"],
            r["hallucinated"]) for r in rows]
    assert got == [("a", W1, 2, "LATE", 12, 6), ("a", W2, 0, "ON_TIME", 5, 0),
                   ("b", W1, 1, "ON_TIME", 4, 2)]
    assert {"rate", "rate_low", "rate_high", "con", "nic", "incomplete"} <= set(rows[0])


def test_cost_daily_sums_the_latest_pane_of_each_window_per_route_and_day(bq):
    rows = _view(bq, "cost_daily", "day, route")
    got = [(r["day"], r["route"], r["judge_models"], r["calls"], round(r["cost_usd"], 9))
           for r in rows]
    day1, day2 = W1.date().isoformat(), (W1 + timedelta(days=1)).date().isoformat()
    assert got == [(day1, "a", 2, 25 + 10 + 5, 4.0), (day1, "b", 1, 2, 0.25),
                   (day2, "a", 1, 40, 4.0)]


def _worst_today(bq) -> tuple[datetime, list[dict]]:
    """(the start of the query's UTC day, the view's rows): one query, so one clock reading.

    The LEFT JOIN keeps one row (with null view columns) when the view is empty.
    """
    rows = bq.query(
        "SELECT TIMESTAMP_TRUNC(CURRENT_TIMESTAMP(), DAY) AS query_day, w.* "
        f"FROM (SELECT 1 AS one) AS q LEFT JOIN `{PROJECT}.{DATASET}.worst_traces_today` AS w "
        "ON TRUE ORDER BY w.severity_rank")
    return rows[0]["query_day"], [r for r in rows if r["trace_id"] is not None]


# Today's hallucinated answers (latest verdicts), worst first: CON, then most unsupported claims.
WORST_ORDER = ["t-con-1", "t-con-2", "t-nic-2", "t-nic-1"]


def test_worst_traces_today_puts_con_first_then_most_unsupported_then_cost(bq):
    query_day, rows = _worst_today(bq)
    assert query_day in (TODAY, TODAY + timedelta(days=1))  # the emulator's clock is ours
    event_time = {a["trace_id"]: datetime.fromisoformat(a["event_time"]) for a in ANSWERS}
    # Past midnight, the answers inserted "today" are yesterday's: the view must drop them.
    expected = [t for t in WORST_ORDER if event_time[t] >= query_day]
    assert [r["trace_id"] for r in rows] == expected
    assert [r["severity_rank"] for r in rows] == list(range(1, len(expected) + 1))
    by_id = {r["trace_id"]: r for r in rows}
    assert {t: by_id[t]["unsupported_claims"] for t in expected} == {
        t: n for t, n in zip(WORST_ORDER, [2, 1, 3, 3], strict=True) if t in expected}
    if "t-con-1" in by_id:  # absent only when the query ran after midnight
        worst = by_id["t-con-1"]
        assert (worst["label"], worst["unsupported_claims"],
                worst["hallucinated_span_count"]) == ("CON", 2, 2)
        assert [(c["claim_index"], c["label"], c["claim"]) for c in worst["claims"]] == [
            (0, "CON", "t-con-1 claim 0"), (2, "NIC", "t-con-1 claim 2")]


def test_daily_rate_exact_counts_every_answer_once_late_ones_included(bq):
    rows = _view(bq, "daily_rate_exact", "day")
    assert [(r["day"], r["route"]) for r in rows] == [(DAY1.date(), "a"), (TODAY.date(), "a")]
    today = rows[1]
    got = {k: today[k] for k in ("traces", "hallucinated", "con", "nic", "incomplete", "late")}
    # ok answers: t-con-1, t-con-2 (once), t-nic-1, t-nic-2, t-ent, t-late.
    assert got == {"traces": 6, "hallucinated": 4, "con": 2, "nic": 2, "incomplete": 1,
                   "late": 1}
    low, high = wilson(4, 6)
    assert today["rate"] == pytest.approx(4 / 6)
    assert today["rate_low"] == pytest.approx(low, abs=1e-5)
    assert today["rate_high"] == pytest.approx(high, abs=1e-5)
    old = rows[0]
    assert (old["traces"], old["hallucinated"]) == (1, 1)
    assert old["rate_high"] == pytest.approx(1.0)
    assert today["cost_usd"] == pytest.approx(0.10 + 0.05 + 0.01 + 0.20 + 0.30 + 0.01 + 0.02)
