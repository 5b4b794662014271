#!/usr/bin/env bash
# Builds the real Kubernetes control plane pinned by upstream/go.mod (docs/upstream.md).
#
#   usage: ci/upstream.sh [NAME...|all]      (no NAME: all)
#   NAME:  etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubeadm kubectl
#          kube-proxy (the kind node image's kubeadm addon; not part of `all`)
#          kwok (sigs.k8s.io/kwok, its own module upstream/kwok/; not part of `all`)
#
# Each binary goes to $FAULTLINE_UPSTREAM_CACHE/<key>/bin/NAME (default cache
# ~/.cache/faultline/upstream), where <key> hashes upstream/go.mod, upstream/go.sum, the Go
# version and this script's build flags: a change of any of them builds anew. The bin directory
# is the last line on stdout:  bin=$(bash ci/upstream.sh kube-apiserver etcd | tail -1)
# kwok is keyed by upstream/kwok/go.mod and go.sum instead (it needs other k8s.io versions):
# it is built into <cache>/kwok-<kwok key>/kwok, beside kwok-stages.yaml (the default Stages that
# kwokctl gives kwok, copied from the pinned module), and bin/kwok and bin/kwok-stages.yaml are
# symlinks to them, so a change of either pin rebuilds only what it pins.
# Progress and each binary's build time go to stderr.
#
# Warm cache (every asked binary present): no `go` command runs at all; the Go version is read
# from $GOROOT/VERSION. A binary is built into a temporary directory beside bin/ and renamed into
# place, so an interrupted or failed build leaves nothing half-built (trap on EXIT/INT/TERM).
#
# Exit codes: 0 built or cached; 2 bad usage; 3 no usable Go toolchain; 4 a module the proxy
# refused (the go command's answer is printed); 5 a build failed; 130/143 interrupted.
# Env: FAULTLINE_UPSTREAM_CACHE, FAULTLINE_UPSTREAM_JOBS (go build -p, default Go's own),
#      GO (the go command, default `go` on PATH, else /usr/local/go/bin/go), GOPROXY as usual.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
mod="$here/upstream"
all=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubeadm kubectl)

say() { echo "upstream: $*" >&2; }

names=()
for arg in "$@"; do
  case "$arg" in
    all) names+=("${all[@]}") ;;
    etcd | kube-apiserver | kube-controller-manager | kube-scheduler | kubelet | kubeadm | kubectl | kube-proxy | kwok)
      names+=("$arg") ;;
    -h | --help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 0 ;;
    *) say "unknown binary '$arg' (one of: ${all[*]} kwok, all)"; exit 2 ;;
  esac
done
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")
# Each name once, in the order asked.
declare -A seen=()
uniq=()
for n in "${names[@]}"; do
  [ -n "${seen[$n]:-}" ] || uniq+=("$n")
  seen[$n]=1
done
names=("${uniq[@]}")

# --- The Go toolchain, found without running it. -------------------------------------------
go_cmd="${GO:-}"
if [ -z "$go_cmd" ]; then
  if command -v go >/dev/null; then
    go_cmd=go
  elif [ -x /usr/local/go/bin/go ]; then
    go_cmd=/usr/local/go/bin/go
  fi
fi
if [ -z "$go_cmd" ] || ! go_cmd="$(command -v "$go_cmd")"; then
  say "no Go toolchain: install Go >= 1.25 (go.dev/dl; put it on PATH or set GO=/path/to/go), or set FAULTLINE_UPSTREAM_BIN to a directory holding the binaries"
  exit 3
fi
goroot="$(cd "$(dirname "$(readlink -f "$go_cmd")")/.." && pwd)"
go_version=""
[ -f "$goroot/VERSION" ] && go_version="$(head -1 "$goroot/VERSION")"
case "$go_version" in
  go1.*) ;;
  *) # A distribution without the VERSION file (some packagers): ask the command.
     go_version="$("$go_cmd" env GOVERSION 2>/dev/null || true)" ;;
esac
minor="$(echo "$go_version" | sed -nE 's/^go1\.([0-9]+).*/\1/p')"
if [ -z "$minor" ] || [ "$minor" -lt 25 ]; then
  say "Go ${go_version:-of unknown version} at $go_cmd is too old: Kubernetes v1.35 needs Go >= 1.25; install a newer Go (go.dev/dl) or set GO=/path/to/go"
  exit 3
fi

# --- What is built, and how: every flag below is part of the cache key. -------------------
k8s_version="$(sed -nE 's#^\tk8s\.io/kubernetes (v[0-9.]+).*#\1#p' "$mod/go.mod")"
etcd_version="$(sed -nE 's#^\tgo\.etcd\.io/etcd/server/v3 (v[0-9.]+).*#\1#p' "$mod/go.mod")"
if [ -z "$k8s_version" ] || [ -z "$etcd_version" ]; then
  say "upstream/go.mod names no k8s.io/kubernetes or go.etcd.io/etcd/server/v3 version: restore it from git"
  exit 2
