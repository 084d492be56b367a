#!/usr/bin/env bash
# Installs Debian's Chromium (and a font, so pages render text) for the browser tests
# (tests/browser/, `npm run test:browser`). Idempotent: does nothing when chromium is on PATH.
# Needs root (CI and the project's machines run as root) or sudo.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
  echo "chromium already installed: $(chromium --version 2>/dev/null || echo unknown version)"
  exit 0
fi

SUDO=''
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo 'installing chromium needs root (or sudo)' >&2; exit 1; }
  SUDO='sudo'
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core
echo "installed: $(chromium --version)"
