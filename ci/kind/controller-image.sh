#!/usr/bin/env bash
# The controller under test as an image for kind runs, built from the binary cargo already built
# (no registry serves the Dockerfile's rust:1-bookworm base here): the binary and the shared
# libraries `ldd` names, FROM scratch. Usage: ci/kind/controller-image.sh [BINARY] [TAG]
# (default target/debug/workspace-controller, workspace-controller:ci); prints the tag.
set -euo pipefail
bin="${1:-${CARGO_TARGET_DIR:-target}/debug/workspace-controller}"
tag="${2:-workspace-controller:ci}"
[ -x "$bin" ] || { echo "controller-image: no executable $bin (cargo build -p workspace-controller first)" >&2; exit 2; }
ctx="$(mktemp -d /tmp/faultline-controller-image.XXXXXX)"
trap 'rm -rf "$ctx"' EXIT
name="$(basename "$bin")"
cp "$bin" "$ctx/$name"
# Every library the dynamic loader resolves, and the loader itself, at the paths it asks for.
ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' | sort -u | while read -r lib; do
  mkdir -p "$ctx$(dirname "$lib")"
  cp -L "$lib" "$ctx$lib"
done
cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM scratch
COPY . /
USER 65532:65532
ENTRYPOINT ["/$name"]
DOCKERFILE
docker build -q -t "$tag" "$ctx" >/dev/null
echo "$tag"
