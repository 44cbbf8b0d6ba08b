#!/usr/bin/env bash
# Batch backfill on Dataflow: audit trace files in GCS into the BigQuery dataset (file loads),
# with the Parquet tables kept under gs://BUCKET/audits/RUN.
# Usage: infra/dataflow_backfill.sh 'gs://TRACES_BUCKET/traces/2024-05-*.parquet' IMAGE_TAG \
#          [rt4chart audit or Beam options, e.g. --rpm 500 --tpm 200000 --max_num_workers 4]
# --rpm/--tpm are the provider's limits for the whole job (see infra/README.md, Rate limits).
# Needs: `terraform apply` in infra/terraform (names are read from its outputs), the image
# built by infra/flex_template/build.sh (the workers run it: rt4chart installed, the API key
# read from Secret Manager), the traces bucket in the trace_buckets variable, and rt4chart
# installed here. The key is read into this command's environment only (the CLI builds the
# judge before submitting the job): it is never written to a file.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tf() { terraform -chdir="$root/infra/terraform" output -raw "$1"; }

inputs=${1:?usage: dataflow_backfill.sh INPUT_GLOB IMAGE_TAG [options]}
tag=${2:?usage: dataflow_backfill.sh INPUT_GLOB IMAGE_TAG [options]}
shift 2
project=$(tf project)
run=${RUN:-backfill-$(date -u +%Y%m%d-%H%M%S)}

OPENAI_API_KEY=${OPENAI_API_KEY:-$(gcloud secrets versions access latest \
  --secret "$(tf openai_secret)" --project "$project")} \
exec rt4chart audit "$inputs" --bigquery "$(tf bigquery)" \
  --out "gs://$(tf bucket)/audits/$run" --judge openai \
  --runner DataflowRunner --project "$project" --region "$(tf region)" \
  --job_name "rt4chart-$run" \
  --temp_location "$(tf temp_location)" --staging_location "$(tf staging_location)" \
  --service_account_email "$(tf service_account)" \
  --sdk_container_image "$(tf image):$tag" --sdk_location container \
  "$@"
