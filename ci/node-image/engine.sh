# Sourced by ci/docker-tier.sh: a Docker engine that can run privileged node containers.
#
# ensure_dockerd: start dockerd in the background (log: $FAULTLINE_DOCKERD_LOG) unless one answers.
# ensure_privileged: start a privileged container; only when that fails because the sandbox
#   cannot grant CAP_SYS_RESOURCE ("unable to apply caps: operation not permitted"), register
#   ci/node-image/runc-drop-sys-resource as dockerd's default runtime and restart dockerd.
#   A machine that grants every capability is left as it is.

FAULTLINE_DOCKERD_LOG="${FAULTLINE_DOCKERD_LOG:-/var/log/faultline-dockerd.log}"
FAULTLINE_DAEMON_JSON="${FAULTLINE_DAEMON_JSON:-/etc/docker/daemon.json}"

engine_answers() {
  docker info >/dev/null 2>&1
}

start_dockerd() {
  echo "docker tier: starting dockerd (log: $FAULTLINE_DOCKERD_LOG)"
  # setsid: dockerd outlives this script (later CI steps and runs reuse it).
  setsid dockerd >>"$FAULTLINE_DOCKERD_LOG" 2>&1 < /dev/null &
  for _ in $(seq 1 60); do
    engine_answers && return 0
    sleep 1
  done
  echo "docker tier: dockerd did not answer within 60 s; its log:" >&2
  tail -n 40 "$FAULTLINE_DOCKERD_LOG" >&2
  return 1
}

stop_dockerd() {
  local pid
  pid="$(cat /var/run/docker.pid 2>/dev/null || true)"
  [ -n "$pid" ] || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 30); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 1
  done
  echo "docker tier: dockerd (pid $pid) did not stop within 30 s" >&2
  return 1
}

ensure_dockerd() {
  if engine_answers; then
    echo "docker tier: using the running Docker engine"
    return 0
  fi
  start_dockerd
}

# The error runc gives when the kernel refuses a capability the spec asks for.
CAPS_REFUSED="unable to apply caps: operation not permitted"

privileged_probe() {
  # Any local image will do: the probe only needs the container to start.
  docker run --rm --privileged "$1" true 2>&1
}

ensure_privileged() {
  local image="$1" out wrapper
  if out="$(privileged_probe "$image")"; then
    echo "docker tier: privileged containers start as they are"
    return 0
  fi
  if ! grep -q "$CAPS_REFUSED" <<<"$out"; then
    echo "docker tier: a privileged container fails for another reason:" >&2
    echo "$out" >&2
    return 1
  fi
  # A stable copy: dockerd keeps using it after this checkout is gone.
  wrapper=/usr/local/libexec/faultline/runc-drop-sys-resource
  install -D -m 0755 "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/runc-drop-sys-resource" "$wrapper"
  echo "docker tier: this machine cannot grant CAP_SYS_RESOURCE; registering $wrapper as dockerd's default runtime"
  mkdir -p "$(dirname "$FAULTLINE_DAEMON_JSON")"
  local current='{}'
  [ -s "$FAULTLINE_DAEMON_JSON" ] && current="$(cat "$FAULTLINE_DAEMON_JSON")"
  jq --arg w "$wrapper" '.runtimes["faultline-runc"] = {path: $w} | .["default-runtime"] = "faultline-runc"' \
    <<<"$current" >"$FAULTLINE_DAEMON_JSON.new"
  mv "$FAULTLINE_DAEMON_JSON.new" "$FAULTLINE_DAEMON_JSON"
  stop_dockerd
  start_dockerd
  if ! out="$(privileged_probe "$image")"; then
    echo "docker tier: privileged containers still fail with the runtime wrapper:" >&2
    echo "$out" >&2
    return 1
  fi
  echo "docker tier: privileged containers start (CAP_SYS_RESOURCE dropped by the runtime wrapper)"
}
