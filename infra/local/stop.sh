#!/usr/bin/env bash
# Stops what start.sh started: SIGTERM to each server's process group, SIGKILL after
# ${DOCSHARE_STOP_TIMEOUT:-30}s. Only processes recorded in <data>/<server>/<server>.pid (and
# still the same process: pid + start time) are touched.
#   infra/local/stop.sh [kafka|elasticsearch|minio|ferretdb|redis|all]...   (default: all)
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

stop_one() {
  local svc="$1" pid t0 deadline
  if ! pid="$(running_pid "$svc")"; then
    rm -f "$(pid_file "$svc")"
    printf '%-14s not running\n' "$svc"
    return 0
  fi
  t0="$(now)"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  deadline=$(( $(date +%s) + STOP_TIMEOUT ))
  while [ -n "$(group_pids "$pid")" ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.2; done
  if [ -n "$(group_pids "$pid")" ]; then
    kill -KILL -- "-$pid" 2>/dev/null || true
    sleep 0.5
    printf '%-14s killed (SIGKILL after %ss)\n' "$svc" "$STOP_TIMEOUT"
  else
    printf '%-14s stopped in %ss\n' "$svc" "$(elapsed "$t0")"
  fi
  rm -f "$(pid_file "$svc")"
}

main() {
  local services s i
  mapfile -t services < <(expand_services "$@")
  # reverse order of ALL_SERVICES: the slow JVMs first, they take longest to drain
  for (( i=${#services[@]}-1; i>=0; i-- )); do
    s="${services[$i]}"
    stop_one "$s"
  done
  # keep stack.env describing what still runs
  if [ -f "$DATA/stack.env" ]; then
    local tmp
    tmp="$(mktemp "$DATA/stack.env.XXXXXX")"
    chmod 600 "$tmp"
    {
      echo "# updated by infra/local/stop.sh $(date -Is); servers running at that time"
      for s in "${ALL_SERVICES[@]}"; do
        running_pid "$s" >/dev/null && [ -f "$DATA/$s/service.env" ] && cat "$DATA/$s/service.env"
      done
      true
    } >"$tmp"
    mv "$tmp" "$DATA/stack.env"
  fi
}

main "$@"
