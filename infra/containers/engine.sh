# shellcheck shell=bash
# The container engine for compose and testcontainers: Docker where a daemon answers, otherwise
# podman (Debian's, installed on first use) with this directory's containers.conf and its
# Docker-compatible API socket. Sourced by images.sh and compose scripts; never executed.
#   engine_init   -> sets ENGINE (docker|podman), exports DOCKER_HOST for compose/testcontainers
ENGINE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PODMAN_SOCKET="${DOCSHARE_PODMAN_SOCKET:-/run/docshare-podman/podman.sock}"

elog() { printf '[containers] %s\n' "$*" >&2; }
edie() { printf '[containers] ERROR: %s\n' "$*" >&2; exit 1; }

# Debian packages for podman on these machines (../shared/infra/README.md): runc (crun refuses
# the hybrid cgroup layout), netavark + aardvark-dns + iptables (networks, DNS by name),
# mmdebstrap (the base image), docker-compose (compose v1, speaks to podman's socket).
PODMAN_PACKAGES=(podman runc netavark aardvark-dns iptables uidmap fuse-overlayfs slirp4netns mmdebstrap docker-compose)

install_podman() {
  local missing=() p
  for p in "${PODMAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || edie "podman is missing and installing it needs root: apt-get install ${missing[*]}"
  elog "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${missing[@]}" >/tmp/docshare-apt.log 2>&1 ||
    { apt-get update >>/tmp/docshare-apt.log 2>&1 && apt-get install -y --no-install-recommends "${missing[@]}" >>/tmp/docshare-apt.log 2>&1; } ||
    { tail -n 20 /tmp/docshare-apt.log >&2; edie "apt-get install failed (log: /tmp/docshare-apt.log)"; }
}

socket_answers() {
  curl -fsS --max-time 3 --unix-socket "$1" http://d/v1.41/version >/dev/null 2>&1
}

# Podman's Docker-compatible API, started once and left running (like a daemon) for this boot.
ensure_podman_socket() {
  # A service left running by an earlier run was seen to stop starting containers ("write child:
  # broken pipe" from runc, with unreaped conmon children) while still answering /version. So a
  # service is restarted when it holds defunct children, or when no container runs (nobody uses
  # it; a fresh one costs a second). Containers survive a restart: conmon keeps them, not the API.
  local pid
  pid=$(pgrep -f "podman system service --time=0 unix://$PODMAN_SOCKET" | head -n 1 || true)
  if [ -n "$pid" ] && { ps --ppid "$pid" -o stat= 2>/dev/null | grep -q '^Z' || [ -z "$(podman ps -q 2>/dev/null)" ]; }; then
    elog "restarting podman's API service (pid $pid): idle, or holding defunct children"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  socket_answers "$PODMAN_SOCKET" && return 0
  mkdir -p "$(dirname "$PODMAN_SOCKET")"
  rm -f "$PODMAN_SOCKET"
  elog "starting podman's API socket: $PODMAN_SOCKET"
  setsid nohup podman system service --time=0 "unix://$PODMAN_SOCKET" >"$(dirname "$PODMAN_SOCKET")/service.log" 2>&1 < /dev/null &
  local i
  for i in $(seq 1 50); do
    socket_answers "$PODMAN_SOCKET" && return 0
    sleep 0.2
  done
  edie "podman system service did not answer on $PODMAN_SOCKET (log: $(dirname "$PODMAN_SOCKET")/service.log)"
}

engine_init() {
  if [ "${DOCSHARE_CONTAINER_ENGINE:-}" != "podman" ] && command -v docker >/dev/null 2>&1 &&
    docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
    ENGINE=docker
  else
    install_podman
    export CONTAINERS_CONF="$ENGINE_DIR/containers.conf"
    ENGINE=podman
    ensure_podman_socket
    export DOCKER_HOST="unix://$PODMAN_SOCKET"
  fi
  export ENGINE
}

# engine <args...>: the engine's CLI
engine() { "$ENGINE" "$@"; }
