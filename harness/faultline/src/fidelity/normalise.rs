//! Normalisers: what differs between two runs of one scenario for no reason of behaviour (names
//! the cluster made up, uids, times, durations, the CSI driver each provider has) becomes a
//! placeholder, so that what is left can be compared as text. Pure functions.

use regex::Regex;
use std::sync::LazyLock;

/// One rewrite: a pattern and its placeholder, applied in order.
struct Rule(Regex, &'static str);

fn rule(re: &str, to: &'static str) -> Rule {
    Rule(Regex::new(re).expect("normaliser pattern"), to)
}

/// The CSI drivers that stand for one another: the sim's (Longhorn's name) and the real node
/// image's hostpath driver (docs/kind.md, "Real CSI").
pub const CSI_DRIVERS: &[&str] = &["driver.longhorn.io", "hostpath.csi.faultline.dev"];

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        // klog's header: `E1207 05:04:42.123456    1234 file.go:348] `.
        rule(
            r"^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ [\w.-]+:\d+\] ",
            "",
        ),
        // Wall times: RFC 3339 and Go's `2026-12-07 05:04:43.1 +0000 UTC m=+12.5`.
        rule(
            r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?( ?(Z|[+-]\d{2}:?\d{2}))?( UTC)?( m=[+-]\d+(\.\d+)?)?",
            "<time>",
        ),
        // The CSI driver of each provider.
        rule(
            r"driver\.longhorn\.io|hostpath\.csi\.faultline\.dev",
            "<csi-driver>",
        ),
        // PV names are the PVC's uid (`pvc-` + uuid); other uuids are uids.
        rule(
            r"pvc-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "<pv>",
        ),
        rule(
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "<uid>",
        ),
        // Hashes in paths and names (the globalmount's sha256 of the volume handle, a
        // VolumeAttachment's `csi-<sha256>`).
        rule(r"[0-9a-f]{40,64}", "<hash>"),
        // Go durations: `500ms`, `2m2s`, `1m4.5s`, `(durationBeforeRetry 4s)`.
        rule(
            r"\b(\d+h)?(\d+m)?\d+(\.\d+)?(ms|s|µs|us|ns)\b",
            "<duration>",
        ),
        rule(r"\b\d+h(\d+m)?\b|\b\d+m\b", "<duration>"),
        // A run's cluster name (`<scenario>-<6 hex>`) where a node name appears qualified.
        rule(
            r"\b[a-z0-9-]+-[0-9a-f]{6}-(control-plane|worker-\d+)\b",
            "$1",
        ),
        // Pod addresses.
        rule(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(:\d+)?\b", "<ip>"),
    ]
});

/// A message with run-specific parts replaced by placeholders; whitespace runs collapsed.
pub fn message(text: &str) -> String {
    let mut s = text.trim().to_string();
    for Rule(re, to) in RULES.iter() {
        s = re.replace_all(&s, *to).into_owned();
    }
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A pod's name with its generated suffix dropped (`demo-7d9f8-x2k4q` -> `demo-*`), so pods a
/// controller made match across runs; names a scenario gave stay as they are.
pub fn pod_name(name: &str, generated: bool) -> String {
    if !generated {
        return name.to_string();
    }
    match name.rsplit_once('-') {
        Some((base, _)) => format!("{base}-*"),
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_kubelet_line_and_the_sims_normalise_alike() {
        let real = r#"E1207 05:04:42.123456    1234 nestedpendingoperations.go:348] Operation for "{volumeName:kubernetes.io/csi/hostpath.csi.faultline.dev^pvc-0b1c9a52-8d44-4c1b-9a57-1f2e3d4c5b6a podName: nodeName:}" failed. No retries permitted until 2026-12-07 05:04:43.123 +0000 UTC m=+120.5 (durationBeforeRetry 1m4s). Error: GetDeviceMountRefs check failed for volume "pvc-0b1c9a52-8d44-4c1b-9a57-1f2e3d4c5b6a" on node "worker-01""#;
        let sim = r#"Operation for "{volumeName:kubernetes.io/csi/driver.longhorn.io^pvc-11111111-2222-3333-4444-555555555555 podName: nodeName:}" failed. No retries permitted until 2026-01-01T00:00:01Z (durationBeforeRetry 500ms). Error: GetDeviceMountRefs check failed for volume "pvc-11111111-2222-3333-4444-555555555555" on node "worker-01""#;
        assert_eq!(message(real), message(sim));
        assert!(message(real)
            .starts_with("Operation for \"{volumeName:kubernetes.io/csi/<csi-driver>^<pv> "));
        assert!(
            message(real).contains("(durationBeforeRetry <duration>)"),
            "{}",
            message(real)
        );
    }

    #[test]
    fn what_differs_in_behaviour_stays() {
        assert_ne!(
            message("MountVolume.MountDevice failed for volume \"pvc-1\" : rpc error: code = DeadlineExceeded"),
            message("MountVolume.MountDevice failed for volume \"pvc-1\" : rpc error: code = Unavailable")
        );
        assert_eq!(
            message("  Successfully   assigned default/app-1 to worker-01 "),
            "Successfully assigned default/app-1 to worker-01"
        );
    }

    #[test]
    fn hashes_uids_addresses_and_cluster_names_become_placeholders() {
        let path = format!(
            "/var/lib/kubelet/plugins/kubernetes.io/csi/hostpath.csi.faultline.dev/{}/globalmount",
            "ab".repeat(32)
        );
        assert_eq!(
            message(&path),
            "/var/lib/kubelet/plugins/kubernetes.io/csi/<csi-driver>/<hash>/globalmount"
        );
        assert_eq!(
            message("uid 0b1c9a52-8d44-4c1b-9a57-1f2e3d4c5b6a"),
            "uid <uid>"
        );
        assert_eq!(message("pod ip 10.244.1.7:8080"), "pod ip <ip>");
        assert_eq!(
            message("node kind-stale-device-mount-3fa2c1-worker-02 lost"),
            "node worker-02 lost"
        );
        assert_eq!(
            message("backoff 2m2s then 1h"),
            "backoff <duration> then <duration>"
        );
    }

    #[test]
    fn generated_pod_names_lose_their_suffix_only() {
        assert_eq!(pod_name("demo-x2k4q", true), "demo-*");
        assert_eq!(pod_name("app-1", false), "app-1");
    }
}
