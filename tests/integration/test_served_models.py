"""A judge endpoint that is not OpenAI's, with no model named: the launcher asks the server's
model list once (served_models.py), through the real openai client, against the local fake.

One model: used, shipped to the workers, its cost unknown (never the packaged table's price for
a name that matches a hosted model's). Several, none, or no list: refused before anything runs
(exit 2), naming the models or telling to pass --model. A named model the server does not
serve: the probe's 404 names the models the server lists.
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from rt4chart.transforms.judges.openai.served_models import serves

import fake_judges as fj
from fake_openai_server import FakeOpenAI
from testutil import write_jsonl

WINDOWS = ("--window-size", "2", "--window-overlap", "1")


def _run(audit, tmp_path, server, *extra: str, name: str = "out"):
    traces = write_jsonl(tmp_path / "t.jsonl", [fj.RUNNING_TRACE])
    return audit(str(traces), "--judge", "openai", "--base-url", server.base_url, *WINDOWS,
                 *extra, out=tmp_path / name)


def test_one_listed_model_is_used_and_its_cost_is_unknown(tmp_path, audit):
    # The server's one model is named like a hosted model with a price in the table: the run
    # must not bill a local server at that price.
    with FakeOpenAI(fj.running_example_responder, models=("gpt-4o-mini",),
                    only_listed=True) as server:
        code, tables, out = _run(audit, tmp_path, server)
    assert code == 0
    assert server.model_listings == 1  # asked once, by the launcher
    assert server.requests and {b["model"] for b in server.requests} == {"gpt-4o-mini"}
    (answer,) = tables["answers"]
    assert answer["cost_usd"] is None and answer["input_tokens"] > 0
    assert all(r["cost_usd"] is None for r in tables["costs"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cost_usd"] is None
    assert [w for w in summary["warnings"] if "no price for model 'gpt-4o-mini'" in w]


def test_a_listed_model_priced_by_options_has_a_cost(tmp_path, audit):
    with FakeOpenAI(fj.running_example_responder, models=("qwen-local",),
                    only_listed=True) as server:
        code, tables, _ = _run(audit, tmp_path, server, "--judge-option", "price_input=1",
                               "--judge-option", "price_output=2")
    assert code == 0 and {b["model"] for b in server.requests} == {"qwen-local"}
    (answer,) = tables["answers"]
    expected = (answer["input_tokens"] * 1 + answer["output_tokens"] * 2) / 1e6
    assert answer["cost_usd"] is not None and abs(answer["cost_usd"] - expected) < 1e-9


def test_several_models_are_refused_with_the_list(tmp_path, audit, capsys):
    with FakeOpenAI(models=("qwen-7b", "llama-8b")) as server:
        code, _, out = _run(audit, tmp_path, server)
    err = capsys.readouterr().err
    assert code == 2 and not server.requests and not (out / "answers").exists()
    assert "'qwen-7b'" in err and "'llama-8b'" in err and "--model" in err


def test_no_model_listed_or_no_list_is_refused_telling_to_name_one(tmp_path, audit, capsys):
    for models, why in (((), "lists no model"), (None, "does not list the models")):
        with FakeOpenAI(models=models) as server:
            code, _, _ = _run(audit, tmp_path, server, name=f"out{why[:4]}")
        err = capsys.readouterr().err
        assert code == 2 and not server.requests, why
        assert why in err and "--model" in err


def test_a_named_model_is_not_replaced_by_the_listed_one(tmp_path, audit):
    with FakeOpenAI(fj.running_example_responder, models=("a", "b")) as server:
        code, tables, _ = _run(audit, tmp_path, server, "--model", "b")
    assert code == 0 and server.model_listings == 1
    assert {b["model"] for b in server.requests} == {"b"}
    assert tables["answers"][0]["judge_model"] == "b"


def test_a_named_model_the_server_does_not_serve_is_refused_with_its_list(tmp_path, audit,
                                                                         capsys):
    with FakeOpenAI(models=("qwen-local", "phi-mini"), only_listed=True) as server:
        code, _, _ = _run(audit, tmp_path, server, "--model", "gpt-4o")
    err = capsys.readouterr().err
    assert code != 0 and not server.requests
    assert "404" in err and "'qwen-local'" in err and "'phi-mini'" in err


@given(st.text(min_size=1, max_size=20), st.lists(st.text(min_size=1, max_size=20), max_size=5))
def test_a_model_is_served_when_listed_or_listed_with_ollamas_default_tag(name, others):
    assert serves((*others, name), name)
    assert serves((*others, f"{name}:latest"), name)
    listed = tuple(o for o in others if o not in (name, f"{name}:latest"))
    assert not serves(listed, name)
