#!/bin/bash
# FerretDB behind the official mongo image's contract (see Containerfile).
set -euo pipefail
from_file() { # VAR: VAR, or the content of the file VAR_FILE names
  local var="$1" file_var="${1}_FILE"
  if [ -n "${!file_var:-}" ]; then tr -d '\n' <"${!file_var}"; else printf '%s' "${!var:-}"; fi
}
user="$(from_file MONGO_INITDB_ROOT_USERNAME)"
password="$(from_file MONGO_INITDB_ROOT_PASSWORD)"
args=(--handler=sqlite --sqlite-url=file:/data/db/ --listen-addr=0.0.0.0:27017 --debug-addr=- --telemetry=disable
  --state-dir=/data/db --log-level="${FERRETDB_LOG_LEVEL:-warn}")
if [ -n "$user" ]; then
  args+=(--test-enable-new-auth --setup-database=admin --setup-username="$user")
  export FERRETDB_SETUP_PASSWORD="$password"
fi
first_start=0
[ -e /data/db/.docshare-initialized ] || first_start=1
ferretdb "${args[@]}" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT
if [ "$first_start" = 1 ]; then
  for _ in $(seq 1 100); do
    mongosh --quiet --eval 'db.adminCommand("ping").ok' >/dev/null 2>&1 && break
    sleep 0.2
  done
  auth=()
  # `--option=value`: a password may begin with "-", which mongosh would take for an option.
  [ -n "$user" ] && auth=(--username="$user" --password="$password" --authenticationDatabase=admin)
  for script in /docker-entrypoint-initdb.d/*.js; do
    [ -e "$script" ] || continue
    echo "docker-entrypoint: running $script"
    mongosh --quiet "${auth[@]}" "mongodb://127.0.0.1:27017/${MONGO_INITDB_DATABASE:-test}" "$script" ||
      { echo "docker-entrypoint: $script failed" >&2; kill -TERM "$pid"; wait "$pid" || true; exit 1; }
  done
  touch /data/db/.docshare-initialized
fi
wait "$pid"