fi
k8s_major="$(echo "$k8s_version" | sed -E 's/^v([0-9]+)\..*/\1/')"
k8s_minor="$(echo "$k8s_version" | sed -E 's/^v[0-9]+\.([0-9]+)\..*/\1/')"
# As hack/lib/golang.sh builds a release (DBG unset): -trimpath, -s -w, these tags; the binaries
# it lists in KUBE_STATIC_BINARIES with CGO off. Here every binary is static, kubelet included
# (it builds and runs without cgo; upstream links it dynamically only for the host's libc).
k8s_tags="selinux,notest,grpcnotrace"
pkg_of() {
  case "$1" in
    etcd) echo go.etcd.io/etcd/server/v3 ;;
    kwok) echo sigs.k8s.io/kwok/cmd/kwok ;;
    *) echo "k8s.io/kubernetes/cmd/$1" ;;
  esac
}
recipe="cgo=0 trimpath k8s_tags=$k8s_tags ldflags=-s,-w,version-vars(client-go,component-base),etcd-GitSHA k8s=$k8s_version etcd=$etcd_version recipe=2"

cache="${FAULTLINE_UPSTREAM_CACHE:-${HOME:-/root}/.cache/faultline/upstream}"
key="$( { cat "$mod/go.mod" "$mod/go.sum"; echo "$go_version"; echo "$recipe"; uname -m; } | sha256sum | cut -c1-16)"
bin="$cache/$key/bin"

# kwok: its own module and key; as kwok's hack/releases.sh builds it (CGO off; its version is
# in its source, consts.Version), plus -trimpath -s -w.
kwok_mod="$mod/kwok"
kwok_version="$(sed -nE 's#^\tsigs\.k8s\.io/kwok (v[0-9.]+).*#\1#p' "$kwok_mod/go.mod" 2>/dev/null || true)"
# The Stages kwokctl configures by default (pkg/kwokctl/runtime/cluster.go: node-initialize,
# node-heartbeat-with-lease when node leases are on, pod-ready, pod-complete, pod-delete); the
# kwok binary alone has none.
kwok_stages=(node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
  pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml)
kwok_recipe="cgo=0 trimpath ldflags=-s,-w kwok=$kwok_version stages=${kwok_stages[*]} recipe=1"
kwok_dir=""
if [ -n "$kwok_version" ]; then
  kwok_key="$( { cat "$kwok_mod/go.mod" "$kwok_mod/go.sum"; echo "$go_version"; echo "$kwok_recipe"; uname -m; } | sha256sum | cut -c1-16)"
  kwok_dir="$cache/kwok-$kwok_key"
fi

missing=()
for n in "${names[@]}"; do
  if [ "$n" = kwok ]; then
    if [ -z "$kwok_dir" ]; then
      say "upstream/kwok/go.mod names no sigs.k8s.io/kwok version: restore it from git"
      exit 2
    fi
    if [ -x "$bin/kwok" ] && [ "$(readlink "$bin/kwok")" = "$kwok_dir/kwok" ] \
      && [ -f "$bin/kwok-stages.yaml" ]; then
      say "kwok: cached"
      continue
    fi
    if [ -x "$kwok_dir/kwok" ] && [ -f "$kwok_dir/kwok-stages.yaml" ]; then
      # Built for another <key> already: link it here (each link by a rename), no go command.
      mkdir -p "$bin"
      for f in kwok-stages.yaml kwok; do
        ln -sfn "$kwok_dir/$f" "$bin/.$f.link.$$"
        mv -fT "$bin/.$f.link.$$" "$bin/$f"
      done
      say "kwok: cached ($kwok_dir)"
      continue
    fi
  elif [ -x "$bin/$n" ]; then
    say "$n: cached"
    continue
  fi
  missing+=("$n")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "$bin"
  exit 0
fi

