# shellcheck shell=bash disable=SC2034
# Shared settings and helpers for infra/local/*.sh. Sourced, never executed.
# Everything downloaded or built lives in $CACHE (outside the repo); everything a running
# server writes lives in $DATA. Versions are pinned here; override with the env vars named.

INFRA_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${DOCSHARE_INFRA_CACHE:-$HOME/.cache/docshare/infra}"
mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd)"
DATA="${DOCSHARE_INFRA_DATA:-$CACHE/../data}"
mkdir -p "$DATA"
DATA="$(cd "$DATA" && pwd)"
VERSIONS_FILE="$CACHE/versions.txt"

ALL_SERVICES=(redis ferretdb minio kafka elasticsearch)

# ---- pinned versions -------------------------------------------------------------------
KAFKA_VERSION="${DOCSHARE_KAFKA_VERSION:-3.9.1}"
KAFKA_SCALA="2.13"
SLF4J_RELOAD4J_VERSION="1.7.36"
# Elasticsearch integ-test-zip. 9.x builds are on Maven Central but absent from its
# maven-metadata.xml (whose <release> is 8.19.21), so they are pinned, not discovered.
ES_VERSION_9="9.5.4"
ES_VERSION_8="8.19.21"
# MinIO publishes RELEASE.* tags that are not semver; the Go proxy serves no tagged version
# (RELEASE tags answer 403 here), so this is the pseudo-version of @latest on 2026-02-12.
MINIO_VERSION="${DOCSHARE_MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
# MinIO's client (for the compose stack's bucket, user and policy), @latest on 2026-11-23.
MC_VERSION="${DOCSHARE_MC_VERSION:-v0.0.0-20250313080218-cf909e1063a9}"
# FerretDB 2 on PostgreSQL 15 with the DocumentDB extension (FerretDB's fork, tag
# v0.106.0-ferretdb-2.5.0), built from the tarballs in ../shared/vendor (SHA256SUMS checked).
# FerretDB 2.5.0 does not compile with Go >= 1.25: its go.mod's toolchain is used.
FERRETDB_VERSION="${DOCSHARE_FERRETDB_VERSION:-v2.5.0}"
FERRETDB_GO_TOOLCHAIN="go1.24.6"
DOCUMENTDB_VERSION="0.106.0-ferretdb-2.5.0"
# what FerretDB 2.5.0 expects documentdb_api.binary_extended_version() to say (startupWarnings
# otherwise); a tarball has no git metadata, so the build is told the tag's commit
DOCUMENTDB_GIT_SHA="beb9d25d98"
DOCUMENTDB_VERSION_STRING="0.106.0 gitref: HEAD sha:$DOCUMENTDB_GIT_SHA buildId:0"
LIBBSON_VERSION="1.28.0"
PGVECTOR_VERSION="0.8.0"
PG_MAJOR="${DOCSHARE_PG_MAJOR:-15}"
PG_BIN="/usr/lib/postgresql/$PG_MAJOR/bin"
PG_USER="${DOCSHARE_PG_USER:-postgres}"
VENDOR_DIR="${DOCSHARE_VENDOR_DIR:-$(cd "$INFRA_DIR/../../.." && pwd)/shared/vendor}"
ES_USER="${DOCSHARE_ES_USER:-docshare-es}"

# ---- ports -----------------------------------------------------------------------------
KAFKA_PORT="${DOCSHARE_KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT="${DOCSHARE_KAFKA_CONTROLLER_PORT:-19093}"
ES_PORT="${DOCSHARE_ES_PORT:-19200}"
ES_TRANSPORT_PORT="${DOCSHARE_ES_TRANSPORT_PORT:-19300}"
MINIO_PORT="${DOCSHARE_MINIO_PORT:-19000}"
MINIO_CONSOLE_PORT="${DOCSHARE_MINIO_CONSOLE_PORT:-19001}"
FERRETDB_PORT="${DOCSHARE_FERRETDB_PORT:-27018}"
REDIS_PORT="${DOCSHARE_REDIS_PORT:-16379}"
START_TIMEOUT="${DOCSHARE_START_TIMEOUT:-180}"
STOP_TIMEOUT="${DOCSHARE_STOP_TIMEOUT:-30}"

# ---- go / maven isolation (keeps a wiped cache a true cold start) -----------------------
export GOPATH="$CACHE/go"
export GOMODCACHE="$CACHE/go/mod"
export GOCACHE="$CACHE/go/build-cache"
export GOFLAGS="-modcacherw -buildvcs=false"
M2_REPO="$CACHE/m2"

