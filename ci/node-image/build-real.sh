#!/usr/bin/env bash
# Builds the real kind node image (docs/kind.md "A real cluster here"): Debian bookworm
# (debootstrap minbase) with Debian's containerd, runc and CNI plugins, conntrack, ethtool,
# socat, jq, and the upstream kubelet, kubeadm and kubectl (ci/upstream.sh). The images kubeadm
# deploys (kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kube-proxy from the
# same binaries, pause from upstream/node, CoreDNS from upstream/coredns), the CSI stack's
# (upstream/csi) and the CNI agent's are built here as OCI archives, put in /kind/images and
# imported into the node's containerd at boot under the names `kubeadm config images list`
# prints: nothing is ever pulled.
#
# Tagged faultline-node:<Kubernetes version>-real-<hash>, the hash of this recipe (this script,
# real/, the runtime wrapper, the package list, upstream/node, upstream/coredns, upstream/csi,
# the Go version) and of the upstream binaries' cache key (ci/upstream.sh); built only when
# that tag is missing. Labelled dev.faultline.kubernetes-version. Prints the tag. Exit 3 or 4:
# as ci/upstream.sh's.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
mirror="${FAULTLINE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
packages="systemd,systemd-sysv,dbus,util-linux,mount,iproute2,iptables,procps,kmod,ca-certificates,containerd,runc,containernetworking-plugins,conntrack,ethtool,socat,jq,busybox-static"
# Its exit code is this script's when it fails (3: no Go; 4: a module the proxy refused).
upstream_rc=0
upstream_out="$(bash "$repo/ci/upstream.sh" kubelet kubeadm kubectl kube-apiserver kube-controller-manager kube-scheduler etcd kube-proxy)" || upstream_rc=$?
if [ "$upstream_rc" != 0 ]; then
  echo "node image: the upstream binaries are missing (ci/upstream.sh exit $upstream_rc)" >&2
  exit "$upstream_rc"
fi
bin="$(tail -1 <<<"$upstream_out")"
upstream_key="$(basename "$(dirname "$bin")")"
go_cmd="$(command -v go || echo /usr/local/go/bin/go)"
hash="$( (cd "$here" && cat build-real.sh runc-drop-sys-resource && echo "$packages $upstream_key" \
  && find real -type f | LC_ALL=C sort | xargs sha256sum \
  && cat "$repo/upstream/node/go.mod" "$repo/upstream/node/go.sum" "$repo/upstream/node/pause/main.go" \
  && cat "$repo/upstream/coredns/go.mod" "$repo/upstream/coredns/go.sum" \
  && cat "$repo/upstream/csi/go.mod" "$repo/upstream/csi/go.sum" "$repo"/upstream/csi/*/main.go \
  && "$go_cmd" env GOVERSION) | sha256sum | cut -c1-16)"
k8s_version="$("$bin/kubeadm" version -o short)"
# <version>-real-<hash>: the provider reads the Kubernetes version from the tag
# (faultline_kind::versions::kubernetes_version_of_image) and prefers the newest such image.
tag="faultline-node:$k8s_version-real-$hash"
if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "node image: $tag exists (same recipe and binaries), reused" >&2
  echo "$tag"
  exit 0
fi
work="$(mktemp -d /var/tmp/faultline-node-real.XXXXXX)"
trap 'rm -rf "$work"' EXIT
root="$work/root"
started=$(date +%s)

echo "node image: debootstrap bookworm into $root" >&2
debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror" >&2
cp -a "$here/real/." "$root/"
install -m 0755 "$here/runc-drop-sys-resource" "$root/usr/local/sbin/runc-drop-sys-resource"
install -m 0755 "$bin/kubelet" "$bin/kubeadm" "$bin/kubectl" "$root/usr/bin/"
mkdir -p "$root/opt/cni" "$root/etc/cni/net.d" "$root/etc/kubernetes/manifests" "$root/kind/images" "$root/var/lib/containerd"
ln -sfn /usr/lib/cni "$root/opt/cni/bin"

