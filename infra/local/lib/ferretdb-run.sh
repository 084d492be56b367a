#!/usr/bin/env bash
# The local MongoDB stand-in as one server: PostgreSQL 15 with the DocumentDB extension, and
# FerretDB 2 in front of it speaking the MongoDB wire protocol. start.sh launches this script in a
# session of its own (setsid), so stop.sh and the chaos suite signal PostgreSQL, FerretDB and this
# script together; this script also stops the other when one of them exits.
#   ferretdb-run.sh <dir> <listen port>
# <dir>/pgdata   PostgreSQL's cluster (owned by $PG_USER; PostgreSQL refuses to run as root)
# <dir>/run      its Unix socket (PostgreSQL listens on no TCP port: nothing to collide with)
# <dir>/state    FerretDB's state
# FerretDB logs at "error" (DOCSHARE_FERRETDB_LOG_LEVEL): at "warn" it dumps every error answer,
# duplicate keys included, which docshare's appends and claims meet as a matter of course.
# Durability: synchronous_commit is on, so an acknowledged write is in the WAL (in the kernel's
# page cache) before FerretDB answers: it survives kill -9 of either process. fsync is off by
# default (DOCSHARE_PG_FSYNC=on turns it on): a power loss of this machine may lose the last
# writes; the compose image keeps fsync on. full_page_writes is always on.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

dir="$1" port="$2"
pgdata="$dir/pgdata" sock="$dir/run" pgport=5432
fsync="${DOCSHARE_PG_FSYNC:-off}"
as_pg=()
if is_root; then as_pg=(setpriv --reuid="$PG_USER" --regid="$PG_USER" --init-groups); fi
say() { printf '[ferretdb-run %s] %s\n' "$(date +%T)" "$*"; }

mkdir -p "$sock" "$dir/state"
if is_root; then
  chown "$PG_USER:" "$sock"
  grant_traverse "$PG_USER" "$dir"
fi
if [ ! -f "$pgdata/PG_VERSION" ]; then
  say "initdb $pgdata"
  install -d -m 700 "$pgdata"
  is_root && chown "$PG_USER:" "$pgdata"
  "${as_pg[@]}" "$PG_BIN/initdb" -D "$pgdata" --username=postgres --encoding=UTF8 --locale=C.UTF-8 --auth=trust >/dev/null
  printf "\ninclude_if_exists = 'docshare.conf'\n" >>"$pgdata/postgresql.conf"
fi
# Rewritten at every start, so a setting changed here reaches existing clusters.
{
  cat <<EOF
# written by infra/local/lib/ferretdb-run.sh at every start
listen_addresses = ''
port = $pgport
unix_socket_directories = '$sock'
max_connections = 200
shared_buffers = 256MB
# DocumentDB's own loopback queries connect over the socket: PostgreSQL listens on no TCP port
documentdb.localhost_connection_string = 'host=$sock'
# See the header: off here by default, so a power loss may lose the last writes
fsync = $fsync
EOF
  cat "$(dirname "${BASH_SOURCE[0]}")/documentdb.conf"
} >"$pgdata/docshare.conf"
is_root && chown "$PG_USER:" "$pgdata/docshare.conf"

pg_pid="" fdb_pid=""
stop_all() {
  [ -n "$fdb_pid" ] && kill -TERM "$fdb_pid" 2>/dev/null
  # SIGINT: PostgreSQL's fast shutdown (clients are disconnected, the cluster is checkpointed)
  [ -n "$pg_pid" ] && kill -INT "$pg_pid" 2>/dev/null
  wait 2>/dev/null || true
}
trap 'stop_all; exit 143' TERM INT

# A postmaster.pid left by a killed server is PostgreSQL's to judge (it checks that pid itself).
"${as_pg[@]}" "$PG_BIN/postgres" -D "$pgdata" &
pg_pid=$!
# postmaster.pid's 8th line turns "ready" once connections are accepted (what pg_ctl -w reads):
# polling with connections instead logs a FATAL for each one refused during crash recovery.
for _ in $(seq 1 1800); do
  [ "$(sed -n 8p "$pgdata/postmaster.pid" 2>/dev/null | tr -d ' ')" = ready ] &&
    "$PG_BIN/pg_isready" -q -h "$sock" -p "$pgport" -U postgres && break
  kill -0 "$pg_pid" 2>/dev/null || { say "PostgreSQL exited during start-up"; exit 1; }
  sleep 0.1
done
psql_q() { "$PG_BIN/psql" -h "$sock" -p "$pgport" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAt "$@"; }
if [ "$(psql_q -c "SELECT count(*) FROM pg_extension WHERE extname = 'documentdb'")" != 1 ]; then
  say "CREATE EXTENSION documentdb CASCADE"
  psql_q -c 'CREATE EXTENSION IF NOT EXISTS documentdb CASCADE' >/dev/null
fi
# FerretDB compares this string exactly and only warns (getLog startupWarnings) on a mismatch:
# refuse to start instead, so a wrong build never runs unnoticed.
want="$DOCUMENTDB_VERSION_STRING"
have="$(psql_q -c 'SELECT documentdb_api.binary_extended_version()')"
if [ "$have" != "$want" ]; then
  say "DocumentDB version mismatch: the extension reports '$have', FerretDB $FERRETDB_VERSION requires '$want' (re-run infra/local/provision.sh ferretdb)"
  stop_all
  exit 1
fi

"$(ferretdb_bin)" --listen-addr="127.0.0.1:$port" \
  --postgresql-url="postgres://postgres@/postgres?host=$sock&port=$pgport" \
  --no-auth --debug-addr=- --telemetry=disable --state-dir="$dir/state" --log-level="${DOCSHARE_FERRETDB_LOG_LEVEL:-error}" &
fdb_pid=$!
say "PostgreSQL (pid $pg_pid, socket $sock) and FerretDB $FERRETDB_VERSION (pid $fdb_pid, 127.0.0.1:$port)"
rc=0
wait -n "$pg_pid" "$fdb_pid" || rc=$?
say "$( kill -0 "$pg_pid" 2>/dev/null && echo FerretDB || echo PostgreSQL) exited ($rc); stopping the other"
stop_all
exit "$rc"
