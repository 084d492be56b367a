#!/usr/bin/env bash
# Starts the local servers on 127.0.0.1 in the background and waits until each answers.
#   infra/local/start.sh [kafka|elasticsearch|minio|ferretdb|redis|all]...   (default: all)
# Provisions first when needed (fast no-op when cached). Data, logs and pid files go under
# ${DOCSHARE_INFRA_DATA:-<cache>/../data}/<server>/; the app's settings go to <data>/stack.env.
# Env: DOCSHARE_<SERVICE>_PORT (see lib/common.sh), DOCSHARE_START_TIMEOUT (s, default 180),
#      DOCSHARE_START_PARALLEL=0 to start one server at a time (default: launch all, then wait),
#      DOCSHARE_STARTED_FILE: where to list (one a line) the servers this run launched itself.
# Every port is checked distinct and free before any server is launched; when a server fails to
# start (or on Ctrl-C), the servers this run launched are stopped again, never left orphaned.
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

PARALLEL="${DOCSHARE_START_PARALLEL:-1}"
NODE_BIN="$(command -v node || true)"
PROBE="$INFRA_DIR/lib/probe.mjs"

# ---- launching ---------------------------------------------------------------------------
# launch <service> <workdir> <cmd...>: runs cmd in its own session/process group (setsid) with
# stdin closed and stdout+stderr appended to the service log; records "pid starttime".
launch() {
  local svc="$1" workdir="$2"; shift 2
  local pf logf tmp pid
  pf="$(pid_file "$svc")"
  logf="$(log_file "$svc")"
  tmp="$pf.launch"
  rm -f "$tmp"
  printf '\n===== %s start %s =====\n' "$svc" "$(date -Is)" >>"$logf"
  # shellcheck disable=SC2016
  setsid bash -c 'echo $$ >"$0"; cd "$1" || exit 1; shift; exec "$@"' "$tmp" "$workdir" "$@" \
    </dev/null >>"$logf" 2>&1 &
  for _ in $(seq 1 100); do
    [ -s "$tmp" ] && break
    sleep 0.05
  done
  [ -s "$tmp" ] || die "$svc: launcher did not report a pid"
  pid="$(cat "$tmp")"
  rm -f "$tmp"
  printf '%s %s\n' "$pid" "$(proc_start_time "$pid" || echo 0)" >"$pf"
}

port_free_or_die() {
  local svc="$1" port
  shift
  for port in "$@"; do
    tcp_open 127.0.0.1 "$port" && die "$svc: 127.0.0.1:$port is already in use by another process (set DOCSHARE_*_PORT)"
  done
  return 0
}

# service_env <service> <lines...>: the env lines the app consumes, kept per service
service_env() {
  local svc="$1"; shift
  (umask 077 && printf '%s\n' "$@" >"$DATA/$svc/service.env")
}

write_stack_env() {
  local svc out tmp
  out="$DATA/stack.env"
  tmp="$(mktemp "$out.XXXXXX")"
  chmod 600 "$tmp"
  {
    echo "# written by infra/local/start.sh $(date -Is); servers running at that time"
    for svc in "${ALL_SERVICES[@]}"; do
      if running_pid "$svc" >/dev/null && [ -f "$DATA/$svc/service.env" ]; then
        cat "$DATA/$svc/service.env"
      fi
    done
  } >"$tmp"
  mv "$tmp" "$out"
}

# ---- per-service preparation + launch ------------------------------------------------------
start_redis() {
  local dir="$DATA/redis"
  port_free_or_die redis "$REDIS_PORT"
  launch redis "$dir" redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' \
    --appendonly no --dir "$dir" --daemonize no --protected-mode yes
  service_env redis "REDIS_URL=redis://127.0.0.1:$REDIS_PORT"
}
ready_redis() { [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = "PONG" ]; }
url_redis() { echo "redis://127.0.0.1:$REDIS_PORT"; }

