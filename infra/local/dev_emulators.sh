#!/usr/bin/env bash
# Local emulators for developing `rt4chart stream`: the gcloud Pub/Sub emulator (topics and
# subscriptions created) and, when available, the BigQuery emulator (bqemulator_offline.py).
#
# Usage: infra/local/dev_emulators.sh [start [--detach] | stop | status]
#   start      start both, print the environment and the stream command, then wait: Ctrl-C
#              stops what was started. With --detach, return at once (stop with `stop`).
#   stop       stop what a previous `start` recorded in its PID file.
#   status     show the recorded process groups.
# Environment: PROJECT (rt4chart-dev), PUBSUB_PORT, BQ_REST_PORT, BQ_GRPC_PORT (free ports by
# default), PYTHON (python3; needs bqemulator for the BigQuery emulator), STATE_DIR (where PIDs,
# logs and emulator data go; default ${TMPDIR:-/tmp}/rt4chart-dev-emulators).
#
# Each emulator runs in its own session (setsid): gcloud's wrapper spawns a java child that
# outlives a killed wrapper, so stopping signals the whole process group, never anything else.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
project=${PROJECT:-rt4chart-dev}
python=${PYTHON:-python3}
state=${STATE_DIR:-${TMPDIR:-/tmp}/rt4chart-dev-emulators}
pids="$state/pids"

free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Any HTTP answer (even 404) from 127.0.0.1:$1 means the server is up; proxies are bypassed.
http_up() {
  "$python" - "$1" <<'EOF'
import sys, urllib.error, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    opener.open(f"http://127.0.0.1:{sys.argv[1]}/", timeout=1)
except urllib.error.HTTPError:
    pass
except OSError:
    sys.exit(1)
EOF
}

# launch NAME LOG CMD...: start CMD in a new session; record "NAME PGID" in the PID file.
launch() {
  local name=$1 log=$2 pidfile="$state/$1.pid"
  shift 2
  rm -f "$pidfile"
  # The inner shell is the session leader whatever setsid does, so its $$ is the group id.
  setsid bash -c 'echo $$ > "$0"; exec "$@"' "$pidfile" "$@" </dev/null >"$log" 2>&1 &
  for _ in $(seq 50); do [[ -s $pidfile ]] && break; sleep 0.1; done
  [[ -s $pidfile ]] || { echo "could not start $name (see $log)" >&2; return 1; }
  echo "$name $(cat "$pidfile")" >>"$pids"
}

# wait_up NAME PORT LOG SECONDS: bounded readiness wait, with the log tail on failure.
wait_up() {
  local deadline=$((SECONDS + $4))
  until http_up "$2"; do
    if ((SECONDS >= deadline)); then
      echo "$1 did not answer on 127.0.0.1:$2 within $4 s; last lines of $3:" >&2
      tail -n 20 "$3" >&2
      return 1
    fi
    sleep 0.2
  done
}

# A recorded group is ours only if one of its processes still looks like an emulator.
ours() {
  pgrep -g "$1" -a 2>/dev/null | grep -qE 'pubsub-emulator|emulators pubsub|bqemulator'
}

stop_group() {
  local name=$1 pgid=$2
  ours "$pgid" || { echo "$name (group $pgid): not running"; return 0; }
  kill -TERM -- "-$pgid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 -- "-$pgid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 -- "-$pgid" 2>/dev/null; then
    echo "$name (group $pgid) ignored SIGTERM for 10 s: SIGKILL"
    kill -KILL -- "-$pgid" 2>/dev/null || true
  fi
  echo "$name (group $pgid): stopped"
}

stop_all() {
  # Moved aside first, so a foreground `start` sees it go and leaves the stopping to us.
  local taken="$pids.$$"
  mv "$pids" "$taken" 2>/dev/null || { echo "nothing recorded in $pids"; return 0; }
  while read -r name pgid; do stop_group "$name" "$pgid"; done <"$taken"
  rm -f "$taken"
}

all_running() {
  local name pgid
  while read -r name pgid; do ours "$pgid" || return 1; done <"$pids"
}

status() {
  [[ -f $pids ]] || { echo "nothing recorded in $pids"; return 0; }
  while read -r name pgid; do
    if ours "$pgid"; then echo "$name: running (group $pgid)"; else echo "$name: gone"; fi
  done <"$pids"
}

