#!/usr/bin/env bash
# The upstream tier (docs/upstream.md): builds the real control plane's binaries from
# upstream/go.mod (ci/upstream.sh, cached: seconds when warm) and runs faultline-upstream's tests
# against them: etcd + kube-apiserver, kube-controller-manager and kube-scheduler, kubectl.
# (kubelet and kubeadm are the kind tier's; ci/upstream.sh builds them too when asked.)
#
# No Go toolchain or a module the proxy refuses: one line saying so, and the tests still run and
# print SKIPPED. A build failure fails the tier. Prints its wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
: "${CARGO_TERM_COLOR:=never}"
export CARGO_TERM_COLOR

rc=0
out="$(bash ci/upstream.sh etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)" || rc=$?
bin="$(printf '%s\n' "$out" | tail -1)"
case "$rc" in
  0)
    echo "upstream tier: binaries in $bin"
    # The tests must run, not skip, now that the binaries exist.
    export FAULTLINE_UPSTREAM_BIN="$bin" FAULTLINE_UPSTREAM_REQUIRE=1
    ;;
  3 | 4)
    echo "upstream tier: SKIPPED: no binaries (ci/upstream.sh exit $rc, its reason above); the tests say what they skip"
    export FAULTLINE_UPSTREAM=off
    ;;
  *)
    echo "upstream tier: ci/upstream.sh failed (exit $rc), see above" >&2
    exit 1
    ;;
esac
# --nocapture: the start-up times and SKIPPED lines the tests print are the tier's report.
cargo test -p faultline-upstream --locked -- --nocapture
echo "upstream tier: $(( $(date +%s) - started ))s"
