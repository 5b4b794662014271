#!/usr/bin/env bash
# The main job (README): build the harness and the controller fixture, then run the whole
# scenario pack on the sim provider: one line per passing scenario, the whole timeline of a failing
# one. Reports land in reports/ (JUnit, JSON, HTML, summary.md, per-scenario timelines and logs).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --workspace --locked --bins
exec target/debug/faultline run scenarios --jobs "${FAULTLINE_JOBS:-3}" --report-dir reports \
  --junit reports/junit.xml --json reports/report.json --html reports/report.html "$@"
