#!/usr/bin/env bash
# Shows which local servers run, their pid, uptime and resident memory (RSS summed over the
# server's process group, plus the largest single process, e.g. the ES server JVM).
#   infra/local/status.sh [services...]
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

mapfile -t services < <(expand_services "$@")
printf '%-14s %-8s %-10s %-12s %-12s %s\n' SERVER PID UPTIME RSS_GROUP RSS_MAX_PROC PROCS
for s in "${services[@]}"; do
  if pid="$(running_pid "$s")"; then
    pids="$(group_pids "$pid" | paste -sd, -)"
    rss="$(group_rss_kb "$pid")"
    max="$(ps -o rss= -p "$pids" | sort -n | tail -1 | tr -d ' ')"
    up="$(ps -o etimes= -p "$pid" | tr -d ' ')s"
    printf '%-14s %-8s %-10s %-12s %-12s %s\n' "$s" "$pid" "$up" "$((rss / 1024))MiB" \
      "$((max / 1024))MiB" "$(ps -o comm= -p "$pids" | paste -sd, -)"
  else
    printf '%-14s %-8s\n' "$s" "-"
  fi
done