start_ferretdb() {
  local dir="$DATA/ferretdb"
  port_free_or_die ferretdb "$FERRETDB_PORT"
  # PostgreSQL + DocumentDB, and FerretDB 2 in front (lib/ferretdb-run.sh): one server to start.sh
  launch ferretdb "$dir" bash "$INFRA_DIR/lib/ferretdb-run.sh" "$dir" "$FERRETDB_PORT"
  service_env ferretdb "MONGO_URL=mongodb://127.0.0.1:$FERRETDB_PORT/"
}
ready_ferretdb() {
  tcp_open 127.0.0.1 "$FERRETDB_PORT" || return 1
  if [ -n "$NODE_BIN" ]; then
    "$NODE_BIN" "$PROBE" mongo 127.0.0.1 "$FERRETDB_PORT" >/dev/null 2>&1
  else
    grep -q 'and FerretDB' "$(log_file ferretdb)"
  fi
}
url_ferretdb() { echo "mongodb://127.0.0.1:$FERRETDB_PORT/"; }

random_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

start_minio() {
  local dir="$DATA/minio" cred
  port_free_or_die minio "$MINIO_PORT" "$MINIO_CONSOLE_PORT"
  mkdir -p "$dir/data"
  cred="$dir/credentials.env"
  if [ ! -s "$cred" ]; then
    # generated once per data dir; never leaves it (0600)
    (umask 077 && printf 'MINIO_ROOT_USER=docshare%s\nMINIO_ROOT_PASSWORD=%s\n' \
      "$(random_hex 6)" "$(random_hex 20)" >"$cred")
  fi
  chmod 600 "$cred"
  local user pass
  user="$(sed -n 's/^MINIO_ROOT_USER=//p' "$cred")"
  pass="$(sed -n 's/^MINIO_ROOT_PASSWORD=//p' "$cred")"
  launch minio "$dir" env MINIO_ROOT_USER="$user" MINIO_ROOT_PASSWORD="$pass" \
    MINIO_BROWSER=on MINIO_UPDATE=off \
    "$(minio_bin)" server --anonymous \
    --address "127.0.0.1:$MINIO_PORT" --console-address "127.0.0.1:$MINIO_CONSOLE_PORT" "$dir/data"
  service_env minio "MINIO_ENDPOINT=http://127.0.0.1:$MINIO_PORT" \
    "MINIO_ACCESS_KEY=$user" "MINIO_SECRET_KEY=$pass"
}
ready_minio() { curl -fs -o /dev/null --max-time 2 "http://127.0.0.1:$MINIO_PORT/minio/health/live"; }
url_minio() { echo "http://127.0.0.1:$MINIO_PORT (console http://127.0.0.1:$MINIO_CONSOLE_PORT)"; }

start_kafka() {
  local dir="$DATA/kafka" home jh
  home="$(kafka_home)"
  jh="$(kafka_java_home)" || die "kafka: no JDK >= 11 found"
  port_free_or_die kafka "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"
  mkdir -p "$dir/config" "$dir/kraft" "$dir/logs"
  cat >"$dir/config/server.properties" <<EOF
# generated by infra/local/start.sh; single-node KRaft (broker + controller in one process)
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/kraft
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
delete.topic.enable=true
EOF
  cat >"$dir/config/log4j.properties" <<'EOF'
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.org.apache.kafka.clients=WARN
EOF
  # StorageTool prints the cluster id on stdout: its own logging goes to stderr, WARN only
  printf '%s\n' 'log4j.rootLogger=WARN, stderr' 'log4j.appender.stderr=org.apache.log4j.ConsoleAppender' \
    'log4j.appender.stderr.Target=System.err' 'log4j.appender.stderr.layout=org.apache.log4j.PatternLayout' \
    'log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n' >"$dir/config/tools-log4j.properties"
  if [ ! -f "$dir/kraft/meta.properties" ]; then
    local storage=("$jh/bin/java" -Dlog4j.configuration="file:$dir/config/tools-log4j.properties"
      -cp "$home/libs/*" kafka.tools.StorageTool)
    [ -s "$dir/cluster.id" ] || "${storage[@]}" random-uuid >"$dir/cluster.id"
    "${storage[@]}" format -t "$(cat "$dir/cluster.id")" -c "$dir/config/server.properties" \
      --ignore-formatted >>"$(log_file kafka)" 2>&1 ||
      { tail -n 20 "$(log_file kafka)" >&2; die "kafka: storage format failed"; }
  fi
  launch kafka "$dir" "$jh/bin/java" -Xms512m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
    -Dlog4j.configuration="file:$dir/config/log4j.properties" -Dkafka.logs.dir="$dir/logs" \
    -cp "$home/libs/*" kafka.Kafka "$dir/config/server.properties"
  service_env kafka "KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT"
}
ready_kafka() {
  tcp_open 127.0.0.1 "$KAFKA_PORT" || return 1
  if [ -n "$NODE_BIN" ]; then
    "$NODE_BIN" "$PROBE" kafka 127.0.0.1 "$KAFKA_PORT" >/dev/null 2>&1
  else
    grep -q 'Kafka Server started' "$(log_file kafka)"
  fi
}
url_kafka() { echo "127.0.0.1:$KAFKA_PORT (controller 127.0.0.1:$KAFKA_CONTROLLER_PORT)"; }

