"""The Flex Template: metadata parameters map onto real `rt4chart stream` options; the
launcher, the key loader and the worker entrypoint behave; the image installs the package."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.cli import parsers as cli_args

ROOT = Path(__file__).resolve().parents[2]
FLEX = ROOT / "infra" / "flex_template"
METADATA = json.loads((FLEX / "metadata.json").read_text())
PARAMS = {p["name"]: p for p in METADATA["parameters"]}

# The `rt4chart stream` options the deployment relies on (the task's command line).
STREAM_OPTIONS = {
    "subscription": "--subscription", "bigquery": "--bigquery",
    "dead_letter_topic": "--dead-letter-topic", "alerts_topic": "--alerts-topic",
    "window": "--window", "early_firing": "--early-firing",
    "allowed_lateness": "--allowed-lateness", "alert_rate": "--alert-rate",
    "alert_relative": "--alert-relative", "alert_min_traces": "--alert-min-traces",
    "judge": "--judge", "model": "--model", "base_url": "--base-url",
}
# Stream options a template need not expose: local output and log verbosity; the Phoenix
# write-back, which runs in the launcher (a Dataflow job outlives it: `annotate phoenix bq:P:D`).
NOT_TEMPLATED = {"out", "verbose", "help", "annotate", "phoenix_endpoint", "phoenix_project",
                 "annotation_name", "annotate_interval", "langfuse_host", "langfuse_claim_scores",
                 # `stream --estimate SAMPLE_FILE` counts a local sample and exits: not a job's
                 "estimate", "estimate_json", "estimate_reasoning_fill", "traces_per_hour",
                 # the launcher's progress lines (a Dataflow job shows its own)
                 "progress_every"}


def _stream_parser() -> argparse.ArgumentParser:
    root = cli.parser()
    [sub] = [a for a in root._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices["stream"]


def test_metadata_parameters_are_well_formed():
    assert METADATA["name"] and METADATA["description"]
    assert METADATA["streaming"] is True
    names = [p["name"] for p in METADATA["parameters"]]
    assert len(names) == len(set(names))
    for p in METADATA["parameters"]:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", p["name"]), p["name"]  # no dashes
        assert p["label"] and p["helpText"], p["name"]
        for regex in p.get("regexes", []):
            re.compile(regex)
    required = {n for n, p in PARAMS.items() if not p.get("isOptional", False)}
    assert required == {"subscription", "bigquery", "dead_letter_topic", "alerts_topic"}


def test_the_stream_command_line_of_the_task_is_covered(launcher):
    assert set(STREAM_OPTIONS) <= set(PARAMS)
    for name, option in STREAM_OPTIONS.items():
        assert launcher.stream_argv([f"--{name}=v"], list(PARAMS)) == ["stream", option, "v"]


def test_regexes_accept_the_examples_and_reject_mistakes():
    def ok(name, value):
        return all(re.fullmatch(r, value) for r in PARAMS[name].get("regexes", []))

    assert ok("subscription", "projects/p/subscriptions/s")
    assert not ok("subscription", "projects/p/topics/t")
    assert ok("dead_letter_topic", "projects/p/topics/t")
    assert ok("bigquery", "my-project:rt4chart")
    assert not ok("bigquery", "my-project.rt4chart")
    assert ok("window", "300") and not ok("window", "5m")
    assert ok("alert_rate", "0.5")


def test_every_parameter_is_a_real_stream_option_and_every_option_a_parameter(launcher):
    stream = _stream_parser()
    options = stream._option_string_actions
    for name in PARAMS:
        flags = [t for t in launcher.stream_argv([f"--{name}=a=1"], list(PARAMS))[1:]
                 if t.startswith("--")]
        for flag in flags:
            assert flag in options, f"template parameter {name} -> {flag}: no such option"
    covered = {options[launcher.LIST_PARAMS.get(n, launcher.flag(n))].dest for n in PARAMS}
    dests = {a.dest for a in stream._actions if a.option_strings}
    assert dests - covered - NOT_TEMPLATED == set(), "stream options missing from metadata"


def test_no_parameter_is_taken_for_a_beam_option():
    for name in PARAMS:
        ours, beam = cli_args.split_beam_args([f"--{name}=v", "input.jsonl"])
        assert (ours, beam) == ([f"--{name}=v", "input.jsonl"], []), name


def _sample(action: argparse.Action) -> tuple[str, object]:
    """A template value for an option, and what rt4chart should parse it to."""
    if action.type in (int, float):
        return "7", action.type("7")
    if action.nargs == 0:  # a flag: the template parameter's "true" switches it on
        return "true", True
    if action.dest == "judge_option":
        return "timeout_s=30; price_input=0.15", ["timeout_s=30", "price_input=0.15"]
    if action.dest == "max_usd_per_hour":  # a list too: ROUTE=USD items
        return "5; checkout=1", ["5", "checkout=1"]
    if action.choices:  # one of its values
        return action.choices[-1], action.choices[-1]
    if isinstance(action, argparse._AppendAction):  # a list parameter: ;-separated items
        return f"a-{action.dest}=1; b-{action.dest}=2", [f"a-{action.dest}=1",
                                                         f"b-{action.dest}=2"]
    return f"value-of-{action.dest}", f"value-of-{action.dest}"


def test_launcher_arguments_parse_as_rt4chart_stream_with_beam_options_apart(launcher):
    stream = _stream_parser()
    options = stream._option_string_actions
    argv, expected = [], {}
    for name in PARAMS:
        action = options[launcher.LIST_PARAMS.get(name, launcher.flag(name))]
        text, value = _sample(action)
        argv.append(f"--{name}={text}")
        expected[action.dest] = value
    beam = ["--runner=DataflowRunner", "--project=p", "--region=europe-west1",
            "--temp_location=gs://b/tmp", "--sdk_container_image=europe-docker.pkg.dev/p/r/i:1",
            "--job_name=rt4chart-stream",
            # The launcher asks for a job file, which Dataflow submits: rt4chart must pass it on.
            "--template_location=gs://b/template-launches/job_object"]
    args = launcher.stream_argv(beam[:2] + argv + beam[2:], list(PARAMS))
    ours, beam_args = cli_args.split_beam_args(args)
    parsed, unknown = cli.parser().parse_known_args(ours)
    assert unknown == []
    assert parsed.command == "stream"
    assert {dest: getattr(parsed, dest) for dest in expected} == expected
    assert beam_args == beam


def test_launcher_skips_empty_values_and_accepts_separate_values(launcher):
    params = ["window", "model", "judge_options"]
    argv = ["--window=", "--model", "gpt-4o-mini", "--judge_options=", "--streaming"]
    assert launcher.stream_argv(argv, params) == ["stream", "--model", "gpt-4o-mini",
                                                  "--streaming"]
    with pytest.raises(ValueError, match="window"):
        launcher.stream_argv(["--window"], params)


def test_launcher_main_loads_the_key_then_runs_rt4chart_stream(launcher, openai_key,
                                                                 monkeypatch):
    calls = []
    monkeypatch.setattr(openai_key, "export_api_key", lambda: calls.append("key"))
    monkeypatch.setattr(cli, "main", lambda argv: calls.append(argv) or 0)
    code = launcher.main(["--subscription=projects/p/subscriptions/s", "--project=p"])
    assert code == 0
    assert calls == ["key", ["stream", "--subscription", "projects/p/subscriptions/s",
                             "--project=p"]]


def test_secret_version_names(openai_key):
    name = openai_key.version_name
    assert name("rt4chart-openai-api-key", "p") == (
        "projects/p/secrets/rt4chart-openai-api-key/versions/latest")
    assert name("projects/q/secrets/k", None) == "projects/q/secrets/k/versions/latest"
    assert name("projects/q/secrets/k/versions/3", None) == "projects/q/secrets/k/versions/3"
    with pytest.raises(ValueError, match="project"):
        name("k", None)
    with pytest.raises(ValueError):
        name("gs://bucket/key.txt", "p")


def test_export_api_key_reads_the_secret_into_the_environment(openai_key):
    read = []

    def access(version):
        read.append(version)
        return "sk-test-value\n".strip()

    env = {"RT4CHART_OPENAI_SECRET": "k"}
    assert openai_key.export_api_key(env, access, lambda: "p") is True
    assert env["OPENAI_API_KEY"] == "sk-test-value"
    assert read == ["projects/p/secrets/k/versions/latest"]

    env = {"RT4CHART_OPENAI_SECRET": "k", "OPENAI_API_KEY": "already"}
    assert openai_key.export_api_key(env, access, lambda: "p") is False
    assert env["OPENAI_API_KEY"] == "already" and len(read) == 1
    assert openai_key.export_api_key({"RT4CHART_OPENAI_SECRET": " "}, access) is False
    with pytest.raises(ValueError, match="empty"):
        openai_key.export_api_key({"RT4CHART_OPENAI_SECRET": "k"}, lambda _: "", lambda: "p")


def test_worker_boot_execs_beam_boot_with_the_key_or_exits(worker_boot, monkeypatch):
    boot = worker_boot
    execs = []
    monkeypatch.setattr(boot.os, "execv", lambda path, args: execs.append((path, args)))
    monkeypatch.setattr(boot.sys, "argv", ["worker_boot.py", "--id=1", "--logging_endpoint=x"])
    monkeypatch.setattr(boot, "export_api_key", lambda: True)
    boot.main()
    assert execs == [("/opt/apache/beam/boot",
                      ["/opt/apache/beam/boot", "--id=1", "--logging_endpoint=x"])]

    def fail():
        raise PermissionError("denied")

    monkeypatch.setattr(boot, "export_api_key", fail)
    with pytest.raises(SystemExit) as stop:
        boot.main()
    assert stop.value.code == 1 and len(execs) == 1


def test_dockerfile_installs_every_package_folder_and_runs_the_launcher():
    text = (FLEX / "Dockerfile").read_text()
    assert re.search(r"^FROM gcr\.io/dataflow-templates-base/python311-template-launcher-base",
                     text, re.M)
    assert "COPY --from=launcher /opt/google/dataflow/python_template_launcher" in text
    assert "FLEX_TEMPLATE_PYTHON_PY_FILE=/template/main.py" in text
    assert 'ENTRYPOINT ["python", "/template/worker_boot.py"]' in text
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    folders = set(pyproject["tool"]["setuptools"]["package-dir"].values())
    copied = set(re.findall(r"^COPY (\S+) /template/src/\S+$", text, re.M))
    top = {f.split("/")[0] for f in folders}
    assert top <= copied, f"not copied into the image: {top - copied}"
    for source in re.findall(r"^COPY (?!--from)([^\n\\]+?)(?: \\\n\s+([^\n]+))? /\S+$", text,
                             re.M):
        for path in " ".join(source).split():
            assert (ROOT / path).exists(), path
    beam_version = re.search(r"^ARG BEAM_VERSION=(\S+)$", text, re.M).group(1)
    from packaging.requirements import Requirement

    beam = next(Requirement(r) for r in pyproject["project"]["dependencies"]
                if r.startswith("apache-beam"))
    assert beam.specifier.contains(beam_version)


@pytest.mark.parametrize("script", ["flex_template/build.sh", "flex_template/run.sh",
                                    "dataflow_backfill.sh"])
def test_scripts_are_valid_bash(script):
    result = subprocess.run(["bash", "-n", str(ROOT / "infra" / script)], capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 0, result.stderr


def test_run_script_passes_every_required_parameter():
    text = (FLEX / "run.sh").read_text()
    for name, p in PARAMS.items():
        if not p.get("isOptional", False):
            assert f'"{name}=' in text, name
