output "subscription" {
  description = "The auditor's subscription (rt4chart stream --subscription)."
  value       = google_pubsub_subscription.auditor.id
}

output "traces_topic" {
  description = "Topic the RAG services publish traces to."
  value       = google_pubsub_topic.traces.id
}

output "dead_letter_topic" {
  description = "Dead-letter topic (rt4chart stream --dead-letter-topic)."
  value       = google_pubsub_topic.dead_letters.id
}

output "dead_letter_subscription" {
  description = "Subscription that keeps the dead letters."
  value       = google_pubsub_subscription.dead_letters.id
}

output "alerts_topic" {
  description = "Alerts topic (rt4chart stream --alerts-topic)."
  value       = google_pubsub_topic.alerts.id
}

output "alerts_subscription" {
  description = "Subscription to read alerts from."
  value       = google_pubsub_subscription.alerts.id
}

output "bigquery" {
  description = "PROJECT:DATASET (rt4chart stream/audit --bigquery)."
  value       = "${var.project}:${google_bigquery_dataset.rt4chart.dataset_id}"
}

output "bucket" {
  description = "Bucket for Dataflow temp/staging files and Flex Template specs."
  value       = google_storage_bucket.dataflow.name
}

output "temp_location" {
  value = "gs://${google_storage_bucket.dataflow.name}/tmp"
}

output "staging_location" {
  value = "gs://${google_storage_bucket.dataflow.name}/staging"
}

output "template_path" {
  description = "Where flex_template/build.sh writes the Flex Template spec."
  value       = "gs://${google_storage_bucket.dataflow.name}/templates/rt4chart-stream.json"
}

output "image" {
  description = "Flex Template image (launcher and workers)."
  value       = "${var.region}-docker.pkg.dev/${var.project}/${google_artifact_registry_repository.images.repository_id}/rt4chart"
}

output "service_account" {
  description = "Service account of the Dataflow launcher and workers."
  value       = google_service_account.worker.email
}

output "openai_secret" {
  description = "Secret Manager secret id of OPENAI_API_KEY (add a version with gcloud)."
  value       = google_secret_manager_secret.openai_api_key.secret_id
}

output "project" {
  value = var.project
}

output "region" {
  value = var.region
}

output "ratelimit_service" {
  description = "The Envoy rate-limit service (--rate-limit-service HOST:PORT), when ratelimit_enabled."
  value       = var.ratelimit_enabled ? "${google_compute_instance.ratelimit[0].network_interface[0].network_ip}:8081" : null
}
