#!/usr/bin/env bash
# Build the Flex Template image with Cloud Build and write the template spec to GCS.
# Usage: infra/flex_template/build.sh [TAG]
# Reads project, image, template path and secret from `terraform output` in infra/terraform
# (apply it first); PROJECT, IMAGE, TEMPLATE_PATH and OPENAI_SECRET in the environment win.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tf() { terraform -chdir="$root/infra/terraform" output -raw "$1"; }

tag=${1:-$(date -u +%Y%m%d-%H%M%S)}
project=${PROJECT:-$(tf project)}
image=${IMAGE:-$(tf image)}:$tag
template=${TEMPLATE_PATH:-$(tf template_path)}
secret=${OPENAI_SECRET-$(tf openai_secret)}

# From the repository root: the build context, and where --ignore-file is looked up.
cd "$root"
gcloud builds submit . --project "$project" \
  --config infra/flex_template/cloudbuild.yaml --ignore-file infra/flex_template/.gcloudignore \
  --substitutions "_IMAGE=$image,_OPENAI_SECRET=$secret"

gcloud dataflow flex-template build "$template" --project "$project" \
  --image "$image" --sdk-language PYTHON --metadata-file "$here/metadata.json"

echo "image:    $image"
echo "template: $template"
