#!/usr/bin/env bash
# The Docker-engine tier (docs/kind.md): the kind provider's real path against a real Docker
# engine, with a stand-in node image built from Debian packages (no registry serves kindest/node
# here and no Kubernetes server binaries exist, so bring-up stops where kubeadm would run).
#
#   1. docker.io, debootstrap and jq from Debian, when missing;
#   2. dockerd, started in the background unless an engine answers (it keeps running for the
#      rest of CI); the CAP_SYS_RESOURCE runtime fit only where a privileged container fails;
#   3. the node images, each built once and reused by the content hash of its recipe
#      (ci/node-image/): the stand-in, and the real one (Debian's containerd and the upstream
#      binaries of ci/upstream.sh) that forms a real cluster in tests/docker_cluster.rs;
#   4. the tier's tests (FAULTLINE_DOCKER=1), then a check that nothing of ours is left;
#   5. the kind tier (ci/kind-tier.sh): an incident scenario on real kubelets, after the tests
#      so that at most one real cluster of the tier is up at a time.
#
# Prints its wall time; it must stay under 15 minutes (FAULTLINE_DOCKER_TIER_BUDGET seconds),
# not counting a build of the real node image (printed apart: minutes on a cold Go cache).
# Without Go, or with a module the proxy refuses (ci/upstream.sh exit 3 or 4), the real cluster
# test says SKIPPED and the rest runs.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
budget="${FAULTLINE_DOCKER_TIER_BUDGET:-900}"

missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v jq >/dev/null || missing+=(jq)
if [ ${#missing[@]} -gt 0 ]; then
  echo "docker tier: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# shellcheck source=ci/node-image/engine.sh
source ci/node-image/engine.sh
ensure_dockerd
image="$(bash ci/node-image/build.sh)"
ensure_privileged "$image"
real_started=$(date +%s)
real_rc=0
real_image="$(bash ci/node-image/build-real.sh)" || real_rc=$?
real_secs=$(( $(date +%s) - real_started ))
if [ "$real_rc" != 0 ]; then
  if [ "$real_rc" = 3 ] || [ "$real_rc" = 4 ]; then
    echo "docker tier: no real node image (ci/upstream.sh exit $real_rc, its reason above): the real cluster test is SKIPPED"
    real_image=off
  else
    echo "docker tier: building the real node image failed (exit $real_rc)" >&2
    exit 1
  fi
fi
echo "docker tier: real node image $real_image ready in ${real_secs} s"
# Real node images of other recipes are a gigabyte each: remove them (the engine refuses to
# remove one a container still uses, which is then kept).
if [ "$real_image" != off ]; then
  docker images --format '{{.Repository}}:{{.Tag}}' faultline-node | grep -- '-real-' | grep -vxF "$real_image" |
    while read -r old; do
      docker image rm "$old" >/dev/null 2>&1 && echo "docker tier: removed the older real node image $old" || true
    done || true # grep finds no other image: nothing to remove (pipefail would end the tier here)
fi
export FAULTLINE_KIND_REAL_NODE_IMAGE="$real_image"

export FAULTLINE_DOCKER=1
export FAULTLINE_KIND_NODE_IMAGE="$image"
# The same build as ci/test.sh (workspace-wide features), so after it nothing is rebuilt.
cargo build --workspace --locked --bins
cargo test --workspace --locked --no-run \
  --test docker_engine --test docker_engine_env --test docker_cleanup --test docker_run --test docker_cluster \
  --test evidence 2>&1 | tail -n 1
built=$(date +%s)
echo "docker tier: engine, node image and build ready in $(( built - started )) s"
export FAULTLINE_BIN="${CARGO_TARGET_DIR:-target}/debug/faultline"
# Two at a time: each test brings up two node containers on a 2-core machine.
cargo test --workspace --locked \
  --test docker_engine --test docker_engine_env --test docker_cleanup --test docker_run --test docker_cluster \
  --test evidence -- --test-threads=2
echo "docker tier: tests ran in $(( $(date +%s) - built )) s"

# Every test removes what it created; anything labelled by faultline now is a leak.
left="$(docker ps -aq --filter label=dev.faultline.cluster)$(docker network ls -q --filter label=dev.faultline.cluster)"
if [ -n "$left" ]; then
  echo "docker tier: resources left in the engine:" >&2
  docker ps -a --filter label=dev.faultline.cluster >&2
  docker network ls --filter label=dev.faultline.cluster >&2
  exit 1
fi
docker info >/dev/null || { echo "docker tier: the engine no longer answers" >&2; exit 1; }

kind_started=$(date +%s)
bash ci/kind-tier.sh
echo "docker tier: kind tier ran in $(( $(date +%s) - kind_started )) s"

elapsed=$(( $(date +%s) - started - real_secs ))
echo "docker tier: passed in ${elapsed} s (budget ${budget} s; the real node image's ${real_secs} s apart)"
if [ "$elapsed" -gt "$budget" ]; then
  echo "docker tier: over its budget of ${budget} s" >&2
  exit 1
fi
