//! The storage side: the Longhorn CSI driver's install objects (`longhorn`), its provisioner
//! (`provisioner`) and the attacher (`attacher`).

pub mod attacher;
pub mod longhorn;
pub mod provisioner;