start_elasticsearch() {
  local dir="$DATA/elasticsearch" v home jh security="" as_user=()
  v="$(es_version)"
  home="$(es_home "$v")"
  jh="$(es_java_home)" || die "elasticsearch: no suitable JDK"
  port_free_or_die elasticsearch "$ES_PORT" "$ES_TRANSPORT_PORT"
  mkdir -p "$dir"
  if [ -f "$dir/es.version" ] && [ "$(cat "$dir/es.version")" != "$v" ] && [ -d "$dir/data" ]; then
    die "elasticsearch: $dir/data was written by ES $(cat "$dir/es.version"), now $v; remove $dir/data"
  fi
  echo "$v" >"$dir/es.version"
  mkdir -p "$dir/data" "$dir/logs" "$dir/tmp"
  if [ ! -f "$dir/config/.copied-from-$v" ]; then
    rm -rf "$dir/config"
    cp -R "$home/config" "$dir/config"
    touch "$dir/config/.copied-from-$v"
  fi
  [ -d "$home/modules/x-pack-security" ] && security="xpack.security.enabled: false"
  cat >"$dir/config/elasticsearch.yml" <<EOF
# generated by infra/local/start.sh
cluster.name: docshare-local
node.name: docshare-local-1
path.data: $dir/data
path.logs: $dir/logs
network.host: 127.0.0.1
http.port: $ES_PORT
transport.port: $ES_TRANSPORT_PORT
discovery.type: single-node
# a nearly full dev disk must not flip indices to read-only
cluster.routing.allocation.disk.threshold_enabled: false
$security
EOF
  mkdir -p "$dir/config/jvm.options.d"
  cat >"$dir/config/jvm.options.d/docshare.options" <<EOF
-Xms512m
-Xmx512m
-XX:HeapDumpPath=$dir/logs
EOF
  if is_root; then
    id -u "$ES_USER" >/dev/null 2>&1 || die "elasticsearch: user $ES_USER missing (run provision.sh elasticsearch)"
    chown -R "$ES_USER:$ES_USER" "$dir"
    # pid/log files stay root-owned; ES only needs to traverse to and write its own dirs
    es_grant_traverse "$dir"
    as_user=(setpriv --reuid="$ES_USER" --regid="$ES_USER" --init-groups)
  fi
  launch elasticsearch "$dir/logs" env -u JAVA_HOME HOME="$dir" ES_JAVA_HOME="$jh" \
    ES_PATH_CONF="$dir/config" ES_TMPDIR="$dir/tmp" \
    "${as_user[@]}" "$home/bin/elasticsearch"
  service_env elasticsearch "ELASTICSEARCH_URL=http://127.0.0.1:$ES_PORT"
}
ready_elasticsearch() {
  local body
  body="$(curl -fsS --max-time 5 "http://127.0.0.1:$ES_PORT/_cluster/health?wait_for_status=yellow&timeout=2s" 2>/dev/null)" || return 1
  case "$body" in *'"status":"green"'* | *'"status":"yellow"'*) return 0 ;; esac
  return 1
}
url_elasticsearch() { echo "http://127.0.0.1:$ES_PORT"; }

