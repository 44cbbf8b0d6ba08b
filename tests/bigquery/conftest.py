"""BigQuery tests: one bqemulator for the session, a fresh dataset per test, sample rows."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from bq_emulator import start_bqemulator

PROJECT = "rt4chart-test"
UTC = dt.UTC
CEST = dt.timezone(dt.timedelta(hours=2))


@pytest.fixture(scope="session")
def emulator(tmp_path_factory):
    """A running bqemulator (offline wrapper), stopped at the end of the session."""
    emu = start_bqemulator(PROJECT, log_dir=str(tmp_path_factory.mktemp("bqemulator")))
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def dataset() -> str:
    """A dataset name of its own: Beam caches the tables it has seen per process."""
    return f"ds_{uuid.uuid4().hex[:12]}"


def _answers() -> list[dict]:
    common = {
        "route": "support-bot", "input_tokens": 1200, "cached_tokens": 200,
        "output_tokens": 300, "reused_calls": 0, "cost_usd": 0.000345,
        "judge_model": "gpt-4o-mini",
        "prompt_hash": "ab" * 32, "task": "QA", "generator": "llama-2-7b",
        "audited_at": dt.datetime(2024, 5, 1, 9, 31, 2, 654321, tzinfo=UTC), "late": False,
        "partial": False, "partial_reason": None, "suspicious_input": False,
        "suspicious_snippets": [], "p_threshold": 0.5, "sample_weight": 1.0,
        "empty_retrieval": False,
    }
    return [
        {**common, "trace_id": "t-1", "event_time": dt.datetime(2024, 5, 1, 9, 30, tzinfo=UTC),
         "label": "CON", "hallucinated": True, "p_hallucinated": 0.9825, "status": "ok",
         "n_claims": 2,
         "hallucinated_spans": [{"char_start": 0, "char_end": 29, "label": "CON"},
                                {"char_start": 30, "char_end": 61, "label": "NIC"}],
         "reason": None, "judge_calls": 7},
        {**common, "trace_id": "t-2", "label": "ENT", "hallucinated": False,
         "p_hallucinated": 0.0375, "status": "ok",
         "event_time": dt.datetime(2024, 5, 1, 23, 59, 59, 999999, tzinfo=CEST),
         "n_claims": 1, "hallucinated_spans": [], "reason": None, "judge_calls": 3,
         "task": None, "generator": None},
        {**common, "trace_id": "t-3", "label": None, "hallucinated": None, "p_hallucinated": None,
         "status": "incomplete", "event_time": dt.datetime(2024, 5, 2, 0, 0, 1, tzinfo=UTC),
         "n_claims": 3, "hallucinated_spans": [], "reason": "judge call failed: 429 x6",
         "judge_calls": 9, "late": True},
    ]


def _claims() -> list[dict]:
    common = {"trace_id": "t-1", "route": "support-bot", "judge_model": "gpt-4o-mini",
              "prompt_hash": "ab" * 32, "sentence_index": 0,
              "event_time": dt.datetime(2024, 5, 1, 9, 30, tzinfo=UTC),
              "sentence": "The free trial lasts 30 days, with “no” card.",
              "answer_start": 0, "answer_end": 45}
    return [
        {**common, "claim_index": 0, "claim": "The free trial lasts 30 days.",
         "window_labels": ["NIC", "CON"], "local_label": "CON", "deciding_window": 1,
         "label": "CON", "status": "ok", "note": None, "p_unsupported": 0.95,
         "evidence": [{"doc_id": "policy", "sentence_index": 3, "char_start": 120,
                       "char_end": 149, "text": "The free trial lasts 14 days."},
                      {"doc_id": "faq", "sentence_index": 0, "char_start": 0,
                       "char_end": 19, "text": "Trials: two weeks."}],
         "kind": "fact", "spans": [{"char_start": 0, "char_end": 28}], "p_threshold": 0.5},
        {**common, "claim_index": 1, "claim": "No card is needed.", "window_labels": ["ERR"],
         "local_label": None, "deciding_window": None, "label": None,
         "status": "judge_error", "note": "judge failed after 6 attempts", "evidence": [],
         "p_unsupported": None, "kind": "fact", "spans": [{"char_start": 0, "char_end": 45}],
         "p_threshold": None},
    ]


def _window(day: int) -> dict:
    start = dt.datetime(2024, 5, day, tzinfo=UTC)
    return {"window_start": start, "window_end": start + dt.timedelta(days=1),
            "day": start.date().isoformat(), "pane": "ON_TIME", "pane_index": 0,
            "emitted_at": dt.datetime(2024, 5, day + 1, 0, 5, tzinfo=UTC)}


def _route_rates() -> list[dict]:
    return [
        {"route": "support-bot", **_window(1), "traces": 40, "hallucinated": 6, "rate": 0.15,
         "rate_low": 0.0706, "rate_high": 0.2908, "con": 4, "nic": 2, "incomplete": 1,
         "late": 0, "input_tokens": 48000, "cached_tokens": 0, "output_tokens": 12000,
         "cost_usd": 0.0144, "sample_trace_ids": ["t-1", "t-9"], "suspicious": 1,
         "seen": 400, "sampled": 38, "always": 3, "audited": 41, "skipped_cap": 0,
         "dead_lettered": 1, "rate_weighted": 0.17, "rate_weighted_low": 0.07,
         "rate_weighted_high": 0.33},
        {"route": "search", **_window(2), "traces": 0, "hallucinated": 0, "rate": None,
         "rate_low": None, "rate_high": None, "con": 0, "nic": 0, "incomplete": 2, "late": 1,
         "input_tokens": 0, "cached_tokens": 0, "output_tokens": 0, "cost_usd": 0.0,
         "sample_trace_ids": [], "suspicious": 0, "seen": None, "sampled": None,
         "always": None, "audited": None, "skipped_cap": None, "dead_lettered": None,
         "rate_weighted": None, "rate_weighted_low": None, "rate_weighted_high": None},
    ]


def _costs() -> list[dict]:
    return [{"route": "support-bot", "judge_model": "gpt-4o-mini", **_window(1), "calls": 280,
             "reused_calls": 12,
             "input_tokens": 48000, "cached_tokens": 1024, "output_tokens": 12000,
             "cost_usd": 0.0144}]


def _dead_letters() -> list[dict]:
    return [{"stage": "validate", "reason": "contexts: required, non-empty", "trace_id": "t-x",
             "route": None, "raw": '{"trace_id": "t-x", "answer": "é \\n"}',
             "received_at": dt.datetime(2024, 5, 1, 9, 0, 0, 1, tzinfo=UTC),
             "dead_letter_id": "cd" * 32}]


def _judge_cache() -> list[dict]:
    return [{"key": "ef" * 32, "stage": "verify_local", "judge_model": "gpt-4o-mini",
             "prompt_hash": "ab" * 8, "result": '["CON", ["The free trial lasts 14 days."], null]',
             "created_at": dt.datetime(2024, 5, 1, 9, 31, tzinfo=UTC)}]


def _alerts() -> list[dict]:
    return [{"route": "support-bot", "window_start": dt.datetime(2024, 5, 1, tzinfo=UTC),
             "window_end": dt.datetime(2024, 5, 2, tzinfo=UTC), "rule": "absolute",
             "threshold": 0.1, "baseline": None, "rate": 0.15, "rate_low": 0.0706,
             "rate_high": 0.2908, "traces": 40, "hallucinated": 6,
             "sample_trace_ids": ["t-1"], "emitted_at": dt.datetime(2024, 5, 2, tzinfo=UTC)}]


def _traces() -> list[dict]:
    return [{"trace_id": "t-1", "route": "support-bot",
             "event_time": dt.datetime(2024, 5, 1, 9, 30, tzinfo=UTC),
             "question": "How long is the free trial?",
             "contexts": [{"doc_id": "policy", "text": "The free trial lasts 14 days."},
                          {"doc_id": "faq", "text": "Trials: two weeks.\nNo card."}],
             "answer": "The free trial lasts 30 days.", "task": "QA", "generator": None}]


def _skipped() -> list[dict]:
    return [{"trace_id": "t-9", "route": "support-bot", "reason": "max_usd",
             "detail": "max_usd: $4.9800 of $5.0000 spent or reserved; the trace needs $0.0400",
             "cap_route": "*", "cap_usd": 5.0, "spent_usd": 4.98, "reservation_usd": 0.04,
             "raw": '{"trace_id": "t-9", "answer": "Ok."}',
             "event_time": dt.datetime(2024, 5, 1, 9, 40, tzinfo=UTC),
             "skipped_at": dt.datetime(2024, 5, 1, 9, 41, 5, 123456, tzinfo=UTC)}]


@pytest.fixture
def sample_rows() -> dict[str, list[dict]]:
    """Rows of every table as the pipeline produces them (aware datetimes, nested lists)."""
    return {"answers": _answers(), "claims": _claims(), "route_rates": _route_rates(),
            "costs": _costs(), "dead_letters": _dead_letters(), "alerts": _alerts(),
            "judge_cache": _judge_cache(), "traces": _traces(), "skipped": _skipped()}
