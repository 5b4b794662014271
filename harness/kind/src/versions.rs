//! Pinned versions. Everything a kind run downloads is pinned here, in one place.

/// The kind release whose node images we use (the version the upstream controller's nightly e2e
/// runs, see `shared/reference/facts.md` §1). Faultline does not run the kind binary: it runs
/// the node image itself through testcontainers.
pub const KIND_RELEASE: &str = "v0.32.0";

/// Kubernetes version of [`NODE_IMAGE`].
pub const KUBERNETES_VERSION: &str = "v1.35.5";

/// `kindest/node` for Kubernetes v1.35.5 as published with kind v0.32.0, pinned by its
/// multi-arch index digest. The digest was taken from public repositories that pin the kind
/// v0.32.0 release images (several agree); it has not been pulled from these machines (no Docker
/// engine here). If the registry ever disagrees, the pull fails: a pinned digest never drifts.
pub const NODE_IMAGE: &str =
    "kindest/node:v1.35.5@sha256:ce977ae6d65918d0b58a5f8b5e940429c2ce42fa3a5619ec2bbc60b949c0ac95";

/// Repository of the node images `ci/node-image/build-real.sh` builds here: Debian's containerd
/// and the upstream binaries of `upstream/` (docs/kind.md "The real node image"), tagged
/// `<Kubernetes version><REAL_NODE_IMAGE_TAG_MARK><recipe hash>`, e.g. `v1.35.4-real-2397449ce51649a3`.
pub const REAL_NODE_IMAGE_REPO: &str = "faultline-node";
pub const REAL_NODE_IMAGE_TAG_MARK: &str = "-real-";

/// The Kubernetes version a node image's tag names: kind's `vX.Y.Z`, or the real node image's
/// `vX.Y.Z-real-<hash>`. None for a tag that names no version (a stand-in, `latest`).
pub fn kubernetes_version_of_image(image: &str) -> Option<&str> {
    let (_, tag) = split_image(image);
    let tag = tag.split('@').next().unwrap_or(tag);
    let version = tag
        .split_once(REAL_NODE_IMAGE_TAG_MARK)
        .map_or(tag, |(v, _)| v);
    version.starts_with('v').then_some(version)
}

/// Longhorn release installed on kind (the sim models the same version's components).
pub const LONGHORN_VERSION: &str = "v1.9.1";

/// The release manifest of [`LONGHORN_VERSION`].
pub fn longhorn_manifest_url() -> String {
    format!("https://raw.githubusercontent.com/longhorn/longhorn/{LONGHORN_VERSION}/deploy/longhorn.yaml")
}

/// Image of the node agent DaemonSet used by the `existing` provider (needs `nsenter`, `sh`;
/// util-linux is essential in Debian).
pub const NODE_AGENT_IMAGE: &str = "docker.io/library/debian:bookworm-slim";

/// Image of the stale pods `kubeletWorkersSaturated` creates (they exit 1 at once).
pub const STALE_POD_IMAGE: &str = "docker.io/library/busybox:1.37.0";

/// Split `repo:tag@sha256:…` into (`repo`, `tag@sha256:…`) as testcontainers wants name and tag.
pub fn split_image(image: &str) -> (&str, &str) {
    // The tag separator is the last ':' before any '@' that comes after the last '/'.
    let (name_part, digest) = match image.find('@') {
        Some(i) => (&image[..i], Some(&image[i..])),
        None => (image, None),
    };
    let slash = name_part.rfind('/').map(|i| i + 1).unwrap_or(0);
    match name_part[slash..].rfind(':') {
        Some(c) => {
            let c = slash + c;
            (&image[..c], &image[c + 1..])
        }
        None => match digest {
            // `repo@sha256:…`: testcontainers joins name and tag with ':', which cannot express a
            // bare digest; callers pin tag and digest together.
            Some(_) => (name_part, &image[name_part.len()..]),
            None => (image, "latest"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn node_image_is_pinned_by_digest_and_matches_the_kubernetes_version() {
        let (name, tag) = split_image(NODE_IMAGE);
        assert_eq!(name, "kindest/node");
        assert!(
            tag.starts_with(&format!("{KUBERNETES_VERSION}@sha256:")),
            "{tag}"
        );
        let digest = tag.split_once("@sha256:").unwrap().1;
        assert_eq!(digest.len(), 64);
        assert!(digest
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    }

    #[test]
    fn longhorn_manifest_is_a_pinned_release() {
        assert!(LONGHORN_VERSION.starts_with("v1.9."));
        assert_eq!(
            longhorn_manifest_url(),
            "https://raw.githubusercontent.com/longhorn/longhorn/v1.9.1/deploy/longhorn.yaml"
        );
    }

    #[rstest]
    #[case(NODE_IMAGE, Some(KUBERNETES_VERSION))]
    #[case("faultline-node:v1.35.4-real-2397449ce51649a3", Some("v1.35.4"))]
    #[case("kindest/node:v1.35.5", Some("v1.35.5"))]
    #[case("faultline-node:9422687973dcbb2f", None)]
    #[case("busybox", None)]
    fn node_image_tags_name_their_kubernetes_version(
        #[case] image: &str,
        #[case] version: Option<&str>,
    ) {
        assert_eq!(kubernetes_version_of_image(image), version);
    }

    #[rstest]
    #[case("busybox", "busybox", "latest")]
    #[case(
        "docker.io/library/busybox:1.37.0",
        "docker.io/library/busybox",
        "1.37.0"
    )]
    #[case("localhost:5000/ctrl:dev", "localhost:5000/ctrl", "dev")]
    #[case("localhost:5000/ctrl", "localhost:5000/ctrl", "latest")]
    #[case(
        "kindest/node:v1.35.5@sha256:abc",
        "kindest/node",
        "v1.35.5@sha256:abc"
    )]
    fn splits_image_references(#[case] image: &str, #[case] name: &str, #[case] tag: &str) {
        assert_eq!(split_image(image), (name, tag));
    }
}
