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

# ---- FerretDB 2 + DocumentDB on PostgreSQL ----------------------------------------------------
# PostgreSQL 15 and the extensions DocumentDB requires (pg_cron, PostGIS, RUM) come from Debian;
# DocumentDB (pg_documentdb_core + pg_documentdb), pgvector and the static libbson it links are
# built from the vendored tarballs (../shared/vendor, SHA256SUMS checked) and installed into
# PostgreSQL's directories; the built files are kept in the cache (stage/), so a warm run only
# compares them with what is installed. FerretDB 2 is `go install`ed from the Go module proxy.
PG_RUNTIME_DEBS=(postgresql-$PG_MAJOR postgresql-$PG_MAJOR-cron postgresql-$PG_MAJOR-postgis-3 postgresql-$PG_MAJOR-rum)
PG_BUILD_DEBS=(postgresql-server-dev-$PG_MAJOR libpcre2-dev libintelrdfpmath-dev libkrb5-dev libicu-dev libpq-dev
  cmake build-essential pkg-config)

verify_vendor() {
  [ -f "$VENDOR_DIR/SHA256SUMS" ] || die "documentdb: no $VENDOR_DIR/SHA256SUMS (the vendored tarballs; set DOCSHARE_VENDOR_DIR)"
  local f
  for f in "documentdb-$DOCUMENTDB_VERSION" "mongo-c-driver-$LIBBSON_VERSION" "pgvector-$PGVECTOR_VERSION"; do
    grep -q " $f.tar.gz\$" "$VENDOR_DIR/SHA256SUMS" || die "documentdb: $f.tar.gz is not listed in $VENDOR_DIR/SHA256SUMS"
    (cd "$VENDOR_DIR" && grep " $f.tar.gz\$" SHA256SUMS | sha256sum -c --quiet -) >&2 ||
      die "documentdb: $VENDOR_DIR/$f.tar.gz does not match its SHA256SUMS line"
  done
}

build_documentdb() {
  local home="$1" src="$1/src" deps="$1/deps" logs="$1/logs" stage="$1/stage"
  local make=(make -j"$(nproc)" PG_CONFIG="$PG_BIN/pg_config" with_llvm=no)
  rm -rf "$src" "$deps" "$stage"
  mkdir -p "$src" "$deps/pkgconfig" "$logs" "$stage"
  local t
  for t in "documentdb-$DOCUMENTDB_VERSION" "mongo-c-driver-$LIBBSON_VERSION" "pgvector-$PGVECTOR_VERSION"; do
    tar -xzf "$VENDOR_DIR/$t.tar.gz" -C "$src"
  done
  log "documentdb: libbson $LIBBSON_VERSION (static, linked into pg_documentdb_core)"
  mkdir -p "$src/mongo-c-driver-$LIBBSON_VERSION/_build"
  (cd "$src/mongo-c-driver-$LIBBSON_VERSION/_build" &&
    cmake -DENABLE_MONGOC=OFF -DENABLE_TESTS=OFF -DENABLE_EXAMPLES=OFF -DENABLE_STATIC=ON -DENABLE_ICU=OFF \
      -DBUILD_VERSION="$LIBBSON_VERSION" -DCMAKE_C_FLAGS="-fPIC -g" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$deps" .. >"$logs/libbson.log" 2>&1 &&
    "${NICE[@]}" make -j"$(nproc)" install >>"$logs/libbson.log" 2>&1) || { tail -n 20 "$logs/libbson.log" >&2; die "documentdb: libbson build failed"; }
  # Upstream builds IntelRDFPMath 2.0u3; Debian's 2.0u2 libbidgcc000.a has the same ABI and only
  # lacks the pkg-config file under the name DocumentDB asks for.
  cat >"$deps/pkgconfig/intelmathlib.pc" <<'PC'
prefix=/usr
libdir=/usr/lib/x86_64-linux-gnu
includedir=/usr/include

Name: intelmathlib
Description: Intel Decimal Floating point math library (Debian libintelrdfpmath-dev)
Version: 2.0 Update 2
Cflags: -I${includedir}
Libs: -L${libdir} -l:libbidgcc000.a
PC
  export PKG_CONFIG_PATH="$deps/lib/pkgconfig:$deps/pkgconfig"
  log "documentdb: pgvector $PGVECTOR_VERSION"
  (cd "$src/pgvector-$PGVECTOR_VERSION" && "${NICE[@]}" "${make[@]}" OPTFLAGS="" >"$logs/pgvector.log" 2>&1 &&
    make install PG_CONFIG="$PG_BIN/pg_config" with_llvm=no DESTDIR="$stage" >>"$logs/pgvector.log" 2>&1) ||
    { tail -n 20 "$logs/pgvector.log" >&2; die "documentdb: pgvector build failed"; }
  local d="$src/documentdb-$DOCUMENTDB_VERSION" p
  # Fixes of our own to DocumentDB (infra/local/patches/documentdb-*.patch, each says why)
  for p in "$INFRA_DIR"/patches/documentdb-*.patch; do
    [ -e "$p" ] || continue
    log "documentdb: applying $(basename "$p")"
    patch -s -p1 -d "$d" <"$p" || die "documentdb: $(basename "$p") does not apply"
  done
  # FerretDB compares the extension's version string exactly (a mismatch is only a warning in
  # getLog startupWarnings); a tarball build would report "unknown" for its git fields.
  sed -i -e 's/GIT_VERSION="unknown"/GIT_VERSION="HEAD"/' -e 's/BUILD_VER=" buildId:unknown"/BUILD_VER=" buildId:0"/' \
    -e "s/GIT_SHA=\" sha:unknown\"/GIT_SHA=\" sha:$DOCUMENTDB_GIT_SHA\"/" "$d/scripts/generate_extension_version.sh"
  grep -q "sha:$DOCUMENTDB_GIT_SHA" "$d/scripts/generate_extension_version.sh" || die "documentdb: version patch did not apply"
  local part
  for part in pg_documentdb_core pg_documentdb; do
    log "documentdb: $part (nice -n 10; about a minute per part on 2 cores)"
    # pg_documentdb builds against the installed core, so each part is installed (system and stage) in turn
    (cd "$d" && "${NICE[@]}" "${make[@]}" -C "$part" >"$logs/$part.log" 2>&1 &&
      "${make[@]}" -C "$part" install >>"$logs/$part.log" 2>&1 &&
      "${make[@]}" -C "$part" install DESTDIR="$stage" >>"$logs/$part.log" 2>&1) ||
      { tail -n 30 "$logs/$part.log" >&2; die "documentdb: $part build failed (log: $logs/$part.log)"; }
  done
  rm -rf "$src" "$deps"
  documentdb_recipe >"$home/.built"
}

