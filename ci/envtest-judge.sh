#!/usr/bin/env bash
# The envtest drop-in's judge (issue #30, docs/go.md): controller-runtime's own envtest-based
# test packages, run on the real kube-apiserver + etcd (built by ci/upstream.sh) and on
# `faultline envtest-assets`, compared spec by spec (go/envtest-judge/cmd/judge).
#
#   usage: ci/envtest-judge.sh [PKG,PKG...]
#          (default envtest,client,cache,controller,manager,builder,webhook: controller-runtime pkg/...)
#
# Prints both pass counts per package, the specs that pass on the real pair only (also in
# $out/real-only.txt), and an envtest Environment's start time on each as a ratio.
# Env: FAULTLINE_JUDGE_OUT (default target/envtest-judge), FAULTLINE_JUDGE_STARTS (envtest
#      starts timed on each, default 5), FAULTLINE_JUDGE_TIMEOUT (per package and side, 20m),
#      GO (default go).
# Exit codes: 0 every spec that passes on the real pair passes on the sim; 1 some do not;
#             2 the judge could not run (3: no Go toolchain, as ci/upstream.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
pkgs="${1:-envtest,client,cache,controller,manager,builder,webhook}"
out="${FAULTLINE_JUDGE_OUT:-$here/target/envtest-judge}"
go_cmd="${GO:-go}"
command -v "$go_cmd" >/dev/null || { echo "envtest-judge: no Go toolchain ($go_cmd)" >&2; exit 3; }

say() { echo "envtest-judge: $*" >&2; }

say "building faultline"
(cd "$here" && cargo build -q -p faultline --bin faultline)
faultline="${CARGO_TARGET_DIR:-$here/target}/debug/faultline"

say "the real pair (ci/upstream.sh kube-apiserver etcd kubectl)"
real="$(bash "$here/ci/upstream.sh" kube-apiserver etcd kubectl | tail -1)"

mkdir -p "$out"
sim="$("$faultline" envtest-assets "$out/sim-assets" --kubectl "$real/kubectl")"

cd "$here/go/envtest-judge"
mkdir -p "$out/bin"
"$go_cmd" build -o "$out/bin/judge" ./cmd/judge
exec "$out/bin/judge" -real "$real" -sim "$sim" -out "$out" -pkgs "$pkgs" \
  -starts "${FAULTLINE_JUDGE_STARTS:-5}" -timeout "${FAULTLINE_JUDGE_TIMEOUT:-20m}"
