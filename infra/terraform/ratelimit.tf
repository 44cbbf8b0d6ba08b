# --- Optional: an Envoy rate-limit service that holds --rpm/--tpm for the whole job ----------
# For `--rate-limiter envoy` (rate_limiter=envoy in the template): every worker process asks
# this service before each judge call, so the job's totals hold however many workers Dataflow
# starts. One small VM in the workers' network runs envoyproxy/ratelimit with Redis (started by
# cloud-init on Container-Optimized OS). Workers reach it at `terraform output
# ratelimit_service` (internal address); only Dataflow workers (network tag "dataflow") may
# connect. Off by default: the static share per worker process needs no service.

locals {
  ratelimit_config = templatefile("${path.module}/../ratelimit/config.yaml.tftpl", {
    domain = var.ratelimit_domain
    rpm    = var.ratelimit_rpm
    tpm    = var.ratelimit_tpm
  })
}

resource "google_compute_instance" "ratelimit" {
  count        = var.ratelimit_enabled ? 1 : 0
  name         = "${var.name}-ratelimit"
  machine_type = "e2-small"
  zone         = "${var.region}-b"
  tags         = ["${var.name}-ratelimit"]

  boot_disk {
    initialize_params {
      image = "cos-cloud/cos-stable"
    }
  }

  network_interface {
    network = var.network
    # An ephemeral external address, only to pull the two images (no ingress is allowed on
    # it); without it, give the network Cloud NAT or mirror the images to Artifact Registry.
    access_config {}
  }

  metadata = {
    user-data = templatefile("${path.module}/../ratelimit/cloud-init.yaml.tftpl", {
      config_b64      = base64encode(local.ratelimit_config)
      ratelimit_image = var.ratelimit_image
      redis_image     = var.redis_image
    })
  }

  shielded_instance_config {
    enable_secure_boot = true
  }

  depends_on = [google_project_service.apis]
}

resource "google_compute_firewall" "ratelimit_from_dataflow" {
  count       = var.ratelimit_enabled ? 1 : 0
  name        = "${var.name}-ratelimit-from-dataflow"
  network     = var.network
  direction   = "INGRESS"
  source_tags = ["dataflow"]
  target_tags = ["${var.name}-ratelimit"]
  description = "Dataflow workers ask the Envoy rate-limit service (gRPC)."

  allow {
    protocol = "tcp"
    ports    = ["8081"]
  }

  depends_on = [google_project_service.apis]
}
