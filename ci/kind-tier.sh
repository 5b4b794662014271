#!/usr/bin/env bash
# The kind tier (docs/kind.md, "The kind tier"): one real cluster, three uses.
#   1. `faultline diff scenarios/kind/stale-device-mount.yaml`: the incident's fault on the sim,
#      then on a kind cluster of the real node image (ci/node-image/build-real.sh) with its
#      expectations judged on real kubelets (the exit code), and the side-by-side fidelity
#      report with its figure (docs/fidelity.md). The cluster is kept for 2.
#   2. `faultline run --provider existing` against that cluster's kubeconfig (its context
#      renamed to the allow-listed `faultline-kind-tier`): a pack scenario with no node fault
#      that fits any topology (scenarios/controller-rbac.yaml: the workspace controller as a host
#      process with only its ServiceAccount's RBAC brings a workspace to Active; its pods'
#      busybox image built here from the node image's static busybox and loaded at bring-up,
#      StorageClass `longhorn` given to the hostpath driver: ci/kind/longhorn-class.yaml).
#   3. The cluster removed with the commands the run printed; nothing of this tier may be left.
#
# Called by ci/docker-tier.sh after its tests (one real cluster at a time on a 2-core machine);
# by hand: FAULTLINE_KIND_REAL_NODE_IMAGE=<tag> FAULTLINE_BIN=target/debug/faultline bash ci/kind-tier.sh
# (target/debug/workspace-controller must be built). FAULTLINE_KIND_REAL_NODE_IMAGE=off: SKIPPED.
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

# Only this tier's clusters count (named after its scenario): other work may share the engine.
ours() {
  { docker ps -a --filter label=dev.faultline.cluster --format '{{.Label "dev.faultline.cluster"}}'
    docker network ls --filter label=dev.faultline.cluster --format '{{.Label "dev.faultline.cluster"}}'
    docker volume ls --filter label=dev.faultline.cluster --format '{{.Label "dev.faultline.cluster"}}'
  } | grep -E '^kind-stale-device-mount-' | sort -u || true
}
remove=""
finish() {
  if [ -n "$remove" ]; then
    bash -c "$remove" >/dev/null 2>&1 || echo "kind tier: removing the kept cluster failed: $remove" >&2
  fi
}
trap finish EXIT

# The workspace controller's pods run busybox:1.36 (its default image): one built here, on
# nothing, from the node image's static busybox, loaded into every node at bring-up.
docker build -q -t busybox:1.36 - >/dev/null <<EOF
FROM $image AS src
FROM scratch
COPY --from=src /bin/busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
EOF
export FAULTLINE_KIND_IMAGES=busybox:1.36

set +e
"$bin" diff scenarios/kind/stale-device-mount.yaml --node-image "$image" --keep-cluster \
  --report-dir "$out/diff" 2>&1 | tee "$out/diff.log"
diff_rc=${PIPESTATUS[0]}
set -e
after_diff=$(date +%s)
echo "kind tier: faultline diff exited $diff_rc ($(( after_diff - started )) s); report $out/diff/fidelity.txt"
remove="$(sed -n 's/.*; remove it with: //p' "$out/diff.log" | head -n 1)"
kubeconfig="$(sed -n 's/.* kept: KUBECONFIG=\([^ ]*\) .*/\1/p' "$out/diff.log" | head -n 1)"

existing_rc=0
if [ -n "$kubeconfig" ]; then
  kc="$out/existing.kubeconfig"
  # The allow-listed name (scenarios/faultline.yaml existing.allowedContexts), in a copy.
  sed -E 's/^(  name|current-context): kubernetes-admin@.*/\1: faultline-kind-tier/' "$kubeconfig" >"$kc"
  KUBECONFIG="$kc" "$bin" kube apply -f ci/kind/longhorn-class.yaml
  KUBECONFIG="$kc" "$bin" run --provider existing --context faultline-kind-tier --verbose \
    --report-dir "$out/existing" scenarios/controller-rbac.yaml || existing_rc=$?
  # A pack fault scenario through the node agent (busybox's nsenter; the image is loaded, so
  # nothing is pulled): a kubelet restart under three Active workspaces on real kubelets.
  FAULTLINE_NODE_AGENT_IMAGE=busybox:1.36 KUBECONFIG="$kc" "$bin" run --provider existing \
    --context faultline-kind-tier --verbose --report-dir "$out/existing-restart" \
    scenarios/kubelet-restart.yaml || existing_rc=$?
  echo "kind tier: faultline run --provider existing exited $existing_rc ($(( $(date +%s) - after_diff )) s)"
else
  echo "kind tier: no kept cluster (the diff's kind run did not bring one up)" >&2
  existing_rc=1
fi

finish
remove=""
left="$(ours)"
if [ -n "$left" ]; then
  echo "kind tier: clusters left in the engine: $left" >&2
  docker ps -a --filter label=dev.faultline.cluster >&2
  exit 1
fi
docker image rm busybox:1.36 >/dev/null 2>&1 || true
echo "kind tier: wall time $(( $(date +%s) - started )) s (diff exit $diff_rc, existing exit $existing_rc); nothing left"
[ "$diff_rc" = 0 ] && [ "$existing_rc" = 0 ]
