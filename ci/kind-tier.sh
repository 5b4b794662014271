#!/usr/bin/env bash
# The kind tier (docs/kind.md, "The kind tier"): one incident scenario on real kubelets.
# `faultline run --provider kind` forms a cluster from the real node image
# (ci/node-image/build-real.sh), runs scenarios/kind/stale-device-mount.yaml with its
# expectations checked, and tears it down; then nothing of ours may be left in the engine.
#
# Called by ci/docker-tier.sh after its tests (one real cluster at a time on a 2-core machine);
# by hand: FAULTLINE_KIND_REAL_NODE_IMAGE=<tag> FAULTLINE_BIN=target/debug/faultline bash ci/kind-tier.sh
# FAULTLINE_KIND_REAL_NODE_IMAGE=off (no real node image could be built): SKIPPED.
# Prints its wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
image="${FAULTLINE_KIND_REAL_NODE_IMAGE:?the real node image (ci/node-image/build-real.sh), or off}"
if [ "$image" = off ]; then
  echo "kind tier: SKIPPED (no real node image)"
  exit 0
fi
bin="${FAULTLINE_BIN:-${CARGO_TARGET_DIR:-target}/debug/faultline}"
out="$(mktemp -d /tmp/faultline-kind-tier.XXXXXX)"
# Its own journal directory: a kept or crashed cluster of this tier never meets another run's.
export FAULTLINE_KIND_STATE_DIR="$out/state"

rc=0
"$bin" run --provider kind --node-image "$image" --verbose --report-dir "$out/run" \
  scenarios/kind/stale-device-mount.yaml || rc=$?
echo "kind tier: faultline run exited $rc ($(( $(date +%s) - started )) s); reports in $out/run"

# Nothing of ours may be left: the run removes its cluster whatever the verdict. Only this
# tier's clusters count (named after its scenario): other work may share the engine.
ours() {
  { docker ps -a --filter label=dev.faultline.cluster --format '{{.Label "dev.faultline.cluster"}}'
    docker network ls --filter label=dev.faultline.cluster --format '{{.Label "dev.faultline.cluster"}}'
    docker volume ls --filter label=dev.faultline.cluster --format '{{.Label "dev.faultline.cluster"}}'
  } | grep -E '^kind-stale-device-mount-' | sort -u || true
}
left="$(ours)"
if [ -n "$left" ]; then
  echo "kind tier: clusters left in the engine: $left" >&2
  docker ps -a --filter label=dev.faultline.cluster >&2
  exit 1
fi
echo "kind tier: wall time $(( $(date +%s) - started )) s"
exit "$rc"
