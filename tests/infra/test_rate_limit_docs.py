"""`--rpm`/`--tpm` mean the whole job's limits everywhere: the READMEs and docs, the Flex Template's
metadata and the scripts say so and give the same totals; the rate-limit service's config
names the budgets rt4chart asks for."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import hcl2
import yaml

from rt4chart.transforms.judges.openai.judge import OpenAIConfig
from rt4chart.transforms.judges.openai.limits.envoy import BUDGET_KEY, BUDGETS, DEFAULT_DOMAIN

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), INFRA / "README.md",
        INFRA / "flex_template" / "metadata.json", INFRA / "flex_template" / "run.sh",
        INFRA / "dataflow_backfill.sh"]
# What the docs used to say: limits per process, to be divided by the workers by hand.
PER_PROCESS = [
    re.compile(r"(limits?|rpm|tpm)\W[^.]*\bappl(y|ies) per (worker )?process", re.I | re.S),
    re.compile(r"provider'?s limits? divided by", re.I),
    re.compile(r"divide (it |them )?by the (number of )?(workers|processes)", re.I),
    re.compile(r"rate_share=N with N", re.I),
]
RPM = re.compile(r"(?:--rpm[ =]|\brpm=)(\d+)")
TPM = re.compile(r"(?:--tpm[ =]|\btpm=)(\d+)")


def _text(path: Path) -> str:
    return path.read_text()


def test_no_doc_says_the_limits_are_per_process():
    for path in DOCS:
        text = _text(path)
        for pattern in PER_PROCESS:
            match = pattern.search(text)
            assert match is None, f"{path.relative_to(ROOT)}: {match.group(0)!r}"


def test_every_example_passes_the_same_job_totals():
    rpms = {int(v) for p in DOCS for v in RPM.findall(_text(p))}
    tpms = {int(v) for p in DOCS for v in TPM.findall(_text(p))}
    assert rpms == {500} and tpms == {200_000}, (rpms, tpms)
    for path in (ROOT / "docs" / "judges.md", INFRA / "README.md"):
        text = _text(path)
        assert "for the whole job" in text
        # The Dataflow examples bound the job (the static share needs it), with no share given.
        for block in re.findall(r"```bash\n(.*?)```", text, re.S):
            if "DataflowRunner" in block or "dataflow_backfill.sh" in block:
                assert "rate_share" not in block
                if "--rpm" in block:
                    assert "--max_num_workers" in block, block


def test_template_parameters_say_whole_job():
    params = {p["name"]: p for p in json.loads(_text(INFRA / "flex_template" / "metadata.json"))
              ["parameters"]}
    for name in ("rpm", "tpm"):
        assert "whole job" in params[name]["label"] and "whole job" in params[name]["helpText"]
    assert all(re.fullmatch(params["rate_limiter"]["regexes"][0], v) for v in ("static", "envoy"))
    assert not re.fullmatch(params["rate_limiter"]["regexes"][0], "per-process")


def _render(template: str, values: dict[str, object]) -> str:
    def value(match: re.Match) -> str:
        return str(values[match.group(1)])

    return re.sub(r"\$\{(\w+)\}", value, template)


def _variables() -> dict:
    with (INFRA / "terraform" / "variables.tf").open() as fh:
        blocks = hcl2.load(fh)["variable"]
    out = {}
    for block in blocks:
        for name, body in block.items():
            out[name.strip('"')] = body.get("default")
    return out


def test_the_rate_limit_service_config_names_the_budgets_rt4chart_asks_for():
    variables = _variables()
    assert variables["ratelimit_enabled"] is False  # opt-in
    assert variables["ratelimit_domain"].strip('"') == DEFAULT_DOMAIN
    defaults = OpenAIConfig()
    assert (variables["ratelimit_rpm"], variables["ratelimit_tpm"]) == (defaults.rpm,
                                                                         defaults.tpm)
    config_text = _render(_text(INFRA / "ratelimit" / "config.yaml.tftpl"),
                          {"domain": DEFAULT_DOMAIN, "rpm": 500, "tpm": 200000})
    config = yaml.safe_load(config_text)
    assert config["domain"] == DEFAULT_DOMAIN
    rules = {(d["key"], d["value"]): d["rate_limit"] for d in config["descriptors"]}
    assert set(rules) == {(BUDGET_KEY, b) for b in BUDGETS}
    assert rules[(BUDGET_KEY, "requests")] == {"unit": "minute", "requests_per_unit": 500}
    assert rules[(BUDGET_KEY, "tokens")] == {"unit": "minute", "requests_per_unit": 200000}
    init = yaml.safe_load(_render(_text(INFRA / "ratelimit" / "cloud-init.yaml.tftpl"), {
        "config_b64": base64.b64encode(config_text.encode()).decode(),
        "ratelimit_image": "envoyproxy/ratelimit:x", "redis_image": "redis:7"}))
    files = {f["path"]: f for f in init["write_files"]}
    written = base64.b64decode(files["/var/lib/ratelimit/config/config.yaml"]["content"])
    assert yaml.safe_load(written) == config
    unit = files["/etc/systemd/system/ratelimit.service"]["content"]
    # The service reads /data/ratelimit/config/*.yaml and serves gRPC on the port the
    # firewall opens.
    assert "-v /var/lib/ratelimit:/data/ratelimit:ro" in unit and "RUNTIME_ROOT=/data" in unit
    assert "GRPC_PORT=8081" in unit and "-p 8081:8081" in unit
    firewall = _text(INFRA / "terraform" / "ratelimit.tf")
    assert re.search(r'ports\s*=\s*\["8081"\]', firewall)
    assert re.search(r'source_tags\s*=\s*\["dataflow"\]', firewall)
