//! The report of a collective run, typed: what `workload::collective` writes and the summary
//! reads. Serialised through `serde_json::Value` (keys sorted, so field order does not change
//! the bytes). Times in seconds, sizes in bytes, bandwidths in GB/s (nccl-tests' algbw and
//! busbw). The `links` section, the compression settings and the keys other stages add
//! (`uncertainty`, `cost`) stay JSON; a report with a key this type does not know is refused
//! when read back.

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

/// The engine's count (none: a collective is priced, not executed) and the CLI's wall time.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sim {
    pub events: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
}

impl CollectiveReport {
    /// The report as JSON (keys sorted, as every report's).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a collective report is plain data")
    }

    /// A collective report read back from JSON, or what in it this type does not know.
    pub fn from_value(v: &Value) -> Result<CollectiveReport, String> {
        CollectiveReport::deserialize(v).map_err(|e| format!("not a collective report: {e}"))
    }
}
