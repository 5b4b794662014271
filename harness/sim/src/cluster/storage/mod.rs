//! The storage side: Longhorn's install objects, its CSI provisioner and the attacher.

pub mod longhorn;
