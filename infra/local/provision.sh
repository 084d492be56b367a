#!/usr/bin/env bash
# Downloads/builds the local servers into the cache (outside the repo). Idempotent: a service
# whose pinned version is already in the cache is skipped in well under a second.
#   infra/local/provision.sh [kafka|elasticsearch|minio|ferretdb|redis|all]...
# Cache: ${DOCSHARE_INFRA_CACHE:-$HOME/.cache/docshare/infra}; versions in <cache>/versions.txt
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

NICE=(nice -n 10)

need_cmd() { command -v "$1" >/dev/null 2>&1 || die "'$1' is required (${2:-})"; }

mvn_q() {
  need_cmd mvn "Maven fetches Kafka and Elasticsearch from Maven Central"
  local out="$CACHE/mvn-last.log"
  if ! mvn -B -Dstyle.color=never -Dmaven.repo.local="$M2_REPO" "$@" >"$out" 2>&1; then
    tail -n 30 "$out" >&2
    die "mvn $* failed (full output: $out)"
  fi
}

# ---- Kafka: jars from Maven Central --------------------------------------------------------
provision_kafka() {
  local home jh
  home="$(kafka_home)"
  jh="$(kafka_java_home)" || die "Kafka needs a JDK >= 11 (none under /usr/lib/jvm or on PATH)"
  if [ ! -f "$home/.provisioned" ]; then
    log "kafka: collecting kafka_${KAFKA_SCALA}:$KAFKA_VERSION + kafka-tools + slf4j-reload4j via mvn"
    rm -rf "$home"
    mkdir -p "$home/pom"
    cat >"$home/pom/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.docshare</groupId><artifactId>kafka-libs</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_${KAFKA_SCALA}</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <!-- TopicCommand & co. (org.apache.kafka.tools.*); connect-runtime is only for connect tools -->
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>${KAFKA_VERSION}</version>
      <exclusions><exclusion><groupId>org.apache.kafka</groupId><artifactId>connect-runtime</artifactId></exclusion></exclusions>
    </dependency>
    <!-- kafka_2.13 brings no slf4j binding -->
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId><version>${SLF4J_RELOAD4J_VERSION}</version></dependency>
  </dependencies>
</project>
EOF
    mvn_q -f "$home/pom/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$home/libs"
    [ -f "$home/libs/kafka_${KAFKA_SCALA}-${KAFKA_VERSION}.jar" ] || die "kafka: jars missing after mvn"
    touch "$home/.provisioned"
  fi
  record_version kafka "$KAFKA_VERSION (kafka_${KAFKA_SCALA}, kafka-tools, slf4j-reload4j $SLF4J_RELOAD4J_VERSION; $(find "$home/libs" -name '*.jar' | wc -l) jars)"
  record_version kafka.java "$jh (java $(java_major "$jh"))"
}

# ---- Elasticsearch: integ-test-zip from Maven Central ---------------------------------------
provision_elasticsearch() {
  local v jh home dir zip
  jh="$(es_java_home)" || die "Elasticsearch needs a JDK (9.x: 21+, 8.x: 17-23) under /usr/lib/jvm; none found"
  v="$(es_version)"
  dir="$CACHE/elasticsearch/$v"
  home="$(es_home "$v")"
  if [ ! -f "$dir/.provisioned" ]; then
    log "elasticsearch: fetching integ-test-zip $v via mvn (java: $jh)"
    rm -rf "$dir"
    mkdir -p "$dir"
    # The 9.x artifacts have no .pom on Central: dependency:get warns and still downloads.
    mvn_q dependency:get -Dtransitive=false \
      -Dartifact="org.elasticsearch.distribution.integ-test-zip:elasticsearch:$v:zip"
    zip="$M2_REPO/org/elasticsearch/distribution/integ-test-zip/elasticsearch/$v/elasticsearch-$v.zip"
    [ -f "$zip" ] || die "elasticsearch: $zip not downloaded"
    need_cmd unzip "to unpack the Elasticsearch zip"
    unzip -q "$zip" -d "$dir"
    [ -x "$home/bin/elasticsearch" ] || die "elasticsearch: $home/bin/elasticsearch missing after unzip"
    chmod -R a+rX "$dir"
    touch "$dir/.provisioned"
  fi
  ensure_es_user
  es_grant_traverse "$home"
  local modules
  modules="$(find "$home/modules" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort | paste -sd, -)"
  record_version elasticsearch "$v (org.elasticsearch.distribution.integ-test-zip:elasticsearch:$v:zip)"
  record_version elasticsearch.java "$jh (java $(java_major "$jh"))"
  record_version elasticsearch.modules "$modules"
  if [ -d "$home/modules/x-pack-security" ]; then
    record_version elasticsearch.x-pack-security "present (started with xpack.security.enabled=false)"
  else
    record_version elasticsearch.x-pack-security "absent"
  fi
}

