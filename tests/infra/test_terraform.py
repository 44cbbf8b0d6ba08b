"""Terraform sanity without a terraform binary or a provider: the HCL parsed with python-hcl2.

What `terraform validate` would need the google provider for (attribute names, types) is not
checked here; references between blocks, the tables, the dead-letter policy, the IAM bindings
and the absence of secret values are.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import hcl2  # noqa: E402 - python-hcl2, a test dependency
import pytest

from rt4chart.schemas.tables import TABLES

INFRA = Path(__file__).resolve().parents[2] / "infra"
TF = INFRA / "terraform"
SQL = INFRA / "sql"
PUBSUB_AGENT = "${local.pubsub_service_agent}"
WORKER = "${local.worker}"


def _unquote(text: str) -> str:
    # python-hcl2 >= 5 keeps the quotes of string literals and block labels.
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def _clean(value):
    if isinstance(value, dict):
        return {_unquote(k): _clean(v) for k, v in value.items() if not k.startswith("__")}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return _unquote(value) if isinstance(value, str) else value


@pytest.fixture(scope="module")
def tf() -> dict:
    """Blocks of every .tf file: resources by (type, name), variables, locals, outputs."""
    config: dict = {"resource": {}, "data": {}, "variable": {}, "locals": {}, "output": {}}
    for path in sorted(TF.glob("*.tf")):
        with path.open() as fh:
            parsed = _clean(hcl2.load(fh))
        for kind in ("resource", "data"):
            for block in parsed.get(kind, []):
                for rtype, named in block.items():
                    for name, body in named.items():
                        assert (rtype, name) not in config[kind], f"{rtype}.{name} twice"
                        config[kind][(rtype, name)] = body
        for kind in ("variable", "output"):
            for block in parsed.get(kind, []):
                config[kind].update(block)
        for block in parsed.get("locals", []):
            config["locals"].update(block)
    return config


def _resources(tf: dict, rtype: str) -> dict[str, dict]:
    return {name: body for (t, name), body in tf["resource"].items() if t == rtype}


def _default(tf: dict, ref: str):
    name = re.fullmatch(r"\$\{var\.(\w+)\}", ref).group(1)
    return tf["variable"][name]["default"]


def test_every_table_in_tables_py_has_a_partitioned_clustered_resource(tf):
    tables = _resources(tf, "google_bigquery_table")["tables"]
    assert tables["for_each"] == "${local.tables}"
    assert "/schemas/tables.json" in tf["locals"]["tables"]
    assert "jsondecode" in tf["locals"]["tables"]
    settings = json.loads((TF / "schemas" / "tables.json").read_text())
    assert set(settings) == set(TABLES)
    assert tables["table_id"] == "${each.key}"
    assert tables["schema"] == '${file("${path.module}/schemas/${each.key}.json")}'
    for name in TABLES:
        assert (TF / "schemas" / f"{name}.json").is_file()
    [partitioning] = tables["time_partitioning"]
    assert partitioning["type"] == "${each.value.partition_type}"
    assert partitioning["field"] == "${each.value.partition_field}"
    assert "var.partition_expiration_days" in partitioning["expiration_ms"]
    assert _default(tf, "${var.partition_expiration_days}") is None
    assert tables["clustering"] == "${each.value.cluster_fields}"
    assert tables["description"] == "${each.value.description}"
    assert tables["dataset_id"] == "${google_bigquery_dataset.rt4chart.dataset_id}"


def test_every_sql_file_is_a_view_templated_on_project_and_dataset(tf):
    views = _resources(tf, "google_bigquery_table")["views"]
    assert views["for_each"] == "${local.views}"
    assert set(tf["locals"]["views"]) == {p.stem for p in SQL.glob("*.sql")}
    assert not set(tf["locals"]["views"]) & set(TABLES)
    [view] = views["view"]
    assert "templatefile(" in view["query"] and "/../sql/${each.key}.sql" in view["query"]
    assert view["use_legacy_sql"] is False
    for path in SQL.glob("*.sql"):
        text = path.read_text()
        # templatefile() would fail on any other interpolation or directive.
        assert set(re.findall(r"\$\{([^}]*)\}", text)) <= {"project", "dataset"}, path.name
        assert "%{" not in text, path.name
        assert "`${project}.${dataset}." in text, path.name


def test_auditor_subscription_has_dead_letter_and_retry_policies(tf):
    subs = _resources(tf, "google_pubsub_subscription")
    auditor = subs["auditor"]
    assert auditor["topic"] == "${google_pubsub_topic.traces.id}"
    [policy] = auditor["dead_letter_policy"]
    assert policy["dead_letter_topic"] == "${google_pubsub_topic.dead_letters.id}"
    assert 5 <= _default(tf, policy["max_delivery_attempts"]) <= 100
    [retry] = auditor["retry_policy"]
    assert retry["minimum_backoff"] and retry["maximum_backoff"]
    # LLM judging takes long: well above Pub/Sub's 10 s default, at most its 600 s maximum.
    assert 300 <= _default(tf, auditor["ack_deadline_seconds"]) <= 600
    [expiry] = auditor["expiration_policy"]
    assert expiry["ttl"] == ""


def test_dead_letters_and_alerts_are_kept_by_their_own_subscriptions(tf):
    topics = _resources(tf, "google_pubsub_topic")
    assert {"traces", "dead_letters", "alerts"} <= set(topics)
    by_topic = {body["topic"]: name
                for name, body in _resources(tf, "google_pubsub_subscription").items()}
    assert "${google_pubsub_topic.dead_letters.id}" in by_topic
    assert "${google_pubsub_topic.alerts.id}" in by_topic


def _bindings(tf: dict) -> set[tuple[str, str, str, str]]:
    """(resource type, target, role, member) of every IAM member resource."""
    target_keys = ("project", "topic", "subscription", "dataset_id", "bucket", "secret_id",
                   "repository")
    found = set()
    for (rtype, _), body in tf["resource"].items():
        if rtype.endswith("_iam_member"):
            target = next(body[k] for k in target_keys if k in body)
            found.add((rtype, target, body["role"], body["member"]))
    return found


def test_pubsub_service_agent_can_forward_dead_letters(tf):
    assert "@gcp-sa-pubsub.iam.gserviceaccount.com" in tf["locals"]["pubsub_service_agent"]
    bindings = _bindings(tf)
    assert ("google_pubsub_topic_iam_member", "${google_pubsub_topic.dead_letters.name}",
            "roles/pubsub.publisher", PUBSUB_AGENT) in bindings
    assert ("google_pubsub_subscription_iam_member",
            "${google_pubsub_subscription.auditor.name}",
            "roles/pubsub.subscriber", PUBSUB_AGENT) in bindings


def test_worker_has_the_roles_it_needs_on_the_resources_that_need_them(tf):
    assert tf["locals"]["worker"] == (
        "serviceAccount:${google_service_account.worker.email}")
    worker = {(t, target, role) for t, target, role, member in _bindings(tf) if member == WORKER}
    expected = {
        ("google_project_iam_member", "${var.project}", "roles/dataflow.worker"),
        ("google_pubsub_subscription_iam_member", "${google_pubsub_subscription.auditor.name}",
         "roles/pubsub.subscriber"),
        ("google_pubsub_topic_iam_member", "${google_pubsub_topic.dead_letters.name}",
         "roles/pubsub.publisher"),
        ("google_pubsub_topic_iam_member", "${google_pubsub_topic.alerts.name}",
         "roles/pubsub.publisher"),
        ("google_bigquery_dataset_iam_member", "${google_bigquery_dataset.rt4chart.dataset_id}",
         "roles/bigquery.dataEditor"),
        ("google_storage_bucket_iam_member", "${google_storage_bucket.dataflow.name}",
         "roles/storage.objectAdmin"),
        ("google_secret_manager_secret_iam_member",
         "${google_secret_manager_secret.openai_api_key.id}",
         "roles/secretmanager.secretAccessor"),
    }
    assert expected <= worker
    # Least privilege: no basic roles, no admin roles, project-wide only what has no
    # narrower resource (Dataflow work items, BigQuery jobs).
    roles = {role for _, _, role in worker}
    assert not roles & {"roles/owner", "roles/editor", "roles/viewer"}
    assert not any(role.endswith(".admin") for role in roles)
    project_wide = {role for t, _, role in worker if t == "google_project_iam_member"}
    assert project_wide == {"roles/dataflow.worker", "roles/bigquery.jobUser"}


def test_the_secret_exists_without_a_value(tf):
    secrets = _resources(tf, "google_secret_manager_secret")
    assert set(secrets) == {"openai_api_key"}
    assert secrets["openai_api_key"]["secret_id"] == "${var.openai_secret_id}"
    assert not _resources(tf, "google_secret_manager_secret_version")


SECRET_PATTERNS = [
    re.compile(r"sk-[A-Za-z0-9_-]{16,}"),  # OpenAI-style keys
    re.compile(r"AIza[0-9A-Za-z_-]{30,}"),  # Google API keys
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    re.compile(r"\bsecret_data\b"),  # a Terraform secret version's value
    re.compile(r"""OPENAI_API_KEY\s*[:=]\s*["']?(?!\$)[A-Za-z0-9_-]{8,}"""),
]


