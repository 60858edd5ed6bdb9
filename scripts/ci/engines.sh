#!/usr/bin/env bash
# The container engines the runtime tests use, on this machine and in CI (.ci/run):
#   - Docker Engine (Debian's docker.io): started in the background when `docker info` fails;
#   - base images built from Debian packages with mmdebstrap (no image registry is reachable) and
#     imported as wharf-ci/node:bookworm and wharf-ci/python:bookworm; the root filesystem tarballs
#     are cached under /var/cache/wharf-ci/ by a hash of their package list, so a second run only
#     imports them, and a run where the engine already has the images does nothing;
#   - a one-node Swarm on that engine (advertised on 127.0.0.1), for the swarm runtime;
#   - Podman, when installed: its Docker-compatible API on unix:///run/wharf-podman.sock, with the
#     node base image imported too.
# Idempotent. Ends by printing the env exports the tests read, also written to
# /run/wharf-ci-engines.env as KEY=value lines (`set -a; . /run/wharf-ci-engines.env; set +a`).
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin" # dockerd lives in /usr/sbin

CACHE_DIR=/var/cache/wharf-ci
ENV_FILE=/run/wharf-ci-engines.env
DOCKERD_LOG=/var/log/wharf-dockerd.log
PODMAN_LOG=/var/log/wharf-podman.log
PODMAN_SOCKET=/run/wharf-podman.sock
CONTAINERS_CONF=/etc/containers/containers.conf
SUITE=bookworm
NODE_IMAGE=wharf-ci/node:bookworm
PYTHON_IMAGE=wharf-ci/python:bookworm
NODE_PACKAGES=nodejs,npm,ca-certificates
PYTHON_PACKAGES=python3,python3-venv,python3-pip,ca-certificates
# No docs, man pages or translations in the images (~50 MB less each); no fsync while unpacking.
MMDEBSTRAP_OPTS=(
  --variant=minbase
  --dpkgopt=force-unsafe-io
  '--dpkgopt=path-exclude=/usr/share/man/*'
  '--dpkgopt=path-exclude=/usr/share/info/*'
  '--dpkgopt=path-exclude=/usr/share/locale/*'
  '--dpkgopt=path-exclude=/usr/share/doc/*'
  '--dpkgopt=path-include=/usr/share/doc/*/copyright'
)
IMPORT_CHANGES=(-c 'CMD ["bash"]' -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin')
# Images carry the hash of what they were built from, so a changed package list rebuilds them.
HASH_LABEL=wharf.ci.hash

log() { printf 'engines: %s\n' "$*"; }
die() {
  printf 'engines: error: %s\n' "$*" >&2
  exit 1
}
now() { date +%s; }

# ---------------------------------------------------------------------------------------------
# Docker Engine
docker_answers() { timeout 10 docker info >/dev/null 2>&1; }

ensure_docker() {
  command -v docker >/dev/null || die "the docker client is not installed (Debian package docker.io)"
  if docker_answers; then
    log "docker: engine answers ($(docker version --format '{{.Server.Version}}' 2>/dev/null))"
    return
  fi
  command -v dockerd >/dev/null || die "dockerd is not installed (Debian package docker.io)"
  local pidfile=/var/run/docker.pid pid
  pid=$(cat "$pidfile" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    log "docker: dockerd (pid $pid) is running but not answering yet; waiting"
  else
    rm -f "$pidfile" # a stale pid file makes dockerd refuse to start
    log "docker: starting dockerd (log: $DOCKERD_LOG)"
    # Its own session, no inherited descriptors: it outlives this script and its caller's pipes.
    (cd / && setsid nohup dockerd </dev/null >>"$DOCKERD_LOG" 2>&1 &)
  fi
  local deadline=$(($(now) + 60))
  until docker_answers; do
    if [ "$(now)" -ge "$deadline" ]; then
      tail -n 20 "$DOCKERD_LOG" >&2 || true
      die "dockerd did not answer within 60 s (see $DOCKERD_LOG)"
    fi
    sleep 1
  done
  log "docker: engine answers ($(docker version --format '{{.Server.Version}}' 2>/dev/null))"
}

# ---------------------------------------------------------------------------------------------
# Base images
hash_of() { printf '%s\n' "$SUITE" "$1" "${MMDEBSTRAP_OPTS[@]}" | sha256sum | cut -c1-12; }
tar_of() { printf '%s/%s-%s-%s.tar' "$CACHE_DIR" "$1" "$SUITE" "$2"; } # name hash

# The hash label of an image in an engine (docker or podman), empty when it has no such image.
image_hash() {
  "$1" image inspect --format "{{ index .Config.Labels \"$HASH_LABEL\" }}" "$2" 2>/dev/null || true
}

# A scratch directory on tmpfs when there is room: mmdebstrap unpacks ~1 GB there, and removing a
# chroot from this machine's disk alone takes ~30 s.
mmdebstrap_tmpdir() {
  local avail
  avail=$(df --output=avail -k /dev/shm 2>/dev/null | tail -n 1 | tr -d ' ' || true)
  if [ "$(stat -fc %T /dev/shm 2>/dev/null || true)" = tmpfs ] && [ "${avail:-0}" -gt $((4 * 1024 * 1024)) ]; then
    echo /dev/shm/wharf-ci-mmdebstrap
  else
    echo "$CACHE_DIR/tmp"
  fi
}

build_tar() { # name packages tar
  local name=$1 packages=$2 tar=$3 tmp start
  command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (Debian package mmdebstrap)"
  tmp=$(mmdebstrap_tmpdir)
  mkdir -p "$tmp"
  log "$name: building $(basename "$tar") with mmdebstrap ($packages; log: $CACHE_DIR/$name.log)"
  start=$(now)
  rm -rf "$tar.partial"
  if ! TMPDIR=$tmp mmdebstrap "${MMDEBSTRAP_OPTS[@]}" --format=tar --include="$packages" "$SUITE" \
    "$tar.partial" </dev/null >"$CACHE_DIR/$name.log" 2>&1; then
    rm -rf "$tar.partial"
    tail -n 30 "$CACHE_DIR/$name.log" >&2 || true
    die "mmdebstrap failed for $name (see $CACHE_DIR/$name.log)"
  fi
  mv "$tar.partial" "$tar"
  rmdir "$tmp" 2>/dev/null || true # unless the other build still uses it
  # Older tarballs of this image are stale now.
  find "$CACHE_DIR" -maxdepth 1 -name "$name-$SUITE-*.tar" ! -path "$tar" -delete
  log "$name: built in $(($(now) - start)) s ($(($(stat -c %s "$tar") / 1000000)) MB)"
}

import_image() { # engine tar tag hash
  local engine=$1 tar=$2 tag=$3 hash=$4 start quiet=()
  [ "$engine" = podman ] && quiet=(--quiet) # else it prints its copy progress
  start=$(now)
  "$engine" import "${quiet[@]}" "${IMPORT_CHANGES[@]}" -c "LABEL $HASH_LABEL=$hash" "$tar" "$tag" >/dev/null
  log "$engine: imported $tag in $(($(now) - start)) s"
}

# Waits for the given background jobs; fails when any of them failed.
wait_all() {
  local pid failed=0
  for pid; do wait "$pid" || failed=1; done
  return "$failed"
}

# One image: its tarball (from the cache, else built), imported into each engine that lacks it.
provide_image() { # name packages tag engine...
  local name=$1 packages=$2 tag=$3 hash tar engine pids=()
  shift 3
  hash=$(hash_of "$packages")
  tar=$(tar_of "$name" "$hash")
  [ -s "$tar" ] || build_tar "$name" "$packages" "$tar"
  for engine; do
    import_image "$engine" "$tar" "$tag" "$hash" &
    pids+=($!)
  done
  wait_all "${pids[@]}"
}

# The engines among "$@" whose copy of the image is missing or built from another package list.
engines_lacking() { # packages tag engine...
  local packages=$1 tag=$2 hash engine
  shift 2
  hash=$(hash_of "$packages")
  for engine; do
    if [ "$(image_hash "$engine" "$tag")" = "$hash" ]; then
      log "$engine: $tag is up to date" >&2
    else
      echo "$engine"
    fi
  done
}

# Both images at once: mmdebstrap waits on the network a lot, so on 2 cores building both in
# parallel took ~110 s where one after the other took ~160 s.
ensure_images() {
  mkdir -p "$CACHE_DIR"
  local node_engines=(docker) python_engines pids=()
  [ "$HAVE_PODMAN" = 0 ] || node_engines+=(podman)
  mapfile -t node_engines < <(engines_lacking "$NODE_PACKAGES" "$NODE_IMAGE" "${node_engines[@]}")
  mapfile -t python_engines < <(engines_lacking "$PYTHON_PACKAGES" "$PYTHON_IMAGE" docker)
  if [ ${#node_engines[@]} -gt 0 ]; then
    provide_image node "$NODE_PACKAGES" "$NODE_IMAGE" "${node_engines[@]}" &
    pids+=($!)
  fi
  if [ ${#python_engines[@]} -gt 0 ]; then
    provide_image python "$PYTHON_PACKAGES" "$PYTHON_IMAGE" "${python_engines[@]}" &
    pids+=($!)
  fi
  wait_all "${pids[@]}" || die "providing the base images failed"
}

# ---------------------------------------------------------------------------------------------
# Podman
podman_answers() {
  [ -S "$PODMAN_SOCKET" ] || return 1
  if command -v curl >/dev/null; then
    [ "$(curl -fsS --max-time 3 --unix-socket "$PODMAN_SOCKET" http://d/_ping 2>/dev/null)" = OK ]
  else
    node -e '
      const req = require("http").get({ socketPath: process.argv[1], path: "/_ping", timeout: 3000 }, (res) =>
        process.exit(res.statusCode === 200 ? 0 : 1));
      req.on("error", () => process.exit(1)).on("timeout", () => process.exit(1));
    ' "$PODMAN_SOCKET"
  fi
}

# [containers] default_ulimits = []: Podman's default (nofile=1048576) is above this machine's hard
# limit, and runc then refuses to start any container. Other settings in the file are kept.
ensure_containers_conf() {
  local current='' next
  [ -f "$CONTAINERS_CONF" ] && current=$(cat "$CONTAINERS_CONF")
  next=$(printf '%s\n' "$current" | awk '
    function emit() { if (!done) { print "default_ulimits = []"; done = 1 } }
    skipping { if ($0 ~ /\]/) skipping = 0; next }
    /^[ \t]*\[[^]=]*\][ \t]*(#.*)?$/ {
      if (section && !done) emit()
      section = ($0 ~ /^[ \t]*\[containers\]/)
      print
      next
    }
    section && /^[ \t]*default_ulimits[ \t]*=/ {
      emit()
      rest = $0
      sub(/^[^=]*=/, "", rest)
      if (rest ~ /\[/ && rest !~ /\]/) skipping = 1 # a multi-line array
      next
    }
    { print }
    END {
      if (section) emit()
      if (!done) { print ""; print "[containers]"; print "default_ulimits = []" }
    }
  ' | sed '/./,$!d') # no leading blank lines when the file was new
  if [ "$next" != "$current" ]; then
    mkdir -p "$(dirname "$CONTAINERS_CONF")"
    printf '%s\n' "$next" >"$CONTAINERS_CONF"
    log "podman: set default_ulimits = [] in $CONTAINERS_CONF"
  fi
}

ensure_podman_service() {
  if podman_answers; then
    log "podman: API answers at unix://$PODMAN_SOCKET"
    return
  fi
  rm -f "$PODMAN_SOCKET" # a stale socket file from a service that is gone
  log "podman: starting podman system service (log: $PODMAN_LOG)"
  # From /: the service outlives this checkout, and conmon fails every container start ("Failed to get
  # working directory") once the folder it was started in is deleted (a CI clone removed after its run).
  (cd / && setsid nohup podman system service --time=0 "unix://$PODMAN_SOCKET" </dev/null >>"$PODMAN_LOG" 2>&1 &)
  local deadline=$(($(now) + 30))
  until podman_answers; do
    if [ "$(now)" -ge "$deadline" ]; then
      tail -n 20 "$PODMAN_LOG" >&2 || true
      die "the podman service did not answer within 30 s (see $PODMAN_LOG)"
    fi
    sleep 0.5
  done
  log "podman: API answers at unix://$PODMAN_SOCKET"
}

# ---------------------------------------------------------------------------------------------
# A one-node Swarm on the Docker engine, for the swarm runtime's tests (`--runtime swarm`). Its
# address is loopback: nothing outside this machine joins it. Services of earlier runs' platforms
# (a killed run cannot remove its own) go.
ensure_swarm() {
  local state
  state=$(docker info --format '{{.Swarm.LocalNodeState}}' 2>/dev/null || echo unknown)
  if [ "$state" != active ]; then
    log "swarm: initialising a one-node Swarm on 127.0.0.1 (state was $state)"
    docker swarm init --advertise-addr 127.0.0.1 >/dev/null || die "docker swarm init failed"
  fi
  local stale
  stale=$(docker service ls -q --filter label=dev.wharf.platform 2>/dev/null || true)
  if [ -n "$stale" ]; then
    # shellcheck disable=SC2086
    docker service rm $stale >/dev/null 2>&1 || true
    log "swarm: removed $(wc -w <<<"$stale") services left by earlier runs"
  fi
  log "swarm: a manager ($(docker info --format '{{.Swarm.NodeID}}' 2>/dev/null))"
}

# ---------------------------------------------------------------------------------------------
started=$(now)
HAVE_PODMAN=0
command -v podman >/dev/null && HAVE_PODMAN=1

ensure_docker
# Project networks earlier runs' platforms left unused (a platform removes its own when it stops its
# containers; one killed mid-run cannot): the engine has room for a few dozen bridge networks only.
pruned=$(docker network prune -f --filter label=dev.wharf.platform 2>/dev/null | grep -c '^wharf-' || true)
log "docker: removed $pruned unused project networks left by earlier runs"
[ "$HAVE_PODMAN" = 0 ] || ensure_containers_conf
ensure_swarm
ensure_images
if [ "$HAVE_PODMAN" = 1 ]; then
  ensure_podman_service
else
  log "podman: not installed; Podman tests are skipped (and fail under CI=true)"
fi

env_lines=("WHARF_TEST_NODE_IMAGE=$NODE_IMAGE" "WHARF_TEST_PYTHON_IMAGE=$PYTHON_IMAGE")
podman_answers && env_lines+=("WHARF_TEST_PODMAN_HOST=unix://$PODMAN_SOCKET")
printf '%s\n' "${env_lines[@]}" >"$ENV_FILE.tmp"
mv "$ENV_FILE.tmp" "$ENV_FILE"
log "ready in $(($(now) - started)) s; env written to $ENV_FILE:"
printf 'export %s\n' "${env_lines[@]}"
