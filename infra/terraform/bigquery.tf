# The dataset, the output tables and the dashboard views.
#
# Table schemas, descriptions, partitioning and clustering are generated from
# schemas/tables.py by infra/export_schemas.py into schemas/ (checked in; a test fails when they
# drift). Every table is partitioned by the UTC day of its partition_field; partitions expire
# after var.partition_expiration_days when set. The traces table is created empty: the job
# writes it only with --write-traces (write_traces=true).

locals {
  tables = jsondecode(file("${path.module}/schemas/tables.json"))

  # View name => description; the query is ../sql/<name>.sql with ${project} and ${dataset}.
  views = {
    route_rates_latest = "Hallucination rate per route and event-time window (the window's latest pane)."
    cost_daily         = "Judge calls, tokens and USD per route and UTC day (latest pane per window, summed)."
    daily_rate_exact   = "Exact hallucination rate per route and UTC day from the answers, late traces included."
    worst_traces_today = "Today's hallucinated answers, worst first, with their non-ENT claims."
  }
}

resource "google_bigquery_dataset" "rt4chart" {
  dataset_id                 = var.dataset
  location                   = var.bigquery_location
  description                = "rt4chart: claim-level hallucination audits of RAG answers."
  delete_contents_on_destroy = var.force_destroy

  depends_on = [google_project_service.apis]
}

resource "google_bigquery_table" "tables" {
  for_each = local.tables

  dataset_id          = google_bigquery_dataset.rt4chart.dataset_id
  table_id            = each.key
  description         = each.value.description
  schema              = file("${path.module}/schemas/${each.key}.json")
  clustering          = each.value.cluster_fields
  deletion_protection = var.deletion_protection

  time_partitioning {
    type          = each.value.partition_type
    field         = each.value.partition_field
    expiration_ms = var.partition_expiration_days == null ? null : var.partition_expiration_days * 86400000
  }
}

resource "google_bigquery_table" "views" {
  for_each = local.views

  dataset_id          = google_bigquery_dataset.rt4chart.dataset_id
  table_id            = each.key
  description         = each.value
  deletion_protection = false

  view {
    query = templatefile("${path.module}/../sql/${each.key}.sql", {
      project = var.project
      dataset = google_bigquery_dataset.rt4chart.dataset_id
    })
    use_legacy_sql = false
  }

  # A view is checked against its tables when it is created.
  depends_on = [google_bigquery_table.tables]
}