def _leaks(text: str) -> list[str]:
    return [p.pattern for p in SECRET_PATTERNS if p.search(text)]


def test_secret_detector_finds_planted_values():
    planted = "sk-" + "abcdefghijklmnop" + "qrstuvwx"  # built here, so no key-like literal
    assert _leaks(f'OPENAI_API_KEY="{planted}"')
    assert _leaks("OPENAI_API_KEY=abcd1234efgh")
    assert _leaks('resource "x" "y" {\n  secret_data = var.key\n}')
    assert not _leaks('OPENAI_API_KEY=${OPENAI_API_KEY:-$(gcloud secrets versions access)}')


def test_no_secret_values_in_infra_files():
    mine = [INFRA / "terraform", INFRA / "flex_template", INFRA / "sql"]
    files = [p for d in mine for p in d.rglob("*") if p.is_file()]
    files += [p for p in INFRA.glob("*") if p.is_file()]
    assert len(files) > 10
    leaks = {str(p.relative_to(INFRA)): _leaks(p.read_text(errors="replace")) for p in files}
    assert {name: found for name, found in leaks.items() if found} == {}


def test_references_resolve(tf):
    text = "\n".join(p.read_text() for p in TF.glob("*.tf"))
    variables = set(re.findall(r"\bvar\.(\w+)", text))
    assert variables <= set(tf["variable"]), variables - set(tf["variable"])
    locals_ = set(re.findall(r"\blocal\.(\w+)", text))
    assert locals_ <= set(tf["locals"]), locals_ - set(tf["locals"])
    declared = set(tf["resource"])
    refs = {(m[0], m[1]) for m in re.findall(r"(?<![.\w])(google_\w+)\.(\w+)", text)}
    assert refs <= declared, refs - declared
    data = {(m[0], m[1]) for m in re.findall(r"\bdata\.(google_\w+)\.(\w+)", text)}
    assert data <= set(tf["data"]), data - set(tf["data"])
    for name in ("subscription", "dead_letter_topic", "alerts_topic", "bigquery", "image",
                 "service_account", "template_path", "temp_location", "openai_secret"):
        assert name in tf["output"], name


def test_every_variable_is_described_and_typed(tf):
    for name, body in tf["variable"].items():
        assert body.get("description"), name
        assert body.get("type"), name


def test_terraform_fmt_is_clean():
    # The test machine has terraform: without it this check would pass unseen, so it fails.
    assert shutil.which("terraform"), "`terraform fmt` needs the terraform binary on PATH"
    # fmt needs no provider and no network; CHECKPOINT_DISABLE stops the version check call.
    env = {**os.environ, "CHECKPOINT_DISABLE": "1"}
    result = subprocess.run(["terraform", "fmt", "-check", "-recursive", "-diff"], cwd=TF,
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
