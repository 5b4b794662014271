//! Server-side apply and `metadata.managedFields` by kube-apiserver 1.35's own mechanism:
//! structured-merge-diff v6 (`fieldpath`, `typed`, `merge.Updater`) over the schema the
//! apiserver builds from its OpenAPI definitions (`schema`, generated from the Go modules by
//! `upstream/smdschema`), driven by apimachinery's field manager chain (`managed`) with each
//! strategy's reset fields (`reset`).

pub(crate) mod fieldpath;
pub(crate) mod goencoding;
pub(crate) mod managed;
pub(crate) mod reset;
pub(crate) mod schema;
pub(crate) mod typed;
