//! Faultline: a chaos and simulation test harness for Kubernetes controllers.
//!
//! Layers: `model` (the scenario language) -> `loader` (files, diagnostics), both from crate
//! `faultline-scenario` and re-exported here -> `runner`
//! (providers, faults, controller process, expectations) -> `report` (console, Markdown, JUnit,
//! JSON, HTML, shard merge). `pause` is the console side of `--pause-*`; `init` starts a suite;
//! `envtest` is the controller-runtime envtest drop-in (`faultline envtest-assets`).

pub mod cleanup;
pub mod controller;
pub mod endstate;
pub mod envtest;
pub mod events;
pub mod expect;
pub mod explore;
pub mod faults;
pub mod fidelity;
pub mod gobuild;
pub mod init;
pub mod journal;
pub mod k8s;
pub mod logs;
pub mod pause;
pub mod perturb;
pub mod provider;
pub mod report;
pub mod runner;
pub mod states;
pub mod timeline;

pub use faultline_scenario::{celx, fuzzing, loader, model, spans};
