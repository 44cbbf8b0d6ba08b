#!/usr/bin/env bash
# Start the streaming auditor on Dataflow from the Flex Template built by build.sh.
# Usage: infra/flex_template/run.sh IMAGE_TAG [NAME=VALUE ...]
#   NAME=VALUE: more template parameters (see metadata.json), e.g. model=gpt-4o-mini rpm=500
#   tpm=200000 alert_rate=0.5 (rpm/tpm: the provider's limits for the whole job). Environment: MAX_WORKERS (default 4), MACHINE_TYPE (default
#   n2-standard-2), JOB_NAME.
# The resource names come from `terraform output` in infra/terraform.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tf() { terraform -chdir="$root/infra/terraform" output -raw "$1"; }

tag=${1:?usage: run.sh IMAGE_TAG [NAME=VALUE ...]}
shift
image=$(tf image):$tag

params=(
  "subscription=$(tf subscription)"
  "bigquery=$(tf bigquery)"
  "dead_letter_topic=$(tf dead_letter_topic)"
  "alerts_topic=$(tf alerts_topic)"
  "judge=openai"
  # The workers run the same image: rt4chart installed, the key read from Secret Manager.
  "sdk_container_image=$image"
  "$@"
)
# `^~^` makes ~ the separator, so that values may hold commas.
joined=$(IFS='~'; echo "${params[*]}")

gcloud dataflow flex-template run "${JOB_NAME:-rt4chart-stream-$(date -u +%Y%m%d-%H%M%S)}" \
  --project "$(tf project)" --region "$(tf region)" \
  --template-file-gcs-location "$(tf template_path)" \
  --service-account-email "$(tf service_account)" \
  --staging-location "$(tf staging_location)" --temp-location "$(tf temp_location)" \
  --enable-streaming-engine \
  --max-workers "${MAX_WORKERS:-4}" --worker-machine-type "${MACHINE_TYPE:-n2-standard-2}" \
  --parameters "^~^$joined"