# --- The images, as OCI archives (one uncompressed layer each). ---------------------------
sha() { sha256sum "$1" | cut -d' ' -f1; }
# oci_image NAME:TAG OUT.tar ROOTDIR ENTRYPOINT-JSON
oci_image() {
  local name="$1" out="$2" dir="$3" entrypoint="$4" o="$work/oci" layer cfg man
  rm -rf "$o" && mkdir -p "$o/blobs/sha256"
  tar -C "$dir" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$o/layer" .
  layer="$(sha "$o/layer")"
  mv "$o/layer" "$o/blobs/sha256/$layer"
  printf '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Entrypoint":%s},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$entrypoint" "$layer" >"$o/cfg"
  cfg="$(sha "$o/cfg")"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%d}]}' \
    "$cfg" "$(stat -c %s "$o/cfg")" "$layer" "$(stat -c %s "$o/blobs/sha256/$layer")" >"$o/man"
  man="$(sha "$o/man")"
  mv "$o/cfg" "$o/blobs/sha256/$cfg"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%d,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$man" "$(stat -c %s "$o/man")" "$name" "${name##*:}" >"$o/index.json"
  mv "$o/man" "$o/blobs/sha256/$man"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$o/oci-layout"
  tar -C "$o" -cf "$out" oci-layout index.json blobs
  rm -rf "$o"
}
# copy_from_root DEST PATH...: files of the node's root file system, with the shared libraries
# they load (ldd in the root), into DEST at the same paths.
copy_from_root() {
  local dest="$1" p l
  shift
  for p in "$@"; do
    for l in "$p" $(chroot "$root" ldd "$p" 2>/dev/null | awk '/=> \// {print $3} /^[[:space:]]*\/lib/ {print $1}'); do
      mkdir -p "$dest$(dirname "$l")"
      cp -L "$root$l" "$dest$l"
    done
  done
}
names="$("$bin/kubeadm" config images list --kubernetes-version "$k8s_version")"
image_name() { grep -E "/$1:" <<<"$names"; }
pause_bin="$work/pause"
gobuild() { # DIR OUT PACKAGE: static, as ci/upstream.sh builds
  (cd "$1" && CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" "$go_cmd" build -trimpath -ldflags='-s -w' -o "$2" "$3")
}
gobuild "$repo/upstream/node" "$pause_bin" ./pause
# crictl on the node (the provider's logs on failure list the containers with it).
gobuild "$repo/upstream/node" "$root/usr/bin/crictl" sigs.k8s.io/cri-tools/cmd/crictl
printf 'runtime-endpoint: unix:///run/containerd/containerd.sock\nimage-endpoint: unix:///run/containerd/containerd.sock\n' >"$root/etc/crictl.yaml"
echo "node image: building CoreDNS (upstream/coredns)" >&2
d="$work/img-coredns" && mkdir -p "$d/tmp" && chmod 1777 "$d/tmp"
gobuild "$repo/upstream/coredns" "$d/coredns" github.com/coredns/coredns
oci_image "$(image_name coredns)" "$root/kind/images/coredns.tar" "$d" '["/coredns"]'
rm -rf "$d"
for c in kube-apiserver kube-controller-manager kube-scheduler etcd; do
  d="$work/img-$c"
  mkdir -p "$d/usr/local/bin" "$d/tmp" && chmod 1777 "$d/tmp"
  cp "$bin/$c" "$d/usr/local/bin/$c"
  # cp-: only the control plane imports these.
  oci_image "$(image_name "$c")" "$root/kind/images/cp-$c.tar" "$d" "[\"/usr/local/bin/$c\"]"
  rm -rf "$d"
done
d="$work/img-pause" && mkdir -p "$d" && cp "$pause_bin" "$d/pause"
oci_image "$(image_name pause)" "$root/kind/images/pause.tar" "$d" '["/pause"]'
# kube-proxy (iptables mode) runs iptables-restore and conntrack: Debian's, with their libraries.
d="$work/img-kube-proxy" && mkdir -p "$d/usr/local/bin" "$d/tmp" && chmod 1777 "$d/tmp"
cp "$bin/kube-proxy" "$d/usr/local/bin/"
copy_from_root "$d" /usr/sbin/xtables-nft-multi /usr/sbin/conntrack $(cd "$root" && ls usr/lib/x86_64-linux-gnu/xtables/*.so | sed 's#^#/#')
for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
  ln -s xtables-nft-multi "$d/usr/sbin/$t"
done
oci_image "$(image_name kube-proxy)" "$root/kind/images/kube-proxy.tar" "$d" '["/usr/local/bin/kube-proxy"]'
# The CSI stack (kind/manifests/default-storage.yaml), from upstream/csi: the real
# external-provisioner and external-attacher, and faultline's hostpath driver and registrar.
echo "node image: building the CSI stack (upstream/csi)" >&2
for c in hostpath:localhost/faultline/csi-hostpath:1 registrar:localhost/faultline/csi-registrar:1 \
  github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner:registry.k8s.io/sig-storage/csi-provisioner:v6.4.0 \
  github.com/kubernetes-csi/external-attacher/v4/cmd/csi-attacher:registry.k8s.io/sig-storage/csi-attacher:v4.13.0; do
  pkg="${c%%:*}" name="${c#*:}"
  case "$pkg" in */*) ;; *) pkg="./$pkg" ;; esac
  prog="$(basename "$pkg")"
  d="$work/img-$prog" && mkdir -p "$d/tmp" && chmod 1777 "$d/tmp"
  gobuild "$repo/upstream/csi" "$d/$prog" "$pkg"
  oci_image "$name" "$root/kind/images/csi-$prog.tar" "$d" "[\"/$prog\"]"
  rm -rf "$d"