# The Go module + build caches (~3 GB after MinIO) are only needed while building: once the
# binary is in the cache they are dropped unless DOCSHARE_INFRA_KEEP_GO_CACHE=1.
prune_go_caches() {
  [ "${DOCSHARE_INFRA_KEEP_GO_CACHE:-0}" = "1" ] && return 0
  log "pruning the build-only Go caches under $CACHE/go (DOCSHARE_INFRA_KEEP_GO_CACHE=1 keeps them)"
  go clean -cache -modcache >/dev/null 2>&1 || true
  rm -rf "$CACHE/go"
}

# go_install <binary path> <module@version> <what, for the log>: `go install` into the cache once
go_install() {
  local bin="$1" module="$2"
  [ -x "$bin" ] && return 0
  need_cmd go "$3 is built with 'go install' (Go >= 1.24)"
  log "$3: go install $module (nice -n 10; minutes on 2 cores)"
  mkdir -p "$(dirname "$bin")"
  CGO_ENABLED=0 GOBIN="$(dirname "$bin")" "${NICE[@]}" go install -trimpath "$module"
  [ -x "$bin" ] || die "$3: binary not produced"
  prune_go_caches
}

# ---- MinIO: go install from the Go module proxy ----------------------------------------------
provision_minio() {
  local bin
  bin="$(minio_bin)"
  go_install "$bin" "github.com/minio/minio@$MINIO_VERSION" minio
  record_version minio "$MINIO_VERSION ($("$bin" --version 2>/dev/null | head -1 | sed 's/^minio version //'))"
}

# ---- mc (MinIO's client): only the container images need it (bucket, user and policy setup) --
provision_mc() {
  go_install "$(mc_bin)" "github.com/minio/mc@$MC_VERSION" mc
  record_version mc "$MC_VERSION"
}

# ---- FerretDB: built from module source with build/version/version.txt ------------------------
provision_ferretdb() {
  local base bin src modjson moddir commit
  base="$CACHE/ferretdb/$FERRETDB_VERSION"
  bin="$(ferretdb_bin)"
  if [ ! -x "$bin" ]; then
    need_cmd go "FerretDB is built from its module source"
    log "ferretdb: go mod download github.com/FerretDB/FerretDB@$FERRETDB_VERSION"
    modjson="$(cd "$CACHE" && go mod download -json "github.com/FerretDB/FerretDB@$FERRETDB_VERSION")"
    moddir="$(printf '%s' "$modjson" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    commit="$(printf '%s' "$modjson" | sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]*\)".*/\1/p' | head -1)"
    [ -d "$moddir" ] || die "ferretdb: module download gave no Dir"
    src="$base/src"
    rm -rf "$src"
    mkdir -p "$base"
    cp -R "$moddir" "$src"
    chmod -R u+w "$src"
    # A plain `go install` panics at start: version.txt is generated by FerretDB's own tooling.
    printf '%s\n' "$FERRETDB_VERSION" >"$src/build/version/version.txt"
    [ -n "$commit" ] && printf '%s\n' "$commit" >"$src/build/version/commit.txt"
    printf 'docshare-local\n' >"$src/build/version/package.txt"
    log "ferretdb: go build ./cmd/ferretdb (nice -n 10)"
    mkdir -p "$(dirname "$bin")"
    (cd "$src" && CGO_ENABLED=0 "${NICE[@]}" go build -trimpath -o "$bin" ./cmd/ferretdb)
    [ -x "$bin" ] || die "ferretdb: binary not produced"
    prune_go_caches
  fi
  record_version ferretdb "$("$bin" --version 2>/dev/null | sed -n 's/^version: //p' | head -1) (sqlite handler; built from module source)"
}

# ---- Redis: Debian package --------------------------------------------------------------------
provision_redis() {
  pkg_install redis-server redis-server
  pkg_install redis-cli redis-tools
  local deb=""
  command -v dpkg-query >/dev/null 2>&1 && deb="$(dpkg-query -W -f='${Version}' redis-server 2>/dev/null || true)"
  record_version redis "$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')${deb:+ (debian $deb)}"
}

main() {
  local services s t0
  # mc is not a server: provisioned on request only (infra/containers/images.sh asks for it).
  if [ "$*" = "mc" ]; then provision_mc; return; fi
  mapfile -t services < <(expand_services "$@")
  exec 9>"$CACHE/.provision.lock"
  flock 9 2>/dev/null || true
  for s in "${services[@]}"; do
    t0="$(now)"
    "provision_$s"
    log "$s: provisioned in $(elapsed "$t0")s"
  done
  log "versions: $VERSIONS_FILE"
}

main "$@"
