#!/bin/bash
# PostgreSQL 15 + DocumentDB and FerretDB 2 as one server, behind the official mongo image's
# contract (see Containerfile). PostgreSQL listens on a Unix socket only, in a directory only the
# postgres user may enter; FerretDB listens on 27017. If either exits, the other is stopped and
# the container exits; SIGTERM stops FerretDB, then PostgreSQL with a fast shutdown.
#
# Durability: fsync, synchronous_commit and full_page_writes are on: an acknowledged write is on
# disk before FerretDB answers, so it survives kill -9 of the container and a power loss.
#
# Authentication: with MONGO_INITDB_ROOT_USERNAME(_FILE) and MONGO_INITDB_ROOT_PASSWORD(_FILE)
# the first start creates that user as a PostgreSQL role (a SCRAM-SHA-256 verifier, SUPERUSER and
# DocumentDB's admin and read-only roles: what FerretDB 2.5's createUser makes of a clusterAdmin)
# and FerretDB runs with authentication on, from then on for good (a data directory
# that has users never opens without it, even if a restart lacks the variables). FerretDB checks
# a client's SCRAM proof against the role's verifier in PostgreSQL (DocumentDB's
# authenticate_with_scram_sha256); a client that has not authenticated can run nothing but the
# handshake (ping, hello, buildInfo, saslStart...: "requires authentication", code 13). FerretDB
# 2.5 has no authorization: it runs every query as its own PostgreSQL role (postgres, over the
# socket only the postgres user can reach), and its createUser gives every user clusterAdmin and
# readWriteAnyDatabase whatever roles are asked for. Without credentials FerretDB runs --no-auth.
#
# First start (no initialized data directory): initdb, CREATE EXTENSION documentdb CASCADE, the
# root role, then /docker-entrypoint-initdb.d/*.js (mongosh, authenticated) and *.sh, with
# FerretDB on a Unix socket only, so nothing outside the container reaches a half-initialized
# server. A first start that dies half-way starts over on the next one.
#
# FerretDB logs at FERRETDB_LOG_LEVEL (default error): at warn it dumps every error answer whole
# (a duplicate key, mongosh's atlasVersion probe at each healthcheck), some 30 lines each.
set -euo pipefail

DB_DIR=/data/db
PGDATA="$DB_DIR/pgdata"
STATE_DIR="$DB_DIR/ferretdb-state"
INITIALIZED="$DB_DIR/.docshare-documentdb-initialized"
AUTH_FILE="$DB_DIR/.docshare-auth"
RUN_DIR=/run/docshare
PG_PORT=5432

say() { printf 'docker-entrypoint: %s\n' "$*"; }
die() { printf 'docker-entrypoint: ERROR: %s\n' "$*" >&2; exit 1; }

if [ "$(id -u)" = 0 ]; then
  # Started as root: give the data directory to postgres, then run as postgres.
  mkdir -p "$DB_DIR" "$RUN_DIR"
  find "$DB_DIR" \! -user postgres -exec chown postgres:postgres '{}' +
  chown postgres:postgres "$RUN_DIR" && chmod 0700 "$RUN_DIR"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "${BASH_SOURCE[0]}" "$@"
fi
[ -w "$DB_DIR" ] || die "$DB_DIR is not writable by $(id -un) (uid $(id -u))"
mkdir -p "$RUN_DIR" && chmod 0700 "$RUN_DIR"

from_file() { # VAR: VAR, or the content of the file VAR_FILE names
  local var="$1" file_var="${1}_FILE"
  if [ -n "${!file_var:-}" ]; then tr -d '\n' <"${!file_var}"; else printf '%s' "${!var:-}"; fi
}
user="$(from_file MONGO_INITDB_ROOT_USERNAME)"
password="$(from_file MONGO_INITDB_ROOT_PASSWORD)"
if [ -n "$user" ] && [ -z "$password" ] || [ -z "$user" ] && [ -n "$password" ]; then
  die "MONGO_INITDB_ROOT_USERNAME and MONGO_INITDB_ROOT_PASSWORD (or their _FILE forms) go together"
fi

