# Traces come in on one topic and are read by the auditor's subscription. Messages Pub/Sub
# cannot get acknowledged after max_delivery_attempts go to the dead-letter topic, where the
# pipeline also publishes the records it rejects (stage, reason, raw record); a subscription on
# it keeps them. Alerts (a route's windowed hallucination rate crossed a rule) go to their own
# topic, with a subscription to read them from.

resource "google_pubsub_topic" "traces" {
  name                       = "${var.name}-traces"
  message_retention_duration = var.message_retention

  depends_on = [google_project_service.apis]
}

resource "google_pubsub_topic" "dead_letters" {
  name                       = "${var.name}-dead-letters"
  message_retention_duration = var.message_retention

  depends_on = [google_project_service.apis]
}

resource "google_pubsub_topic" "alerts" {
  name = "${var.name}-alerts"

  depends_on = [google_project_service.apis]
}

resource "google_pubsub_subscription" "auditor" {
  name  = "${var.name}-auditor"
  topic = google_pubsub_topic.traces.id

  # A trace waits on several LLM calls (decompose, verify per window, verify globally).
  ack_deadline_seconds       = var.ack_deadline_seconds
  message_retention_duration = var.message_retention
  retain_acked_messages      = false

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.dead_letters.id
    max_delivery_attempts = var.max_delivery_attempts
  }

  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }

  # Never expire: the subscription must outlive quiet periods and job restarts.
  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_subscription" "dead_letters" {
  name                       = "${var.name}-dead-letters-keep"
  topic                      = google_pubsub_topic.dead_letters.id
  ack_deadline_seconds       = 60
  message_retention_duration = var.message_retention

  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_subscription" "alerts" {
  name                       = "${var.name}-alerts"
  topic                      = google_pubsub_topic.alerts.id
  ack_deadline_seconds       = 60
  message_retention_duration = var.message_retention

  expiration_policy {
    ttl = ""
  }
}