# ---- orchestration ---------------------------------------------------------------------------
declare -A T0=() WAS_RUNNING=()
FAILED=()
# servers launched by this run (not found running): the ones a failed start stops again
STARTED=()

# ports_of <service>: the VAR=port pairs a server listens on
ports_of() {
  case "$1" in
    redis) echo "DOCSHARE_REDIS_PORT=$REDIS_PORT" ;;
    ferretdb) echo "DOCSHARE_FERRETDB_PORT=$FERRETDB_PORT" ;;
    minio) echo "DOCSHARE_MINIO_PORT=$MINIO_PORT DOCSHARE_MINIO_CONSOLE_PORT=$MINIO_CONSOLE_PORT" ;;
    kafka) echo "DOCSHARE_KAFKA_PORT=$KAFKA_PORT DOCSHARE_KAFKA_CONTROLLER_PORT=$KAFKA_CONTROLLER_PORT" ;;
    elasticsearch) echo "DOCSHARE_ES_PORT=$ES_PORT DOCSHARE_ES_TRANSPORT_PORT=$ES_TRANSPORT_PORT" ;;
  esac
}

# preflight_ports <services...>: before anything is launched, the ports of the servers to start
# are distinct and free (servers already running hold their own ports). Found half-way, a clash
# would leave the servers launched before it running.
preflight_ports() {
  local svc pair var port problems=()
  local -A owner=()
  for svc in "$@"; do
    for pair in $(ports_of "$svc"); do
      var="${pair%%=*}"; port="${pair#*=}"
      if [ -n "${owner[$port]:-}" ]; then
        problems+=("$var=$port ($svc) collides with ${owner[$port]}=$port")
      else
        owner[$port]="$var"
      fi
    done
  done
  for svc in "$@"; do
    running_pid "$svc" >/dev/null && continue
    for pair in $(ports_of "$svc"); do
      var="${pair%%=*}"; port="${pair#*=}"
      if tcp_open 127.0.0.1 "$port"; then
        problems+=("$var=$port ($svc): 127.0.0.1:$port is already in use by another process")
      fi
    done
  done
  if [ "${#problems[@]}" -gt 0 ]; then
    printf '[infra] ERROR: %s\n' "${problems[@]}" >&2
    die "nothing was started (set the DOCSHARE_*_PORT variables named above)"
  fi
}

# stop_started: stops every server this run launched (after a failed start, or on a signal)
stop_started() {
  local s pid
  for s in "${STARTED[@]}"; do
    if pid="$(running_pid "$s")"; then
      kill_group "$pid"
      printf '%-14s stopped again: this start failed\n' "$s" >&2
    fi
    rm -f "$(pid_file "$s")"
  done
  STARTED=()
}

begin() {
  local svc="$1"
  mkdir -p "$DATA/$svc"
  if running_pid "$svc" >/dev/null; then
    WAS_RUNNING[$svc]=1
    T0[$svc]="$(now)"
    return
  fi
  rm -f "$(pid_file "$svc")"
  T0[$svc]="$(now)"
  # in a subshell so that one server's set-up error (die) does not abort the others
  if ! ( "start_$svc" ); then
    printf '%-14s FAILED: could not be launched (see the error above)\n' "$svc" >&2
    FAILED+=("$svc")
    # it may have been launched before its set-up failed
    local pid
    if pid="$(running_pid "$svc")"; then kill_group "$pid"; fi
    rm -f "$(pid_file "$svc")"
    return 1
  fi
  STARTED+=("$svc")
}

kill_group() {
  local pid="$1"
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in $(seq 1 20); do [ -z "$(group_pids "$pid")" ] && return; sleep 0.25; done
  kill -KILL -- "-$pid" 2>/dev/null || true
}

