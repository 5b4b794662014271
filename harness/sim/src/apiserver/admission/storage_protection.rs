//! The StorageObjectInUseProtection admission plugin's names (plugin/pkg/admission/storage/
//! storageobjectinuseprotection, the finalizers of pkg/volume/util): which objects are
//! protected and by which finalizer. The plugin adds the finalizer on create
//! (`ApiServer::protect_claim`); kube-controller-manager's protection loops
//! (`controllers::storageprotection`) take it off once nothing uses the deleted object.

pub const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
pub const PV_PROTECTION: &str = "kubernetes.io/pv-protection";
pub const VAC_PROTECTION: &str = "kubernetes.io/vac-protection";

/// Which of the three loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protected {
    Claim,
    Volume,
    AttributesClass,
}

impl Protected {
    /// (group, plural, kind) of the protected resource.
    pub fn resource(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Protected::Claim => ("", "persistentvolumeclaims", "PersistentVolumeClaim"),
            Protected::Volume => ("", "persistentvolumes", "PersistentVolume"),
            Protected::AttributesClass => (
                "storage.k8s.io",
                "volumeattributesclasses",
                "VolumeAttributesClass",
            ),
        }
    }

    pub fn finalizer(self) -> &'static str {
        match self {
            Protected::Claim => PVC_PROTECTION,
            Protected::Volume => PV_PROTECTION,
            Protected::AttributesClass => VAC_PROTECTION,
        }
    }

    /// The protected kind of a (group, plural), for the admission plugin.
    pub fn of(group: &str, plural: &str) -> Option<Protected> {
        [
            Protected::Claim,
            Protected::Volume,
            Protected::AttributesClass,
        ]
        .into_iter()
        .find(|p| {
            let (g, r, _) = p.resource();
            g == group && r == plural
        })
    }
}
