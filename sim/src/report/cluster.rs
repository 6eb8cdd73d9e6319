//! The report of a cluster run (several jobs on one cluster), typed (`report::typed`): what
//! `workload::jobs` writes and the summary reads. Times in seconds, bytes as carried, `busy` as
//! a share of the run. Each job's own report (of its kind) and a fleet's latency figures stay
//! JSON, as do keys other stages add (`cost`).

use super::typed::{Sim, TypedReport};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// A cluster run's report: each job against running alone, and the links they shared.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterReport {
    /// Always `"cluster"`.
    pub kind: String,
    pub scenario: String,
    pub cluster: Cluster,
    pub jobs: Vec<Job>,
    /// The job that sharing slowed most.
    pub slowdown: Slowest,
    pub links: Links,
    pub fidelity: Fidelity,
    pub assumptions: Vec<String>,
    pub sim: Sim,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Value>,
}

/// The cluster the jobs share.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    pub gpu: String,
    pub nodes: u32,
    pub gpus: u32,
    pub topology: String,
}

/// One job: where it ran, what sharing cost it, and its own report run alone.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    pub name: String,
    /// `"training"`, `"serving"` or `"diffusion"`.
    pub kind: String,
    /// Its first and last server.
    pub servers: [u32; 2],
    pub gpus: u32,
    /// Its time beside the others over its time alone (a step, a fleet's mean end to end).
    pub slowdown: f64,
    pub bytes_between_servers: f64,
    pub report: Value,
    /// A training job's step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_s: Option<Step>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_counted: Option<u64>,
    /// A fleet's latency figures (as a serving report gives them), alone and shared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Shared>,
}

/// A training job's step alone and beside the others on the cluster's engine, and as its own
/// report priced it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub alone: f64,
    pub shared: f64,
    pub report: f64,
}

/// A fleet's figures alone and shared.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shared {
    pub alone: Value,
    pub shared: Value,
}

/// The largest slowdown and whose.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slowest {
    pub max: f64,
    pub job: Option<String>,
}

/// The links between servers that carried traffic.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Links {
    /// The busiest, most bytes first.
    pub busiest: Vec<BusyLink>,
    pub used: u64,
    pub shared_by_jobs: u64,
}

/// One link: its ends, bytes, share of the run busy at line rate, and each job's bytes on it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BusyLink {
    pub from: String,
    pub to: String,
    pub kind: String,
    pub bytes: f64,
    pub busy: f64,
    pub jobs: BTreeMap<String, f64>,
}

/// What was shared and how it was simulated.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fidelity {
    pub network: String,
    pub sharing: String,
    pub ranks: String,
    pub serving: String,
}

impl TypedReport for ClusterReport {
    const KIND: &'static str = "cluster";
}
