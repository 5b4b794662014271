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

# A machine restored from a snapshot keeps /var/run but not its processes: dockerd trusts
# containerd.pid if any process has that pid (a kernel worker, say) and then waits forever for
# a socket nobody serves ("timeout waiting for containerd to start"). With no dockerd running,
# a pid file whose process is not containerd is stale, and a containerd left by a killed
# dockerd has no owner: clear both so dockerd starts its own.
clear_stale_engine_state() {
  local pidfile=/var/run/docker/containerd/containerd.pid pid
  # A killed dockerd can linger as a zombie when nothing reaps it: it does not count.
  pid="$(cat /var/run/docker.pid 2>/dev/null || true)"
  if [ -n "$pid" ] && running_as "$pid" dockerd; then
    return 0
  fi
  rm -f /var/run/docker.pid
  [ -f "$pidfile" ] || return 0
  pid="$(cat "$pidfile" 2>/dev/null || true)"
  if running_as "$pid" containerd; then
    echo "docker tier: stopping containerd (pid $pid) left by a dockerd that is gone"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 10); do
      running_as "$pid" containerd || break
      sleep 1
    done
  else
    echo "docker tier: $pidfile names pid $pid, which is not a running containerd: removing it"
  fi
  rm -f "$pidfile"
}

# running_as PID NAME: PID is a live (not zombie) process whose command name is NAME.
running_as() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  # /proc/PID/stat: "pid (comm) state ..."; comm may hold spaces, so split at the last ')'.
  [ "${stat#*(}" != "$stat" ] || return 1
  local comm="${stat#*(}"
  comm="${comm%)*}"
  local state="${stat##*) }"
  state="${state%% *}"
  [ "$comm" = "$2" ] && [ "$state" != Z ]
}

start_dockerd() {
  clear_stale_engine_state
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
