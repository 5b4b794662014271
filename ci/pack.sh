#!/usr/bin/env bash
# The main job (README): build the harness and the controller fixture, then run the whole
# scenario pack on the sim provider: one line per passing scenario, the whole timeline of a failing
# one. Reports land in reports/ (JUnit, JSON, HTML, summary.md, per-scenario timelines and logs).
# The Go operator fixture (fixtures/go-operator) is built by the runner itself (`build:` in
# scenarios/faultline.yaml, cached in ~/.cache/faultline/go): its scenarios need Go >= 1.25.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the pack runs: the runner without the kind provider's Docker engine client (a fifth
# of a cold build) and the fixture controller; not the benchmarks. `bash .ci/run` builds the
# whole workspace with default features (a different feature set, so it builds its own copy).
cargo build --locked -p faultline -p workspace-controller --no-default-features --bins
exec target/debug/faultline run scenarios --jobs "${FAULTLINE_JOBS:-3}" --report-dir reports \
  --junit reports/junit.xml --json reports/report.json --html reports/report.html "$@"
