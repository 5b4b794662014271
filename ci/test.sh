#!/usr/bin/env bash
# The test command (README): every test of the workspace, with real clients on PATH.
# Expects the Python venv from `.ci/run` (kubectl 1.37 and the kubernetes client) at .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x .venv/bin/kubectl ]; then
  export PATH="$PWD/.venv/bin:$PATH"
  export FAULTLINE_KUBECTL="$PWD/.venv/bin/kubectl"
  export FAULTLINE_KUBECTL_120="$PWD/.venv/kubectl-1.20/usr/bin/kubectl"
  export FAULTLINE_PYTHON="$PWD/.venv/bin/python"
fi
cargo build --workspace --locked --bins
cargo test --workspace --locked --no-fail-fast -- --test-threads="${FAULTLINE_TEST_THREADS:-4}" --skip python_clients_packaged_live_tests
# The Python clients' own packaged live tests, with their pass count in the log.
# --workspace: the same feature resolution as above, so nothing is rebuilt.
cargo test --workspace --locked --test python_packaged -- --nocapture
