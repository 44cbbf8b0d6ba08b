"""A command that needs a Google Cloud client the base install leaves out says which extra to
install, before anything runs (exit 2)."""

from __future__ import annotations

import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.storage import gcp_extra


@pytest.fixture
def no_pubsub(monkeypatch):
    monkeypatch.setitem(gcp_extra.MODULES, "pubsub", ("rt4chart_no_such_pkg.pubsub", "Pub/Sub"))


@pytest.fixture
def no_bigquery(monkeypatch):
    monkeypatch.setitem(gcp_extra.MODULES, "bigquery", ("rt4chart_no_such.bq", "BigQuery"))


def test_installed_tells_present_from_missing(no_pubsub):
    assert gcp_extra.installed("bigquery")  # the test install has [gcp]
    assert not gcp_extra.installed("pubsub")
    with pytest.raises(ValueError, match=r"pip install 'rt4chart\[gcp\]'"):
        gcp_extra.require("pubsub", "rt4chart stream")


def test_paths_name_what_they_need(no_bigquery):
    gcp_extra.require_for_paths(["traces.jsonl", "out"], "x")  # local paths need nothing
    with pytest.raises(ValueError, match="BigQuery"):
        gcp_extra.require_for_paths(["bq:p:d"], "a bq: path")


def test_stream_without_pubsub_is_a_usage_error_naming_the_extra(no_pubsub, capsys, tmp_path):
    code = cli.main(["stream", "--subscription", "projects/p/subscriptions/s",
                     "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "rt4chart[gcp]" in err and "Pub/Sub" in err
    assert not (tmp_path / "out").exists()


def test_audit_to_bigquery_without_its_client_is_a_usage_error(no_bigquery, capsys, tmp_path):
    code = cli.main(["audit", "--example", "--out", str(tmp_path / "out"),
                     "--bigquery", "proj:dataset"])
    err = capsys.readouterr().err
    assert code == 2 and "rt4chart[gcp]" in err and "--bigquery" in err
    assert not (tmp_path / "out").exists()
