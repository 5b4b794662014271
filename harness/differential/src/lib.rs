//! The differential judge (issue #28): the same request/response exchanges against two
//! apiservers — the sim and a real kube-apiserver — compared after normalising only what
//! legitimately differs (`normalise`, `canonical`).
//!
//! - `corpus`: the scripts (hand-written, recorded, generated from `corpus/resources.yaml`);
//! - `target`: an apiserver given by a kubeconfig, sent raw requests;
//! - `runner`: one script on one target, placeholders filled from its own answers;
//! - `normalise` and `canonical`: the rules, in one place;
//! - `compare`: JSON-pointer differences and the (group, verb) of an exchange;
//! - `judge`: both targets, the tally and the report;
//! - `record`: the recording proxy that turns real clients' requests into scripts;
//! - `drive`: kube-rs doing everyday things, for recording.

pub mod canonical;
pub mod compare;
pub mod corpus;
pub mod drive;
pub mod judge;
pub mod normalise;
pub mod record;
pub mod runner;
pub mod target;
