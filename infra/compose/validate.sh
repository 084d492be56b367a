#!/usr/bin/env bash
# Validates docker-compose.yml and the local override without an engine: `docker-compose config`
# (Debian's docker-compose, installed on first use) parses, interpolates and schema-checks them,
# and the override must change images only.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if ! command -v docker-compose >/dev/null 2>&1; then
  echo "[compose] installing Debian's docker-compose to validate the file"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends docker-compose >/dev/null 2>&1 \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends docker-compose >/dev/null; }
fi
# Secrets are files: validation gets placeholders, never the real ones.
placeholder="$(mktemp -d)"
trap 'rm -rf "$placeholder"' EXIT
for s in $(sed -n 's/^  \([a-z_]*\): { file: .*/\1/p' docker-compose.yml); do echo placeholder >"$placeholder/$s"; done
export SECRETS_DIR="$placeholder"
# The project's name is the file's top-level `name:` (compose v2). Compose v1, which validates here,
# refuses that key: it gets the file without that one line (as infra/compose/compose.ts hands it),
# relative paths still resolving against the repository.
if ! grep -qxE 'name: docshare' docker-compose.yml; then
  echo "[compose] docker-compose.yml must name its project: a top-level 'name: docshare'" >&2
  exit 1
fi
v1="$placeholder/docker-compose.yml"
sed '/^name: /d' docker-compose.yml >"$v1"
[ "$(diff docker-compose.yml "$v1" | grep -c '^[<>]')" = 1 ] || { echo "[compose] the v1 copy must differ by the name line only" >&2; exit 1; }
dc() { docker-compose --project-directory . -f "$v1" "$@"; }
dc config -q
docker-compose --project-directory . -f "$v1" -f docker-compose.local.yml config -q
services=$(dc config --services | sort | tr '\n' ' ')
echo "[compose] docker-compose.yml is valid: $services"
# The servers, and every service of the registry (libs/contracts/src/services.ts; the project's Node
# reads it, as npm run does). infra/test/services-registry.test.ts checks each one's wiring.
node_bin=node; [ -x node_modules/.bin/node ] && node_bin=node_modules/.bin/node
apps="$("$node_bin" --input-type=module -e "const { SERVICE_NAMES } = await import('@docshare/contracts/services'); console.log(SERVICE_NAMES.join(' '))")"
[ -n "$apps" ] || { echo "[compose] the services registry names no service" >&2; exit 1; }
for needed in kafka mongodb elasticsearch minio minio-init redis $apps; do
  case " $services " in *" $needed "*) ;; *) echo "[compose] missing service: $needed" >&2; exit 1 ;; esac
done
# The override may set `image:` and nothing else.
if grep -vE '^\s*(#.*)?$|^services:$|^  [a-z-]+:$|^    image: ' docker-compose.local.yml; then
  echo "[compose] docker-compose.local.yml must change images only (lines above)" >&2
  exit 1
fi
# Every image is pinned: no floating or missing tag, no :latest.
if dc config | grep -E '^\s+image: ' | grep -vE ':v?[0-9][^ ]*$|:[0-9a-f]{12}$'; then
  echo "[compose] unpinned image (above)" >&2
  exit 1
fi
echo "[compose] docker-compose.local.yml changes images only; every image is pinned"
# The gateway's port: no host address by default (an explicit 0.0.0.0 answers nowhere on podman
# 4.3: netavark makes it a rule for destination 0.0.0.0 only), one address with BIND_ADDRESS.
gateway_ports() { dc config | sed -n '/^  gateway:$/,/^  [a-z]/p' | sed -n '/^    ports:$/,/^    [a-z]/p'; }
published="$(PORT=18080 gateway_ports)"
if ! grep -qE '^    - published: 18080$' <<<"$published" || grep -qE 'host_ip|[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+' <<<"$published"; then
  echo "[compose] the gateway must be published without a host address by default, on PORT:" >&2
  echo "$published" >&2
  exit 1
fi
published="$(PORT=18080 BIND_ADDRESS=127.0.0.1: gateway_ports)"
if ! grep -qE '^    - 127\.0\.0\.1:18080:8080/tcp$' <<<"$published"; then
  echo "[compose] BIND_ADDRESS=127.0.0.1: must publish the gateway on 127.0.0.1 only:" >&2
  echo "$published" >&2
  exit 1
fi
if ! TRUST_PROXY=1 dc config | sed -n '/^  gateway:$/,/^  [a-z]/p' | grep -qE "^      TRUST_PROXY: '1'$"; then
  echo "[compose] TRUST_PROXY does not reach the gateway" >&2
  exit 1
fi
echo "[compose] the gateway is published on every interface by default, on BIND_ADDRESS when set; TRUST_PROXY reaches it"
# The observability profile: prometheus and grafana start only with `--profile observability`,
# every other service without it; Grafana's UI is published on 127.0.0.1 only, Prometheus nowhere.
config="$(GRAFANA_PORT=13000 dc config)"
profiled="$(awk '/^  [a-z-]+:$/ { s=$1 } /^    profiles:$/ { getline; print s, $2 }' <<<"$(sed -n '/^services:$/,/^[a-z]/p' <<<"$config")" | sort | tr '\n' ' ')"
if [ "$profiled" != "grafana: observability prometheus: observability " ]; then
  echo "[compose] only prometheus and grafana belong to a profile, observability: got '$profiled'" >&2
  exit 1
fi
service_ports() { sed -n "/^  $1:\$/,/^  [a-z]/p" <<<"$config" | sed -n '/^    ports:$/,/^    [a-z]/p'; }
if ! grep -qE '^    - 127\.0\.0\.1:13000:3000/tcp$' <<<"$(service_ports grafana)" || [ -n "$(service_ports prometheus)" ]; then
  echo "[compose] Grafana must be published on 127.0.0.1:GRAFANA_PORT only, Prometheus not at all:" >&2
  service_ports grafana >&2
  exit 1
fi
echo "[compose] the observability profile: prometheus (unpublished) and grafana (127.0.0.1:GRAFANA_PORT) only"
