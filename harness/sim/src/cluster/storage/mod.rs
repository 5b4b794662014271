//! The storage side: Longhorn's install objects, its CSI provisioner and the attacher.

pub mod longhorn;

// Kept for the moved file's `super::volumes` path.
use super::node::volumes;
