#!/usr/bin/env bash
# Bounded cargo-fuzz campaign: each target of harness/fuzz runs for FAULTLINE_FUZZ_SECONDS
# (default 60) from its seed corpus. Exit 0: no crash; 1: a target crashed, its input is in
# reports/fuzz/artifacts/<target>/ (add it to harness/fuzz/regressions/<target>/ once fixed,
# and the replay tests keep it fixed); 2: the campaign could not run.
#
# `--sanitizer none`: what these targets look for in safe Rust (panics, broken invariants)
# needs no AddressSanitizer, and the uninstrumented-for-ASan build is the cheaper one; with it
# cargo-fuzz needs no nightly flags, so the stable toolchain builds it. libFuzzer's coverage
# instrumentation stays on. FAULTLINE_FUZZ_BUILD=--dev builds faster and fuzzes far slower.
set -uo pipefail
cd "$(dirname "$0")/.."
SECS="${FAULTLINE_FUZZ_SECONDS:-60}"
TARGETS="${FAULTLINE_FUZZ_TARGETS:-scenario_loader api_request}"
OUT="${FAULTLINE_FUZZ_DIR:-reports/fuzz}"
CARGO_FUZZ_VERSION=0.13.2

if ! cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked || { echo "fuzz: cannot install cargo-fuzz" >&2; exit 2; }
fi
BUILD="${FAULTLINE_FUZZ_BUILD:-}"
# cargo-fuzz has no --locked: check the committed lock file first.
cargo metadata --locked --format-version 1 --manifest-path harness/fuzz/Cargo.toml > /dev/null || { echo "fuzz: harness/fuzz/Cargo.lock is out of date" >&2; exit 2; }
cargo fuzz build --fuzz-dir harness/fuzz --sanitizer none --debug-assertions $BUILD || { echo "fuzz: the targets do not build" >&2; exit 2; }

status=0
for t in $TARGETS; do
  mkdir -p "$OUT/corpus/$t" "$OUT/artifacts/$t"
  echo "fuzz: $t for ${SECS}s"
  # New inputs go to the first corpus directory (under reports/), the seeds stay untouched.
  cargo fuzz run --fuzz-dir harness/fuzz --sanitizer none --debug-assertions $BUILD "$t" "$OUT/corpus/$t" "harness/fuzz/corpus/$t" -- \
      -max_total_time="$SECS" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
      -artifact_prefix="$OUT/artifacts/$t/" -print_final_stats=1 2>&1 | tee "$OUT/$t.log" \
    | awk '/panicked/ { print; if (getline) print; next } /^#[0-9]+ +(DONE|INITED)|^stat::|ERROR|SUMMARY|Done [0-9]+ runs/ { print }'
  rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then
    echo "fuzz: $t FAILED (exit $rc); inputs: $(ls "$OUT/artifacts/$t" | tr '\n' ' ')" >&2
    # The input itself, so a CI log alone is enough to reproduce (inputs are text requests).
    for f in "$OUT/artifacts/$t"/*; do echo "--- $f (escaped, first 2 KiB)"; head -c 2048 "$f" | cat -v; echo; done >&2
    status=1
  else
    echo "fuzz: $t ok"
  fi
done
exit $status
