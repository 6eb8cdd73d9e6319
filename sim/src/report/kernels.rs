//! The report of a kernels run, typed (`report::typed`): the same work as one launch a child and
//! as consolidated launches, what `workload::kernels` writes and the summary reads. Times in
//! seconds; shares in 0-1. Keys other stages add (`cost`) stay JSON.

use super::typed::{Sim, TypedReport};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A kernels run's report: the consolidated launches at the top level, one launch a child in
/// `unconsolidated`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelsReport {
    /// Always `"kernels"`.
    pub kind: String,
    pub scenario: String,
    pub cluster: Cluster,
    /// Child grids of the work.
    pub children: u64,
    /// Children a consolidated launch does.
    pub consolidate: u64,
    pub time_s: f64,
    pub launches: u64,
    pub launch_overhead_s: f64,
    pub launch_overhead_share: f64,
    /// The share of the multiprocessors a launch keeps busy.
    pub sm_share: f64,
    pub unconsolidated: Launched,
    /// One launch a child's time over the consolidated time.
    pub speedup: f64,
    pub fidelity: Fidelity,
    pub assumptions: Vec<String>,
    pub sim: Sim,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Value>,
}

/// One way of launching the work.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Launched {
    pub time_s: f64,
    pub launches: u64,
    pub launch_overhead_s: f64,
    pub launch_overhead_share: f64,
    pub sm_share: f64,
}

/// The one GPU the launches run on.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    pub gpu: String,
    pub gpus: u32,
    pub multiprocessors: u32,
}

/// How the launches were priced.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fidelity {
    pub compute: String,
    pub symmetry: String,
}

impl TypedReport for KernelsReport {
    const KIND: &'static str = "kernels";
}