# Topics and subscriptions through the emulator's REST API (409 = exists already: fine).
create() {
  local kind=$1 name=$2 code
  local data=()
  [[ -n ${3:-} ]] && data=(-d "$3")
  code=$(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' -X PUT \
    -H 'content-type: application/json' "${data[@]}" \
    "http://127.0.0.1:$pubsub_port/v1/projects/$project/$kind/$name")
  [[ $code == 200 || $code == 409 ]] || { echo "creating $kind/$name: HTTP $code" >&2; return 1; }
}

create_resources() {
  local topic
  for topic in traces dead-letters alerts; do
    create topics "$topic"
    create subscriptions "$topic-sub" \
      "{\"topic\": \"projects/$project/topics/$topic\", \"ackDeadlineSeconds\": 60}"
  done
}

start_pubsub() {
  local tool
  for tool in gcloud curl setsid pgrep; do
    command -v "$tool" >/dev/null || { echo "$tool is not on PATH" >&2; return 1; }
  done
  pubsub_port=${PUBSUB_PORT:-$(free_port)}
  mkdir -p "$state/pubsub-data"
  local began=$SECONDS
  launch pubsub "$state/pubsub.log" gcloud beta emulators pubsub start --quiet \
    "--host-port=127.0.0.1:$pubsub_port" "--project=$project" "--data-dir=$state/pubsub-data"
  wait_up "Pub/Sub emulator" "$pubsub_port" "$state/pubsub.log" 60
  create_resources
  echo "Pub/Sub emulator on 127.0.0.1:$pubsub_port (ready in $((SECONDS - began)) s)"
}

start_bigquery() {
  bq_port=""
  if [[ ! -f $here/bqemulator_offline.py ]]; then
    echo "BigQuery emulator skipped: infra/local/bqemulator_offline.py not found"
    return 0
  fi
  if ! "$python" -c 'import bqemulator, numpy' 2>/dev/null; then
    echo "BigQuery emulator skipped: $python cannot import bqemulator and numpy"
    return 0
  fi
  bq_port=${BQ_REST_PORT:-$(free_port)}
  local grpc_port=${BQ_GRPC_PORT:-$(free_port)}
  launch bigquery "$state/bigquery.log" "$python" "$here/bqemulator_offline.py" start \
    --rest-port "$bq_port" --grpc-port "$grpc_port" --project "$project" --log-level warning
  wait_up "BigQuery emulator" "$bq_port" "$state/bigquery.log" 60
  echo "BigQuery emulator: REST http://127.0.0.1:$bq_port, gRPC 127.0.0.1:$grpc_port"
}

print_usage_hint() {
  local p="projects/$project"
  cat <<EOF

In another shell:

  export PUBSUB_EMULATOR_HOST=127.0.0.1:$pubsub_port PUBSUB_PROJECT_ID=$project
  rt4chart stream --subscription $p/subscriptions/traces-sub --out ./stream-out \\
      --dead-letter-topic $p/topics/dead-letters --alerts-topic $p/topics/alerts

Subscriptions to read the outputs: $p/subscriptions/dead-letters-sub, $p/subscriptions/alerts-sub.
EOF
  if [[ -n $bq_port ]]; then
    echo "BigQuery emulator for clients: client_options={'api_endpoint': 'http://127.0.0.1:$bq_port'}"
    echo "(rt4chart stream --bigquery writes to real BigQuery: Beam has no endpoint option.)"
  fi
  echo "Logs and PIDs: $state"
}

start() {
  if [[ -f $pids ]]; then
    echo "$pids exists: run '$0 stop' first (or '$0 status')" >&2
    exit 1
  fi
  mkdir -p "$state"
  : >"$pids"
  trap 'stop_all' EXIT
  trap 'exit 130' INT TERM
  start_pubsub
  start_bigquery
  print_usage_hint
  if [[ ${1:-} == --detach ]]; then
    trap - EXIT
    echo "Detached: stop with '$0 stop'."
    return 0
  fi
  echo "Ctrl-C stops the emulators."
  # Returns when an emulator exits (or on Ctrl-C); the EXIT trap stops the rest.
  while [[ -f $pids ]] && all_running; do sleep 2; done
  [[ -f $pids ]] && echo "an emulator exited; stopping the others" >&2
  return 0
}

case ${1:-start} in
  start) shift || true; start "$@" ;;
  stop) stop_all ;;
  status) status ;;
  *) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