# poll_once <service>: 0 = ready (line printed), 1 = still starting, 2 = failed (log tail shown)
declare -A DEADLINE=()
poll_once() {
  local svc="$1" pid logf
  logf="$(log_file "$svc")"
  [ -n "${DEADLINE[$svc]:-}" ] || DEADLINE[$svc]=$(( $(date +%s) + START_TIMEOUT ))
  if ! pid="$(running_pid "$svc")"; then
    printf '%-14s FAILED: exited during start-up; last lines of %s:\n' "$svc" "$logf" >&2
    tail -n 40 "$logf" | sed 's/^/    /' >&2
    rm -f "$(pid_file "$svc")"
    FAILED+=("$svc")
    return 2
  fi
  if "ready_$svc"; then
    local note
    note="ready in $(elapsed "${T0[$svc]}")s"
    [ -n "${WAS_RUNNING[$svc]:-}" ] && note="already running"
    printf '%-14s %-62s %s (pid %s, log %s)\n' "$svc" "$("url_$svc")" "$note" "$pid" "$logf"
    return 0
  fi
  if [ "$(date +%s)" -ge "${DEADLINE[$svc]}" ]; then
    printf '%-14s FAILED: not ready after %ss; last lines of %s:\n' "$svc" "$START_TIMEOUT" "$logf" >&2
    tail -n 40 "$logf" | sed 's/^/    /' >&2
    kill_group "$pid"
    rm -f "$(pid_file "$svc")"
    FAILED+=("$svc")
    return 2
  fi
  return 1
}

# await_all <services...>: polls all of them round-robin, so each start time is its own
await_all() {
  local pending=("$@") next s rc
  while [ "${#pending[@]}" -gt 0 ]; do
    next=()
    for s in "${pending[@]}"; do
      rc=0
      poll_once "$s" || rc=$?
      [ "$rc" -eq 1 ] && next+=("$s")
    done
    pending=("${next[@]}")
    [ "${#pending[@]}" -gt 0 ] && sleep 0.2
  done
  return 0
}

main() {
  local services s
  mapfile -t services < <(expand_services "$@")
  preflight_ports "${services[@]}"
  trap 'stop_started; write_stack_env; exit 130' INT TERM
  # provisioning is a fast no-op once cached
  "$INFRA_DIR/provision.sh" "${services[@]}"
  command -v curl >/dev/null 2>&1 || die "curl is required"
  if [ "$PARALLEL" = "1" ]; then
    # slowest first: the JVMs warm up while the rest is launched
    local launched=() ordered=()
    for s in elasticsearch kafka minio ferretdb redis; do
      [[ " ${services[*]} " == *" $s "* ]] && ordered+=("$s")
    done
    for s in "${ordered[@]}"; do begin "$s" && launched+=("$s"); done
    await_all "${launched[@]}"
  else
    for s in "${services[@]}"; do begin "$s" && await_all "$s"; done
  fi
  if [ "${#FAILED[@]}" -gt 0 ]; then stop_started; fi
  trap - INT TERM
  write_stack_env
  if [ -n "${DOCSHARE_STARTED_FILE:-}" ]; then
    if [ "${#STARTED[@]}" -gt 0 ]; then printf '%s\n' "${STARTED[@]}" >"$DOCSHARE_STARTED_FILE"; else : >"$DOCSHARE_STARTED_FILE"; fi
  fi
  echo "env for the app: $DATA/stack.env (mode 0600; load with: set -a; . $DATA/stack.env; set +a)"
  { grep -v -e '^#' -e '^MINIO_SECRET_KEY=' "$DATA/stack.env" || true; } | sed 's/^/  /'
  if grep -q '^MINIO_SECRET_KEY=' "$DATA/stack.env"; then echo "  MINIO_SECRET_KEY=<see stack.env>"; fi
  if [ "${#FAILED[@]}" -gt 0 ]; then
    die "failed to start: ${FAILED[*]}"
  fi
}

main "$@"
