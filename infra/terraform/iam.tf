# The Dataflow workers' (and the Flex Template launcher's) service account, with only what the
# auditor needs, each role bound on the one resource that needs it where IAM allows.

resource "google_service_account" "worker" {
  account_id   = "${var.name}-worker"
  display_name = "rt4chart Dataflow workers"

  depends_on = [google_project_service.apis]
}

locals {
  worker = "serviceAccount:${google_service_account.worker.email}"
}

# Run Dataflow work items (project-level by design of Dataflow).
resource "google_project_iam_member" "worker_dataflow" {
  project = var.project
  role    = "roles/dataflow.worker"
  member  = local.worker
}

# BigQuery load and query jobs (the batch backfill writes with load jobs); jobs are a project
# resource, the data they touch is limited by the dataset binding below.
resource "google_project_iam_member" "worker_bigquery_jobs" {
  project = var.project
  role    = "roles/bigquery.jobUser"
  member  = local.worker
}

resource "google_bigquery_dataset_iam_member" "worker_data_editor" {
  dataset_id = google_bigquery_dataset.rt4chart.dataset_id
  role       = "roles/bigquery.dataEditor"
  member     = local.worker
}

# Pull traces; the viewer role lets Dataflow read the subscription's settings.
resource "google_pubsub_subscription_iam_member" "worker_subscriber" {
  subscription = google_pubsub_subscription.auditor.name
  role         = "roles/pubsub.subscriber"
  member       = local.worker
}

resource "google_pubsub_subscription_iam_member" "worker_subscription_viewer" {
  subscription = google_pubsub_subscription.auditor.name
  role         = "roles/pubsub.viewer"
  member       = local.worker
}

resource "google_pubsub_topic_iam_member" "worker_dead_letter_publisher" {
  topic  = google_pubsub_topic.dead_letters.name
  role   = "roles/pubsub.publisher"
  member = local.worker
}

resource "google_pubsub_topic_iam_member" "worker_alerts_publisher" {
  topic  = google_pubsub_topic.alerts.name
  role   = "roles/pubsub.publisher"
  member = local.worker
}

# Temp and staging files, and the Flex Template spec the launcher reads.
resource "google_storage_bucket_iam_member" "worker_bucket" {
  bucket = google_storage_bucket.dataflow.name
  role   = "roles/storage.objectAdmin"
  member = local.worker
}

# Trace files read by batch backfills, in buckets outside this configuration.
resource "google_storage_bucket_iam_member" "worker_trace_buckets" {
  for_each = toset(var.trace_buckets)
  bucket   = each.value
  role     = "roles/storage.objectViewer"
  member   = local.worker
}

resource "google_secret_manager_secret_iam_member" "worker_openai_key" {
  secret_id = google_secret_manager_secret.openai_api_key.id
  role      = "roles/secretmanager.secretAccessor"
  member    = local.worker
}

resource "google_artifact_registry_repository_iam_member" "worker_image_reader" {
  location   = google_artifact_registry_repository.images.location
  repository = google_artifact_registry_repository.images.name
  role       = "roles/artifactregistry.reader"
  member     = local.worker
}

# Dead-lettering: Pub/Sub's service agent must publish to the dead-letter topic and
# acknowledge the forwarded messages on the source subscription.
resource "google_pubsub_topic_iam_member" "pubsub_agent_dead_letter_publisher" {
  topic  = google_pubsub_topic.dead_letters.name
  role   = "roles/pubsub.publisher"
  member = local.pubsub_service_agent
}

resource "google_pubsub_subscription_iam_member" "pubsub_agent_subscriber" {
  subscription = google_pubsub_subscription.auditor.name
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_service_agent
}