done
# The CNI agent (kind/manifests/default-cni.yaml): Debian's static busybox and the script.
d="$work/img-cni" && mkdir -p "$d/bin" "$d/usr/local/bin" "$d/tmp" && chmod 1777 "$d/tmp"
cp "$root/bin/busybox" "$d/bin/busybox"
for a in sh cat mv sleep ip echo sed seq tr ls; do ln -s busybox "$d/bin/$a"; done
cp "$here/real/kind/cni/faultline-cni" "$d/usr/local/bin/faultline-cni"
oci_image localhost/faultline/cni-agent:1 "$root/kind/images/cni-agent.tar" "$d" '["/bin/sh","/usr/local/bin/faultline-cni"]'
echo "$hash" >"$root/kind/images/SET"

# Units a container has no use for (no consoles, no udev, no kernel to tune).
for u in getty@tty1.service console-getty.service systemd-udevd.service systemd-udev-trigger.service \
         systemd-modules-load.service systemd-sysctl.service systemd-remount-fs.service \
         sys-kernel-config.mount sys-kernel-debug.mount sys-kernel-tracing.mount; do
  ln -sf /dev/null "$root/etc/systemd/system/$u"
done
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf /lib/systemd/system/containerd.service "$root/etc/systemd/system/multi-user.target.wants/containerd.service"
ln -sf /etc/systemd/system/kubelet.service "$root/etc/systemd/system/multi-user.target.wants/kubelet.service"
for u in faultline-dns-udp faultline-dns-tcp; do
  ln -sf "/etc/systemd/system/$u.service" "$root/etc/systemd/system/multi-user.target.wants/$u.service"
done
ln -sf /lib/systemd/system/multi-user.target "$root/etc/systemd/system/default.target"
: > "$root/etc/machine-id"
rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*
tar -C "$root" --numeric-owner -c . | docker import - "$tag-rootfs" >&2
printf '%s\n' "FROM $tag-rootfs" \
  'ENV container=docker' \
  "LABEL dev.faultline.kubernetes-version=$k8s_version dev.faultline.upstream-key=$upstream_key" \
  'STOPSIGNAL SIGRTMIN+3' \
  'ENTRYPOINT ["/usr/local/bin/entrypoint"]' \
  'CMD ["/sbin/init"]' | DOCKER_BUILDKIT=0 docker build --quiet --tag "$tag" - >&2
docker image rm "$tag-rootfs" >/dev/null
echo "node image: built $tag (Kubernetes $k8s_version) in $(( $(date +%s) - started )) s" >&2
echo "$tag"
