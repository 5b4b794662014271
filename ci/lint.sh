#!/usr/bin/env bash
# The house checks (issue #32), fastest first: rustfmt (the workspace and the fuzz targets' own
# workspace), no import cycle between sibling modules of any crate, clippy with warnings denied.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
(cd harness/fuzz && cargo fmt --check)
python3 ci/import-cycles.py
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "lint: rustfmt, import cycles and clippy clean"