# --- Cold path. ----------------------------------------------------------------------------
mkdir -p "$bin"
tmp="$(mktemp -d "$cache/$key/.building.XXXXXX")"
child=""
cleanup() {
  if [ -n "$child" ]; then
    # The go command and the compilers and linker it runs: its own process group (setsid).
    # (Not SIGINT: a background job of a script starts with SIGINT ignored, and Go keeps it so.)
    # What they leave in their work directories is under $tmp (GOTMPDIR), removed below.
    kill -TERM -- "-$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
    kill -KILL -- "-$child" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'say "interrupted: nothing half-built is kept"; exit 130' INT
trap 'say "terminated: nothing half-built is kept"; exit 143' TERM

# GOTMPDIR: the go command's own work directories go inside $tmp, so they go with it too.
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 GOTMPDIR="$tmp"
cd "$mod"
jobs=()
[ -n "${FAULTLINE_UPSTREAM_JOBS:-}" ] && jobs=(-p "$FAULTLINE_UPSTREAM_JOBS")

# Runs the go command in the background, in a process group of its own, so that a signal reaches
# the trap at once and the trap stops the whole build; its output goes to $tmp/log.
setsid=()
command -v setsid >/dev/null && setsid=(setsid)
run_go() {
  "${setsid[@]}" "$go_cmd" "$@" >"$tmp/out" 2>"$tmp/log" &
  child=$!
  local rc=0
  wait "$child" || rc=$?
  child=""
  return "$rc"
}

refused() {
  # The go command's answer: its first line that is not progress.
  say "a module was refused: $(grep -v -m1 -E '^go: (downloading|finding|extracting) ' "$tmp/log" || tail -1 "$tmp/log")"
  grep -v -E '^go: (downloading|finding|extracting) ' "$tmp/log" | head -20 >&2
  say "the module proxy refused a pinned module: pin the nearest served version in upstream/go.mod and record the answer above in docs/upstream.md"
  exit 4
}

# Every module the builds need, first, so a refusal is told apart from a compile error.
say "downloading modules for ${missing[*]}"
pkgs=()
want_kwok=""
for n in "${missing[@]}"; do
  if [ "$n" = kwok ]; then want_kwok=1; else pkgs+=("$(pkg_of "$n")"); fi
done
if [ ${#pkgs[@]} -gt 0 ]; then
  run_go list -deps -f '{{with .Module}}{{.Path}}{{end}}' "${pkgs[@]}" || refused
fi
if [ -n "$want_kwok" ]; then
  run_go list -C "$kwok_mod" -deps -f '{{with .Module}}{{.Path}}{{end}}' "$(pkg_of kwok)" || refused
fi
build_date=1970-01-01T00:00:00Z
if [ ${#pkgs[@]} -gt 0 ]; then
  build_date="$(cd "$mod" && "$go_cmd" list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes 2>/dev/null || echo 1970-01-01T00:00:00Z)"
fi
k8s_ldflags="-s -w"
# No gitCommit: the module proxy does not say which commit a tag is, and the default
# ("$Format:%H$") is only a placeholder; gitTreeState likewise.
for var in "gitVersion=$k8s_version" "gitMajor=$k8s_major" "gitMinor=$k8s_minor" "buildDate=$build_date" \
  gitCommit= gitTreeState=; do
  k8s_ldflags+=" -X k8s.io/client-go/pkg/version.$var -X k8s.io/component-base/version.$var"
done

total_start=$(date +%s)
for n in "${missing[@]}"; do
  pkg="$(pkg_of "$n")"
  chdir=()
  if [ "$n" = etcd ]; then
    flags=(-tags= "-ldflags=-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$etcd_version")
  elif [ "$n" = kwok ]; then
    chdir=(-C "$kwok_mod")
    flags=(-tags= "-ldflags=-s -w")
  else
    flags=("-tags=$k8s_tags" "-ldflags=all=$k8s_ldflags")
  fi
  say "building $n ($pkg)"
  start=$(date +%s)
  if ! run_go build "${chdir[@]}" "${jobs[@]}" -trimpath "${flags[@]}" -o "$tmp/$n" "$pkg"; then
    if grep -qE 'reading https?://|: 40[34] |verifying .*: |missing go.sum entry|unknown revision' "$tmp/log"; then refused; fi
    cat "$tmp/log" >&2
    say "building $n failed (log above; Go $go_version): fix upstream/go.mod (kwok: upstream/kwok/go.mod) or the toolchain, or set FAULTLINE_UPSTREAM_BIN to prebuilt binaries"
    exit 5
  fi
  if [ "$n" = kwok ]; then
    # Its default Stages from the pinned module's own files, one YAML stream.
    run_go list -C "$kwok_mod" -m -f '{{.Dir}}' sigs.k8s.io/kwok || refused
    kwok_src="$(tail -1 "$tmp/out")"
    for f in "${kwok_stages[@]}"; do
      if [ ! -f "$kwok_src/kustomize/stage/$f" ]; then
        say "kwok $kwok_version has no kustomize/stage/$f: update kwok_stages in ci/upstream.sh"
        exit 5
      fi
      echo "---"
      cat "$kwok_src/kustomize/stage/$f"
    done >"$tmp/kwok-stages.yaml"
    # The files into their own key's directory, then the links into bin/, each by a rename
    # (kwok's link last: a bin/kwok that points at this key means both are there).
    mkdir -p "$kwok_dir"
    mv -f "$tmp/kwok-stages.yaml" "$kwok_dir/kwok-stages.yaml"
    mv -f "$tmp/kwok" "$kwok_dir/kwok"
    for f in kwok-stages.yaml kwok; do
      ln -sfn "$kwok_dir/$f" "$tmp/$f.link"
      mv -fT "$tmp/$f.link" "$bin/$f"
    done
  else
    mv -f "$tmp/$n" "$bin/$n"
  fi
  secs=$(( $(date +%s) - start ))
  say "built $n in ${secs}s"
  echo "$(date -u +%FT%TZ) $n ${secs}s $go_version" >> "$cache/$key/build-times.txt"
done
say "built ${missing[*]} in $(( $(date +%s) - total_start ))s into $bin"
echo "$bin"
