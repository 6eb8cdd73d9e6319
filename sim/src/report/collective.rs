//! The report of a collective run, typed (`report::typed`): what `workload::collective` writes
//! and the summary reads. Times in seconds, sizes in bytes, bandwidths in GB/s (nccl-tests'
//! algbw and busbw). The `links` section, the compression settings and the keys other stages
//! add (`uncertainty`, `cost`) stay JSON.

use super::typed::{Sim, TypedReport};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A collective run's report: the operation as priced, and uncompressed beside it when the
/// scenario compresses.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveReport {
    /// Always `"collective"`.
    pub kind: String,
    pub scenario: String,
    pub op: String,
    pub size_bytes: u64,
    pub ranks: u32,
    pub time_s: f64,
    #[serde(rename = "algbw_GBps")]
    pub algbw_gbps: f64,
    #[serde(rename = "busbw_GBps")]
    pub busbw_gbps: f64,
    pub algorithm: String,
    pub protocol: String,
    pub cluster: Cluster,
    pub fidelity: Fidelity,
    pub assumptions: Vec<String>,
    pub sim: Sim,
    /// The links the collective used and how busy (`report::links`).
    pub links: Value,
    /// The same collective without compression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncompressed: Option<Priced>,
    /// Uncompressed time over compressed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Value>,
}

/// One pricing of the collective: its time, bandwidths, algorithm and protocol.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Priced {
    pub time_s: f64,
    #[serde(rename = "algbw_GBps")]
    pub algbw_gbps: f64,
    #[serde(rename = "busbw_GBps")]
    pub busbw_gbps: f64,
    pub algorithm: String,
    pub protocol: String,
}

/// The cluster the collective runs on.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    pub gpu: String,
    pub gpus: u32,
    pub nodes: u32,
    pub gpus_per_node: u32,
}

/// How the collective was priced.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fidelity {
    pub network: String,
    pub topology: String,
    pub symmetry: String,
}

impl TypedReport for CollectiveReport {
    const KIND: &'static str = "collective";
}
