#!/usr/bin/env bash
# Batch backfill of rt4chart on Dataflow: audit trace files in GCS, write the tables to GCS.
# Usage: infra/dataflow_backfill.sh PROJECT REGION BUCKET 'gs://BUCKET/traces/*.parquet' OUT_PREFIX
# Needs: gcloud auth, the Dataflow API enabled, OPENAI_API_KEY in the environment of the
# workers (for instance through a Secret Manager read in a custom container; never in a file).
set -euo pipefail
project=$1 region=$2 bucket=$3 inputs=$4 out=$5
here=$(cd "$(dirname "$0")/.." && pwd)
dist=$(mktemp -d)
python3 -m pip wheel --no-deps "$here" -w "$dist" >/dev/null
package=$(ls "$dist"/rt4chart-*.whl)
exec rt4chart audit "$inputs" --out "$out" --judge openai \
  --runner DataflowRunner --project "$project" --region "$region" \
  --temp_location "gs://$bucket/tmp" --staging_location "gs://$bucket/staging" \
  --extra_package "$package" "${@:6}"
