#!/usr/bin/env bash
# The differential judge (issue #28, docs/differential.md): the corpus of harness/differential
# against the sim and a real Kubernetes 1.35 control plane, compared after normalisation.
#
#   bash ci/differential.sh [extra judge args...]
#
# 1. builds `faultline` and `faultline-differential`;
# 2. starts two `faultline sim up --api-only` and runs the judge sim vs sim: it must be 100 %
#    identical (the normalisation hides no stable difference and the corpus is deterministic);
# 3. the real side: $FAULTLINE_DIFF_REAL_KUBECONFIG if set; else the judge starts etcd,
#    kube-apiserver and kube-controller-manager itself through faultline-upstream (binaries from
#    $FAULTLINE_UPSTREAM_BIN or ci/upstream.sh) and stops them at the end;
# 4. runs the judge sim vs real, prints the table per API group and verb, and fails when fewer
#    exchanges are identical than docs/fidelity.md records
#    ("Differential judge: N of M exchanges identical").
# Without a real control plane (no Go toolchain, no binaries, FAULTLINE_UPSTREAM=off) step 4 is
# skipped with a notice, unless FAULTLINE_DIFF_REQUIRE_REAL=1, which makes that a failure.
# Reports go to $FAULTLINE_DIFF_OUT (default target/differential): sim-vs-sim.json,
# sim-vs-real.json and diffs/ (both canonical answers of each differing exchange).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
out="${FAULTLINE_DIFF_OUT:-$root/target/differential}"
mkdir -p "$out"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
cargo build --locked -q -p faultline --bin faultline
cargo build --locked -q -p faultline-differential --bin faultline-differential
faultline="$target_dir/debug/faultline"
judge="$target_dir/debug/faultline-differential"

work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# Starts a sim, waits for its kubeconfig.
start_sim() {
  local name="$1"
  "$faultline" sim up --api-only --nodes 0 --kubeconfig "$work/$name.kubeconfig" >"$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do
    grep -q "press Ctrl-C" "$work/$name.log" 2>/dev/null && return 0
    sleep 0.1
  done
  cat "$work/$name.log" >&2
  echo "differential: the sim $name did not start" >&2
  return 1
}

start_sim sim-a
# FAULTLINE_DIFF_SIM_VS_SIM=0 skips step 2 where the test suite already ran it
# (harness/differential/tests/sim_vs_sim.rs, in .ci/run's ci/test.sh).
if [ "${FAULTLINE_DIFF_SIM_VS_SIM:-1}" = 1 ]; then
start_sim sim-b
echo "== sim vs sim"
"$judge" --left "$work/sim-a.kubeconfig" --right "$work/sim-b.kubeconfig" --left-name sim-a --right-name sim-b \
  --json "$out/sim-vs-sim.json" --show 10 "$@" | tee "$out/sim-vs-sim.txt" | tail -4
line="$(grep '^Differential judge:' "$out/sim-vs-sim.txt")"
read -r same total < <(echo "$line" | sed -E 's/^Differential judge: ([0-9]+) of ([0-9]+).*/\1 \2/')
if [ "$same" != "$total" ]; then
  grep -A12 '^DIFF' "$out/sim-vs-sim.txt" | head -60 >&2
  echo "differential: sim vs sim is not 100 % identical ($same of $total): nondeterminism or a normalisation gap" >&2
  exit 1
fi
fi

# The real side: a given kubeconfig, or a control plane the judge starts and stops itself
# through faultline-upstream (etcd, kube-apiserver, kube-controller-manager; binaries from
# FAULTLINE_UPSTREAM_BIN or ci/upstream.sh). The judge exits 3 when they cannot be had here.
if [ -n "${FAULTLINE_DIFF_REAL_KUBECONFIG:-}" ]; then
  right=(--right "$FAULTLINE_DIFF_REAL_KUBECONFIG")
else
  right=(--right-upstream)
fi
echo "== sim vs real"
rm -rf "$out/diffs"
set +e
"$judge" --left "$work/sim-a.kubeconfig" "${right[@]}" --left-name sim --right-name real \
  --json "$out/sim-vs-real.json" --report-diffs "$out/diffs" --show "${FAULTLINE_DIFF_SHOW:-20}" "$@" | tee "$out/sim-vs-real.txt"
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" = 3 ]; then
  if [ "${FAULTLINE_DIFF_REQUIRE_REAL:-0}" = 1 ]; then
    echo "differential: no real control plane, and FAULTLINE_DIFF_REQUIRE_REAL=1" >&2
    exit 1
  fi
  exit 0
fi
[ "$rc" = 0 ] || { echo "differential: the judge failed (exit $rc)" >&2; exit 1; }
line="$(grep '^Differential judge:' "$out/sim-vs-real.txt")"
same="$(echo "$line" | sed -E 's/^Differential judge: ([0-9]+) of.*/\1/')"
recorded="$(sed -nE 's/^Differential judge: ([0-9]+) of ([0-9]+) exchanges identical.*/\1/p' docs/fidelity.md | head -1)"
if [ -z "$recorded" ]; then
  echo "differential: docs/fidelity.md records no 'Differential judge: N of M exchanges identical' line" >&2
  exit 1
fi
if [ "$same" -lt "$recorded" ]; then
  echo "differential: $same identical exchanges, fewer than the $recorded docs/fidelity.md records" >&2
  exit 1
fi
echo "differential: $same identical (docs/fidelity.md records $recorded)"
