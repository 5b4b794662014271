#!/usr/bin/env bash
# The Go side (docs/go.md): every Go module of ours gofmt-clean; the small ones (go/, fixtures/)
# vetted and tested (go/faultlinetest's Examples start a simulated cluster through the faultline
# binary); then the envtest judge (ci/envtest-judge.sh: controller-runtime's own suites on the
# real kube-apiserver + etcd and on the drop-in), whose exit status is this script's.
# upstream/ is only format-checked: vetting it would type-check all of k8s.io/kubernetes.
#   usage: ci/go.sh [judge packages, as ci/envtest-judge.sh takes them]
# Exit 3 without a Go toolchain (as ci/upstream.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v go >/dev/null || { echo "go: no Go toolchain" >&2; exit 3; }
started=$(date +%s)
modules="$(find go fixtures upstream -name go.mod -not -path '*/node_modules/*' | xargs -n1 dirname | sort)"
for m in $modules; do
  bad="$(cd "$m" && gofmt -l .)"
  if [ -n "$bad" ]; then
    echo "go: not gofmt-formatted in $m:" >&2
    echo "$bad" >&2
    exit 1
  fi
done
echo "go: gofmt clean ($(echo "$modules" | wc -l) modules)"
cargo build -q --locked -p faultline --bin faultline
export FAULTLINE_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/faultline"
for m in $modules; do
  case "$m" in upstream*) continue ;; esac
  (cd "$m" && go vet ./... && go test -count=1 ./...)
done
echo "go: vet and tests passed in $(( $(date +%s) - started )) s"
bash ci/envtest-judge.sh "$@"