pg_pid="" fdb_pid="" stopping=0
stop_all() { # (under set -e: every step may fail, a process may be gone already)
  stopping=1
  if [ -n "$fdb_pid" ]; then kill -TERM "$fdb_pid" 2>/dev/null || true; wait "$fdb_pid" 2>/dev/null || true; fi
  # SIGINT: PostgreSQL's fast shutdown (clients disconnected, a checkpoint, a clean stop)
  if [ -n "$pg_pid" ]; then kill -INT "$pg_pid" 2>/dev/null || true; wait "$pg_pid" 2>/dev/null || true; fi
  fdb_pid="" pg_pid=""
}
trap 'say "stopping"; stop_all; exit 0' TERM INT

psql_q() { psql -h "$RUN_DIR" -p "$PG_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAt "$@"; }

write_config() {
  # Rewritten at every start, so a setting changed in a new image reaches existing volumes.
  {
    cat <<EOF
# written by docker-entrypoint.sh at every start
listen_addresses = ''
port = $PG_PORT
unix_socket_directories = '$RUN_DIR'
unix_socket_permissions = 0700
max_connections = 200
shared_buffers = ${DOCSHARE_PG_SHARED_BUFFERS:-256MB}
password_encryption = scram-sha-256
documentdb.localhost_connection_string = 'host=$RUN_DIR port=$PG_PORT'
# Durable: an acknowledged write is on disk before the answer
fsync = on
EOF
    # DocumentDB's settings, the same as infra/local's (infra/local/lib/documentdb.conf)
    cat /usr/local/share/docshare/documentdb.conf
  } >"$PGDATA/docshare.conf"
  # The Unix socket only, which only the postgres user can enter (unix_socket_permissions, RUN_DIR
  # 0700). FerretDB 2.5 runs every query as the --postgresql-url role (postgres) once it has checked
  # the client's SCRAM proof; DocumentDB's background jobs connect as postgres or its worker role.
  # Any other role logging in to PostgreSQL directly needs its password (SCRAM).
  cat >"$PGDATA/pg_hba.conf" <<'EOF'
# written by docker-entrypoint.sh at every start: the Unix socket only (no TCP listener)
local all postgres trust
local all documentdb_bg_worker_role trust
local all all scram-sha-256
EOF
}

start_postgres() {
  # A container's processes all die with it: a postmaster.pid left by a killed container is stale
  # (and its pid may belong to another process in this one, which would stop PostgreSQL).
  rm -f "$PGDATA/postmaster.pid"
  postgres -D "$PGDATA" &
  pg_pid=$!
  local i
  # postmaster.pid's 8th line turns "ready" once connections are accepted (what pg_ctl -w reads);
  # polling with connections instead would log a FATAL for each one refused during recovery.
  for i in $(seq 1 600); do
    [ "$(sed -n 8p "$PGDATA/postmaster.pid" 2>/dev/null | tr -d ' ')" = ready ] &&
      pg_isready -q -h "$RUN_DIR" -p "$PG_PORT" -U postgres && return 0
    kill -0 "$pg_pid" 2>/dev/null || die "PostgreSQL exited during start-up"
    sleep 0.1
  done
  die "PostgreSQL did not accept connections within 60 s"
}

# start_ferretdb <auth on|off> <listen flags...>
start_ferretdb() {
  local auth="$1"; shift
  local flags=(--postgresql-url="postgres://postgres@/postgres?host=$RUN_DIR&port=$PG_PORT"
    --state-dir="$STATE_DIR" --debug-addr=- --telemetry=disable --log-level="${FERRETDB_LOG_LEVEL:-error}")
  [ "$auth" = on ] && flags+=(--auth) || flags+=(--no-auth)
  mkdir -p "$STATE_DIR"
  ferretdb "${flags[@]}" "$@" &
  fdb_pid=$!
}

# FerretDB compares the extension's version string exactly and only warns (getLog
# startupWarnings) on a mismatch: refuse to start instead, so a wrong build never runs unnoticed.
check_documentdb() {
  local have
  have="$(psql_q -c 'SELECT documentdb_api.binary_extended_version()')"
  if [ "$have" != "$DOCSHARE_DOCUMENTDB_VERSION_STRING" ]; then
    stop_all
    die "DocumentDB version mismatch: the extension reports '$have', FerretDB $DOCSHARE_FERRETDB_VERSION requires '$DOCSHARE_DOCUMENTDB_VERSION_STRING'"
  fi
}

if [ ! -e "$INITIALIZED" ]; then
  if [ -e "$PGDATA" ]; then
    say "an earlier first start did not finish: starting over ($PGDATA removed)"
    rm -rf "$PGDATA" "$STATE_DIR" "$AUTH_FILE"
  fi
  if compgen -G "$DB_DIR/*.sqlite" >/dev/null; then
    say "WARNING: $DB_DIR holds FerretDB 1.x SQLite files; this server does not read them (their data is not migrated)"
  fi
  say "first start: initdb $PGDATA"
  install -d -m 0700 "$PGDATA"
  initdb -D "$PGDATA" --username=postgres --encoding=UTF8 --locale=C.UTF-8 --auth=trust >/dev/null
  printf "\ninclude_if_exists = 'docshare.conf'\n" >>"$PGDATA/postgresql.conf"
  write_config
  start_postgres
  say "CREATE EXTENSION documentdb CASCADE"
  psql_q -c 'CREATE EXTENSION IF NOT EXISTS documentdb CASCADE' >/dev/null
  check_documentdb
  auth=off
  if [ -n "$user" ]; then
    say "creating the root user '$user' (authentication on)"
    # The password reaches psql through its environment (\getenv), never its arguments.
    DOCSHARE_ROOT_USER="$user" DOCSHARE_ROOT_PASSWORD="$password" psql_q >/dev/null <<'SQL'
\getenv root_user DOCSHARE_ROOT_USER
\getenv root_password DOCSHARE_ROOT_PASSWORD
CREATE ROLE :"root_user" WITH LOGIN SUPERUSER PASSWORD :'root_password';
GRANT documentdb_admin_role, documentdb_readonly_role TO :"root_user";
SQL
    auth=on
    echo on >"$AUTH_FILE"
  fi
  shopt -s nullglob
  scripts=(/docker-entrypoint-initdb.d/*.js /docker-entrypoint-initdb.d/*.sh)
  shopt -u nullglob
  if [ ${#scripts[@]} -gt 0 ]; then
    start_ferretdb "$auth" --listen-addr= --listen-unix="$RUN_DIR/mongodb.sock"
    for _ in $(seq 1 300); do [ -S "$RUN_DIR/mongodb.sock" ] && break; sleep 0.1; done
    [ -S "$RUN_DIR/mongodb.sock" ] || { stop_all; die "FerretDB did not open its socket"; }
    init_url="mongodb://${RUN_DIR//\//%2F}%2Fmongodb.sock/${MONGO_INITDB_DATABASE:-test}"
    mongo_auth=()
    # `--option=value`: a password may begin with "-", which mongosh would take for an option.
    [ -n "$user" ] && mongo_auth=(--username="$user" --password="$password" --authenticationDatabase=admin)
    for script in $(printf '%s\n' "${scripts[@]}" | sort); do
      say "running $script"
      case "$script" in
        *.js) mongosh --quiet "${mongo_auth[@]}" "$init_url" "$script" ;;
        *.sh) MONGO_INIT_URL="$init_url" bash "$script" ;;
      esac || { stop_all; die "$script failed"; }
    done
    kill -TERM "$fdb_pid" 2>/dev/null || true
    wait "$fdb_pid" 2>/dev/null || true
    fdb_pid=""
  fi
  sync
  touch "$INITIALIZED"
  say "first start done"
else
  write_config
  start_postgres
  # A newer image's extension files upgrade the catalog (a no-op when the versions match).
  psql_q -c 'ALTER EXTENSION documentdb_core UPDATE' -c 'ALTER EXTENSION documentdb UPDATE' >/dev/null 2>&1 ||
    say "WARNING: ALTER EXTENSION documentdb UPDATE failed"
  check_documentdb
fi

auth=off
if [ -n "$user" ] || [ "$(cat "$AUTH_FILE" 2>/dev/null)" = on ]; then auth=on; fi
start_ferretdb "$auth" --listen-addr=0.0.0.0:27017
say "PostgreSQL $(postgres --version | awk '{print $3}') (pid $pg_pid, socket $RUN_DIR) and FerretDB $DOCSHARE_FERRETDB_VERSION (pid $fdb_pid, :27017, authentication $auth)"
rc=0
wait -n "$pg_pid" "$fdb_pid" || rc=$?
[ "$stopping" = 1 ] && exit 0
say "$(kill -0 "$pg_pid" 2>/dev/null && echo FerretDB || echo PostgreSQL) exited ($rc); stopping the other"
stop_all
exit "$(( rc == 0 ? 1 : rc ))"
