#!/usr/bin/env bash
# Validates docker-compose.yml without a Docker engine: `docker-compose config` (Debian's
# docker-compose, installed on first use) parses, interpolates and schema-checks the file.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if ! command -v docker-compose >/dev/null 2>&1; then
  echo "[compose] installing Debian's docker-compose to validate the file"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends docker-compose >/dev/null 2>&1 \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends docker-compose >/dev/null; }
fi
# Required secrets get placeholders: validation must not need real ones.
JWT_SECRET=validation-placeholder MINIO_SECRET_KEY=validation-placeholder docker-compose -f docker-compose.yml config -q
services=$(JWT_SECRET=x MINIO_SECRET_KEY=y docker-compose -f docker-compose.yml config --services | sort | tr '\n' ' ')
echo "[compose] docker-compose.yml is valid: $services"
for needed in kafka mongodb elasticsearch minio redis docs-command stats-projector files-projector search-projector gateway; do
  case " $services " in *" $needed "*) ;; *) echo "[compose] missing service: $needed" >&2; exit 1 ;; esac
done