# documentdb_recipe: what the build is made of besides the tarballs (our patches); a cached
# build from another recipe is rebuilt
documentdb_recipe() {
  { printf '%s\n' "$DOCUMENTDB_VERSION" "$PGVECTOR_VERSION" "$LIBBSON_VERSION" "$DOCUMENTDB_VERSION_STRING"
    cat "$INFRA_DIR"/patches/documentdb-*.patch 2>/dev/null || true; } | sha256sum | cut -c1-16
}

# install_staged <stage>: copies the built extension files into PostgreSQL's directories where
# they differ (a warm run compares ~30 files and writes nothing)
install_staged() {
  local stage="$1" f target changed=0
  while IFS= read -r -d '' f; do
    target="/${f#"$stage"/}"
    cmp -s "$f" "$target" 2>/dev/null && continue
    is_root || die "documentdb: $target needs installing and that needs root"
    mkdir -p "$(dirname "$target")"
    cp -f "$f" "$target"
    changed=$((changed + 1))
  done < <(find "$stage" -type f -print0)
  [ "$changed" -eq 0 ] || log "documentdb: installed $changed files into PostgreSQL's directories"
}

provision_ferretdb() {
  local home bin
  home="$(documentdb_home)"
  bin="$(ferretdb_bin)"
  deb_install "${PG_RUNTIME_DEBS[@]}"
  if [ "$(cat "$home/.built" 2>/dev/null)" != "$(documentdb_recipe)" ]; then
    verify_vendor
    deb_install "${PG_BUILD_DEBS[@]}"
    log "documentdb: building $DOCUMENTDB_VERSION for PostgreSQL $PG_MAJOR from $VENDOR_DIR"
    build_documentdb "$home"
  fi
  install_staged "$home/stage"
  if [ ! -x "$bin" ]; then
    need_cmd go "FerretDB is built with 'go install'"
    log "ferretdb: go install github.com/FerretDB/FerretDB/v2/cmd/ferretdb@$FERRETDB_VERSION ($FERRETDB_GO_TOOLCHAIN; nice -n 10)"
    mkdir -p "$(dirname "$bin")"
    GOTOOLCHAIN="$FERRETDB_GO_TOOLCHAIN" CGO_ENABLED=0 GOBIN="$(dirname "$bin")" "${NICE[@]}" \
      go install -trimpath "github.com/FerretDB/FerretDB/v2/cmd/ferretdb@$FERRETDB_VERSION"
    [ -x "$bin" ] || die "ferretdb: binary not produced"
    prune_go_caches
  fi
  record_version ferretdb "$("$bin" --version 2>/dev/null | sed -n 's/^version: //p' | head -1) on PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') + DocumentDB $DOCUMENTDB_VERSION"
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
