#!/usr/bin/env bash
# Determinism check (docs/performance.md): run the scenario pack RUNS times with one seed and
# require identical verdicts every time: each scenario's verdict and each expectation's.
# Prints a line per run and the verdict table; exits 1 if any run differs from the first.
#   usage: ci/determinism.sh [RUNS (default 50)] [extra `faultline run` args...]
#   env: FAULTLINE_SEED (default 20261202), FAULTLINE_JOBS (default 9: every scenario at once)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-50}"
shift || true
seed="${FAULTLINE_SEED:-20261202}"
jobs="${FAULTLINE_JOBS:-9}"
out="${FAULTLINE_DETERMINISM_DIR:-reports/determinism}"
cargo build --workspace --locked --bins
rm -rf "$out" && mkdir -p "$out"
start=$(date +%s)
for i in $(seq 1 "$runs"); do
  t0=$(date +%s%N)
  # Exit 1 (a scenario failed) is a verdict like any other here; 2 and above are harness errors.
  set +e
  target/debug/faultline run scenarios --seed "$seed" --jobs "$jobs" --json "$out/run-$i.json" "$@" > "$out/run-$i.log" 2>&1
  rc=$?
  set -e
  if [ "$rc" -ge 2 ]; then
    echo "run $i: harness error (exit $rc), see $out/run-$i.log" >&2
    tail -20 "$out/run-$i.log" >&2
    exit 2
  fi
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf 'run %3d: exit %d in %d.%03ds\n' "$i" "$rc" $((ms / 1000)) $((ms % 1000))
done
python3 - "$out" "$runs" "$(( $(date +%s) - start ))" <<'EOF'
import json, sys, pathlib
out, runs, secs = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def verdicts(path):
    r = json.loads(path.read_text())
    v = {}
    for s in r["scenarios"]:
        v[s["name"]] = s["verdict"]
        for e in s["expectations"]:
            v[f'{s["name"]} / {e["name"]}'] = e["verdict"]
    return v
first = verdicts(out / "run-1.json")
differ = []
for i in range(2, runs + 1):
    v = verdicts(out / f"run-{i}.json")
    d = {k for k in set(first) | set(v) if first.get(k) != v.get(k)}
    if d:
        differ.append((i, sorted(d)))
scenarios = [k for k in first if " / " not in k]
print(f"\n{runs} runs in {secs}s, seed fixed: {len(scenarios)} scenarios, {len(first) - len(scenarios)} expectations")
for k in scenarios:
    print(f"  {first[k]:<8} {k}")
if differ:
    for i, d in differ:
        print(f"run {i} differs from run 1 on: " + ", ".join(f"{k} ({first.get(k)} -> {verdicts(out / f'run-{i}.json').get(k)})" for k in d))
    print(f"FAIL: {len(differ)} of {runs - 1} runs gave other verdicts than run 1")
    sys.exit(1)
print(f"PASS: all {runs} runs gave identical verdicts ({len(first)} verdicts each)")
EOF
