"""What the base install leaves out: Google Cloud's clients (Pub/Sub, BigQuery, Cloud Storage,
Dataflow), which come with `pip install 'rt4chart[gcp]'`. A command that needs one says so,
naming the extra, before anything runs (a usage error, exit 2)."""

from __future__ import annotations

import importlib.util

INSTALL = "pip install 'rt4chart[gcp]'"
# What each feature imports, and what the user asked for that needs it.
MODULES = {
    "pubsub": ("google.cloud.pubsub_v1", "Pub/Sub"),
    "bigquery": ("google.cloud.bigquery", "BigQuery"),
    "gcs": ("google.cloud.storage", "Cloud Storage (gs:// paths)"),
    "dataflow": ("apache_beam.runners.dataflow.internal.apiclient", "the DataflowRunner"),
}


def installed(feature: str) -> bool:
    """Whether the clients `feature` needs can be imported (without importing them)."""
    module = MODULES[feature][0]
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a broken one
        return False


def require(feature: str, why: str) -> None:
    """ValueError (a usage error) naming the extra to install when `feature` is missing."""
    if not installed(feature):
        raise ValueError(f"{why} needs {MODULES[feature][1]}, which the base install leaves "
                         f"out: {INSTALL}")


def require_for_paths(paths: list[str], why: str) -> None:
    """`require("gcs")` when any of `paths` is on Cloud Storage, `bigquery` for bq: runs."""
    if any(str(p).startswith("gs://") for p in paths):
        require("gcs", why)
    if any(str(p).startswith("bq:") for p in paths):
        require("bigquery", why)
