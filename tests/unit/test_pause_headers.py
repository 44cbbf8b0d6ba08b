"""Pauses asked for by a provider, in every form it may ask, and the cap on them."""

from __future__ import annotations

import logging
import time

import pytest

from rt4chart.transforms.judges.openai.limits.rate import (
    PauseCap,
    RateLimiter,
    exhausted_for,
    http_date_in,
    parse_duration,
    retry_after_seconds,
)

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z


@pytest.mark.parametrize("value,seconds", [
    ("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1h2m3.5s", 3723.5), ("0.5", 0.5),
    ("250us", 0.00025), (" 3s ", 3.0),
    # A bare number past 10^9 is a Unix time: the seconds from now until then (0 when past).
    (str(int(NOW) + 42), 42.0), (str(int(NOW) - 10), 0.0),
    ("", None), ("soon", None), ("-5", None), ("5 s", None), ("1s soon", None), ("nan", None),
    ("inf", None),
])
def test_parse_duration_every_form(value, seconds):
    assert parse_duration(value, now=NOW) == pytest.approx(seconds) if seconds is not None \
        else parse_duration(value, now=NOW) is None


@pytest.mark.parametrize("headers,seconds", [
    ({"retry-after": "7"}, 7.0),
    ({"retry-after": "1.5"}, 1.5),  # fractional (not in RFC 9110, sent by some servers)
    ({"retry-after-ms": "20.5"}, 0.0205),
    ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
    ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),  # a bad -ms falls back
    ({"retry-after": "Fri, 15 Jan 2027 08:00:30 GMT"}, 30.0),  # IMF-fixdate
    ({"retry-after": "Friday, 15-Jan-27 08:01:00 GMT"}, 60.0),  # obsolete RFC 850
    ({"retry-after": "Fri Jan 15 08:00:05 2027"}, 5.0),  # asctime: no zone, GMT
    ({"retry-after": "Fri, 15 Jan 2027 07:00:00 GMT"}, 0.0),  # past: go now
    ({"retry-after": "1000000000"}, 1e9),  # as asked: the caller caps it
    ({"retry-after": "-3"}, None),
    ({"retry-after": "tomorrow-ish"}, None),
    ({"retry-after": ""}, None),
    ({}, None),
])
def test_retry_after_every_form(headers, seconds):
    got = retry_after_seconds(headers, now=NOW)
    assert got is None if seconds is None else got == pytest.approx(seconds)


def test_an_http_date_far_ahead_is_a_long_wait_not_an_error():
    assert http_date_in("Fri, 31 Dec 9999 23:59:59 GMT", now=NOW) > 1e11
    assert http_date_in("not a date") is None


def test_exhausted_budgets_in_every_form():
    assert exhausted_for({"x-ratelimit-remaining-requests": "0",
                          "x-ratelimit-reset-requests": "1h2m3.5s"}) == pytest.approx(74.47)
    # One budget without a kind, the reset as a Unix time (as GitHub's API sends it).
    reset = time.time() + 100
    assert exhausted_for({"x-ratelimit-remaining": "0",
                          "x-ratelimit-reset": f"{reset:.0f}"}) == pytest.approx(2.0, abs=0.05)
    assert exhausted_for({"x-ratelimit-remaining-tokens": "0",
                          "x-ratelimit-reset-tokens": "garbage"}) is None
    assert exhausted_for({"x-ratelimit-remaining-tokens": "12",
                          "x-ratelimit-reset-tokens": "9999999s"}) is None


def test_the_cap_cuts_every_absurd_ask_and_logs_once(caplog):
    cap = PauseCap(30.0)
    with caplog.at_level(logging.WARNING):
        assert cap(1e9, "retry-after") == 30.0
        assert cap(http_date_in("Fri, 31 Dec 9999 23:59:59 GMT"), "retry-after") == 30.0
        assert cap(12.0, "retry-after") == 12.0
        assert cap(None, "retry-after") is None
    logged = [r.getMessage() for r in caplog.records if "capped at" in r.getMessage()]
    assert logged == ["the provider asked for a 1e+09 s pause (retry-after): capped at 30 s "
                      "(backoff_max_s); further capped pauses are not logged"]
    assert cap.applied == 2


def test_a_pause_without_end_is_refused():
    limiter = RateLimiter(rpm=600, tpm=100_000)
    limiter.pause(float("inf"))
    limiter.pause(float("nan"))
    assert limiter.paused_for() == 0.0
