#!/usr/bin/env bash
# Builds the stand-in node image of the Docker-engine tier (no registry serves kindest/node here):
# Debian bookworm (debootstrap minbase) with systemd, util-linux, iproute2, iptables and stand-in
# containerd/kubelet units, imported with `docker import`. Tagged by a content hash of this
# recipe, so an image already built from the same recipe is reused. Prints the tag.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mirror="${FAULTLINE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
packages="systemd,systemd-sysv,dbus,util-linux,mount,iproute2,iptables,procps,kmod,ca-certificates"
hash="$( (cd "$here" && cat build.sh && echo "$packages" && find rootfs -type f | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-16)"
tag="faultline-node:$hash"
if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "node image: $tag exists (same recipe), reused" >&2
  echo "$tag"
  exit 0
fi
root="$(mktemp -d /var/tmp/faultline-node.XXXXXX)"
trap 'rm -rf "$root"' EXIT
echo "node image: debootstrap bookworm into $root" >&2
debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror" >&2
cp -a "$here/rootfs/." "$root/"
# Units a container has no use for (no consoles, no udev, no kernel to tune).
for u in getty@tty1.service console-getty.service systemd-udevd.service systemd-udev-trigger.service \
         systemd-modules-load.service systemd-sysctl.service systemd-remount-fs.service \
         sys-kernel-config.mount sys-kernel-debug.mount sys-kernel-tracing.mount; do
  ln -sf /dev/null "$root/etc/systemd/system/$u"
done
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
for u in containerd kubelet; do
  ln -sf "/etc/systemd/system/$u.service" "$root/etc/systemd/system/multi-user.target.wants/$u.service"
done
ln -sf /lib/systemd/system/multi-user.target "$root/etc/systemd/system/default.target"
: > "$root/etc/machine-id"
mkdir -p "$root/kind" "$root/var/lib/containerd"
rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*
# `docker import` cannot set a stop signal: import the file system, then a one-line build on
# top of it (local base, nothing pulled) sets what kindest/node sets.
tar -C "$root" --numeric-owner -c . | docker import - "$tag-rootfs" >&2
printf '%s\n' "FROM $tag-rootfs" \
  'ENV container=docker' \
  'STOPSIGNAL SIGRTMIN+3' \
  'ENTRYPOINT ["/usr/local/bin/entrypoint"]' \
  'CMD ["/sbin/init"]' | DOCKER_BUILDKIT=0 docker build --quiet --tag "$tag" - >&2
docker image rm "$tag-rootfs" >/dev/null
echo "node image: built $tag" >&2
echo "$tag"
