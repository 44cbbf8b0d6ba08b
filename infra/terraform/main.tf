# The Google Cloud resources of rt4chart's streaming auditor: Pub/Sub in and out, the BigQuery
# dataset with its tables and dashboard views, a bucket for Dataflow, the image repository, the
# judge's API key secret (never its value) and the workers' service account.

data "google_project" "this" {
  project_id = var.project
}

locals {
  apis = [
    "artifactregistry.googleapis.com",
    "bigquery.googleapis.com",
    "cloudbuild.googleapis.com",
    "compute.googleapis.com",
    "dataflow.googleapis.com",
    "pubsub.googleapis.com",
    "secretmanager.googleapis.com",
    "storage.googleapis.com",
  ]
  # Pub/Sub's own service agent forwards undeliverable messages to the dead-letter topic.
  pubsub_service_agent = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
}

resource "google_project_service" "apis" {
  for_each           = toset(local.apis)
  service            = each.value
  disable_on_destroy = false
}

# --- Cloud Storage: Dataflow temp and staging files, Flex Template specs ---------------------

resource "google_storage_bucket" "dataflow" {
  name                        = "${var.project}-${var.name}"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = var.force_destroy

  lifecycle_rule {
    condition {
      age            = var.temp_retention_days
      matches_prefix = ["tmp/", "staging/"]
    }
    action {
      type = "Delete"
    }
  }

  depends_on = [google_project_service.apis]
}

# --- Artifact Registry: the Flex Template image (launcher and workers) -----------------------

resource "google_artifact_registry_repository" "images" {
  location      = var.region
  repository_id = var.name
  format        = "DOCKER"
  description   = "rt4chart Flex Template image (launcher and Dataflow workers)."

  depends_on = [google_project_service.apis]
}

# --- Secret Manager: the judge's API key. The value is added with gcloud, never here. --------

resource "google_secret_manager_secret" "openai_api_key" {
  secret_id = var.openai_secret_id

  replication {
    auto {}
  }

  depends_on = [google_project_service.apis]
}
