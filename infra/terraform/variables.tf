variable "project" {
  description = "Google Cloud project id."
  type        = string
}

variable "region" {
  description = "Region of the Dataflow job, the bucket and the Artifact Registry repository."
  type        = string
  default     = "europe-west1"
}

variable "bigquery_location" {
  description = "BigQuery dataset location (a region or a multi-region such as EU or US)."
  type        = string
  default     = "EU"
}

variable "partition_expiration_days" {
  description = "Days after which BigQuery deletes a day's partition of every table (claims, dead letters and traces hold raw trace text); null keeps them."
  type        = number
  default     = null
}

variable "name" {
  description = "Prefix of every resource name (topics, subscriptions, bucket, service account)."
  type        = string
  default     = "rt4chart"
}

variable "dataset" {
  description = "BigQuery dataset of the auditor's tables and views."
  type        = string
  default     = "rt4chart"
}

variable "ack_deadline_seconds" {
  description = "Ack deadline of the auditor's subscription. LLM judge calls take seconds to minutes per trace, so the maximum (600 s) is used; Dataflow extends deadlines while it works."
  type        = number
  default     = 600

  validation {
    condition     = var.ack_deadline_seconds >= 10 && var.ack_deadline_seconds <= 600
    error_message = "ack_deadline_seconds must be between 10 and 600."
  }
}

variable "max_delivery_attempts" {
  description = "Deliveries of a trace message before Pub/Sub forwards it to the dead-letter topic (5 to 100)."
  type        = number
  default     = 10

  validation {
    condition     = var.max_delivery_attempts >= 5 && var.max_delivery_attempts <= 100
    error_message = "max_delivery_attempts must be between 5 and 100."
  }
}

variable "message_retention" {
  description = "How long unacknowledged trace, dead-letter and alert messages are kept (at most 7 days)."
  type        = string
  default     = "604800s"
}

variable "openai_secret_id" {
  description = "Secret Manager secret holding the judge's API key (OPENAI_API_KEY). Terraform creates the secret, never its value: add a version with gcloud."
  type        = string
  default     = "rt4chart-openai-api-key"
}

variable "temp_retention_days" {
  description = "Objects under tmp/ and staging/ in the bucket are deleted after this many days."
  type        = number
  default     = 7
}

variable "deletion_protection" {
  description = "Protect the BigQuery tables from terraform destroy. Set to false (and apply) before tearing down."
  type        = bool
  default     = true
}

variable "force_destroy" {
  description = "Let terraform destroy delete the bucket and the dataset with their contents."
  type        = bool
  default     = false
}

variable "trace_buckets" {
  description = "Buckets holding trace files for batch backfills: the workers get read access."
  type        = list(string)
  default     = []
}

variable "ratelimit_enabled" {
  description = "Deploy the Envoy rate-limit service for --rate-limiter envoy (one job-wide budget)."
  type        = bool
  default     = false
}

variable "ratelimit_rpm" {
  description = "Requests per minute for the whole job, held by the rate-limit service (the provider's limit; the same number as the job's --rpm)."
  type        = number
  default     = 500
}

variable "ratelimit_tpm" {
  description = "Tokens per minute for the whole job, held by the rate-limit service (the provider's limit; the same number as the job's --tpm)."
  type        = number
  default     = 200000
}

variable "ratelimit_domain" {
  description = "Rate-limit domain (--rate-limit-domain); one per provider budget shared by jobs."
  type        = string
  default     = "rt4chart"
}

variable "ratelimit_image" {
  description = "envoyproxy/ratelimit image; pin a tag or digest you have tested."
  type        = string
  default     = "docker.io/envoyproxy/ratelimit:master"
}

variable "redis_image" {
  description = "Redis image that stores the rate-limit service's counters."
  type        = string
  default     = "docker.io/library/redis:7-alpine"
}

variable "network" {
  description = "VPC network of the Dataflow workers and the rate-limit service."
  type        = string
  default     = "default"
}