# ---- helpers ---------------------------------------------------------------------------
log() { printf '[infra] %s\n' "$*" >&2; }
die() { printf '[infra] ERROR: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

is_root() { [ "$(id -u)" -eq 0 ]; }

valid_service() {
  local s
  for s in "${ALL_SERVICES[@]}"; do [ "$s" = "$1" ] && return 0; done
  return 1
}

# expand_services [args...] -> prints one service per line; "all" or nothing = every service
expand_services() {
  if [ $# -eq 0 ] || [ "$*" = "all" ]; then printf '%s\n' "${ALL_SERVICES[@]}"; return; fi
  local s
  for s in "$@"; do
    [ "$s" = "all" ] && { printf '%s\n' "${ALL_SERVICES[@]}"; continue; }
    [ "$s" = "es" ] && s=elasticsearch
    valid_service "$s" || die "unknown service '$s' (expected: ${ALL_SERVICES[*]} or all)"
    printf '%s\n' "$s"
  done | awk '!seen[$0]++'
}

# record_version <key> <value>: replaces the key's line in $VERSIONS_FILE
record_version() {
  local key="$1" value="$2" tmp
  tmp="$(mktemp "$VERSIONS_FILE.XXXXXX")"
  { [ -f "$VERSIONS_FILE" ] && awk -v k="$key" 'index($0, k "=") != 1' "$VERSIONS_FILE"; printf '%s=%s\n' "$key" "$value"; } \
    | sort >"$tmp"
  mv "$tmp" "$VERSIONS_FILE"
}

# java_major <java_home> -> major version number (or nothing)
java_major() {
  local home="$1" v=""
  if [ -f "$home/release" ]; then
    v="$(sed -n 's/^JAVA_VERSION="\([^"]*\)".*/\1/p' "$home/release")"
  elif [ -x "$home/bin/java" ]; then
    v="$("$home/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
  fi
  v="${v#1.}"
  printf '%s' "${v%%[.+-]*}"
}

# find_jdk <min> <max>: prints the JAVA_HOME of the newest JDK under /usr/lib/jvm (and the
# default java) whose major is in [min,max]. Symlinked duplicates are collapsed.
find_jdk() {
  local min="$1" max="$2" best="" bestv=0 home v real
  local -A seen=()
  local candidates=(/usr/lib/jvm/*/)
  if command -v java >/dev/null 2>&1; then
    candidates+=("$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")")
  fi
  for home in "${candidates[@]}"; do
    home="${home%/}"
    [ -x "$home/bin/java" ] || continue
    real="$(readlink -f "$home")"
    [ -n "${seen[$real]:-}" ] && continue
    seen[$real]=1
    v="$(java_major "$real")"
    [[ "$v" =~ ^[0-9]+$ ]] || continue
    if [ "$v" -ge "$min" ] && [ "$v" -le "$max" ] && [ "$v" -gt "$bestv" ]; then
      best="$real"; bestv="$v"
    fi
  done
  [ -n "$best" ] && printf '%s' "$best"
}

kafka_java_home() {
  if [ -n "${DOCSHARE_KAFKA_JAVA_HOME:-}" ]; then printf '%s' "$DOCSHARE_KAFKA_JAVA_HOME"; return; fi
  # Kafka 3.9 supports Java 11/17/21; prefer a supported LTS, fall back to anything newer.
  find_jdk 17 23 || find_jdk 11 16 || find_jdk 24 99
}

# Elasticsearch: newest 9.x when a Java 21+ JDK exists, else newest 8.x (Java 17+).
es_java_home() {
  if [ -n "${DOCSHARE_ES_JAVA_HOME:-}" ]; then printf '%s' "$DOCSHARE_ES_JAVA_HOME"; return; fi
  local v="${DOCSHARE_ES_VERSION:-}"
  if [ -z "$v" ] || [ "${v%%.*}" -ge 9 ]; then
    find_jdk 21 99 && return
    [ -n "$v" ] && return 1
  fi
  # ES 8 still uses the SecurityManager (removed in Java 24): keep it on 17..23.
  find_jdk 17 23
}

es_version() {
  if [ -n "${DOCSHARE_ES_VERSION:-}" ]; then printf '%s' "$DOCSHARE_ES_VERSION"; return; fi
  local jh major
  jh="$(es_java_home)" || true
  [ -n "$jh" ] || { printf '%s' "$ES_VERSION_8"; return; }
  major="$(java_major "$jh")"
  if [ "$major" -ge 21 ]; then printf '%s' "$ES_VERSION_9"; else printf '%s' "$ES_VERSION_8"; fi
}

kafka_home() { printf '%s' "$CACHE/kafka/$KAFKA_VERSION"; }
es_home() { printf '%s' "$CACHE/elasticsearch/$1/elasticsearch-$1"; }
minio_bin() { printf '%s' "$CACHE/minio/$MINIO_VERSION/bin/minio"; }
mc_bin() { printf '%s' "$CACHE/mc/$MC_VERSION/bin/mc"; }
ferretdb_bin() { printf '%s' "$CACHE/ferretdb/$FERRETDB_VERSION/bin/ferretdb"; }
documentdb_home() { printf '%s' "$CACHE/documentdb/$DOCUMENTDB_VERSION-pg$PG_MAJOR"; }

# debs_missing <package...>: prints the Debian packages that are not installed
debs_missing() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || printf '%s\n' "$p"
  done
}

# deb_install <package...>: apt-get install the packages that are missing. Debian packages with
# daemons start them from postinst (postgresql-15 a default cluster on :5432, redis-server a
# Redis on 6379): policy-rc.d (exit 101) stops that for the duration of the install unless the
# machine already has one.
deb_install() {
  local missing
  mapfile -t missing < <(debs_missing "$@")
  [ "${#missing[@]}" -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 || die "missing Debian packages and no apt-get: ${missing[*]}"
  local sudo=()
  if ! is_root; then
    sudo -n true 2>/dev/null || die "missing Debian packages; apt-get needs root (run: sudo apt-get install -y --no-install-recommends ${missing[*]})"
    sudo=(sudo -n)
  fi
  local made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee /usr/sbin/policy-rc.d >/dev/null
    "${sudo[@]}" chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
  fi
  local rc=0 out="$CACHE/apt-last.log"
  log "apt-get install ${missing[*]} (output: $out)"
  {
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  } >"$out" 2>&1 || rc=$?
  [ "$made_policy" -eq 1 ] && "${sudo[@]}" rm -f /usr/sbin/policy-rc.d
  [ "$rc" -eq 0 ] || { tail -n 20 "$out" >&2; die "apt-get install ${missing[*]} failed (rc=$rc)"; }
}

# pkg_install <binary> <debian-package...>: apt-get install only when the binary is missing
pkg_install() {
  local bin="$1"; shift
  command -v "$bin" >/dev/null 2>&1 && return 0
  deb_install "$@"
  command -v "$bin" >/dev/null 2>&1 || die "installed $* but '$bin' is still not on PATH"
}

# ---- Elasticsearch user (ES refuses to run as root) ----------------------------------------
ensure_es_user() {
  is_root || return 0
  id -u "$ES_USER" >/dev/null 2>&1 && return 0
  log "elasticsearch: creating system user $ES_USER (Elasticsearch refuses to run as root)"
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
    --user-group "$ES_USER"
}

# es_grant_traverse <path>: lets $ES_USER reach <path> when an ancestor (e.g. /root, mode 0700)
# blocks it, by adding a traverse-only (x) ACL entry for that one user on that ancestor.
# Walks top-down so only the directories that actually block get an entry.
es_grant_traverse() { grant_traverse "$ES_USER" "$1"; }
grant_traverse() {
  is_root || return 0
  local user="$1" target="$2" d ancestors=() i
  d="$target"
  while [ "$d" != "/" ]; do d="$(dirname "$d")"; ancestors+=("$d"); done
  for (( i=${#ancestors[@]}-1; i>=0; i-- )); do
    d="${ancestors[$i]}"
    setpriv --reuid="$user" --regid="$user" --init-groups test -x "$d" 2>/dev/null && continue
    pkg_install setfacl acl
    log "granting $user traverse (x) on $d via ACL"
    setfacl -m "u:$user:x" "$d"
  done
}

# ---- process bookkeeping ---------------------------------------------------------------
pid_file() { printf '%s' "$DATA/$1/$1.pid"; }
log_file() { printf '%s' "$DATA/$1/$1.log"; }

# proc_start_time <pid>: field 22 of /proc/<pid>/stat (guards against pid reuse)
proc_start_time() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  # shellcheck disable=SC2086
  set -- $stat
  printf '%s' "${20}"
}

# proc_state <pid>: R, S, D, Z, ... (field 3 of /proc/<pid>/stat)
proc_state() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  printf '%s' "${stat%% *}"
}

# running_pid <service>: prints the recorded pid if that exact process is still alive
running_pid() {
  local f pid st
  f="$(pid_file "$1")"
  [ -f "$f" ] || return 1
  read -r pid st <"$f" || return 1
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  [ "$(proc_start_time "$pid")" = "$st" ] || return 1
  [ "$(proc_state "$pid")" != "Z" ] || return 1
  printf '%s' "$pid"
}

# group_pids <pgid>: every live process in the process group (services run under setsid)
# (zombies are skipped: they are dead, whoever reaps them, and on this kind of machine PID 1
# may take seconds to do so)
group_pids() { ps -e -o pid=,pgid=,stat= | awk -v g="$1" '$2 == g && $3 !~ /^Z/ { print $1 }'; }

# group_rss_kb <pgid>: summed RSS of the process group
group_rss_kb() {
  local pids
  pids="$(group_pids "$1" | paste -sd, -)"
  [ -n "$pids" ] || { echo 0; return; }
  ps -o rss= -p "$pids" | awk '{ s += $1 } END { print s + 0 }'
}

tcp_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
