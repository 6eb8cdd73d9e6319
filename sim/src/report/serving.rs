//! The report of a serving run, typed (`report::typed`): what `workload::serving` writes for a
//! fleet of replicas or of placed pipelines, and the summary and the planner read. Times in
//! seconds, sizes in bytes, rates per second. Sections only some fleets have, and keys other
//! stages add, stay JSON: `histograms`, `over_time`, `energy`, `offload`, `placement`, each
//! group's row, `uncertainty`, `cost`.

use super::percentiles::Percentiles;
use super::typed::{Sim, TypedReport};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A serving run's report.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServingReport {
    /// Always `"serving"`.
    pub kind: String,
    pub scenario: String,
    pub requests: u64,
    pub requests_completed: u64,
    pub throughput: Throughput,
    /// Time to the first token, over the completed requests.
    pub ttft_s: Percentiles,
    /// Time per output token after the first.
    pub tpot_s: Percentiles,
    pub e2e_s: Percentiles,
    /// From arrival to admission.
    pub queueing_s: Percentiles,
    pub histograms: Value,
    pub slo: Slo,
    pub kv_cache: KvCache,
    pub memory: Memory,
    pub cluster: Cluster,
    /// Prefill and decode pools, when the fleet is disaggregated.
    pub disaggregation: Option<Disaggregation>,
    pub model: Model,
    pub serving: Engine,
    pub fidelity: Fidelity,
    pub assumptions: Vec<String>,
    pub sim: Sim,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_time: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offload: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Value>,
}

/// Completed work over the time from the first arrival to the last completion (`span_s`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Throughput {
    pub requests_per_s: f64,
    pub output_tokens_per_s: f64,
    pub span_s: f64,
    /// From the first arrival to the last.
    pub arrival_span_s: f64,
}

/// The share of requests meeting every latency bound, and their rate.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    pub attainment: f64,
    pub goodput_requests_per_s: f64,
}

/// The KV cache: its blocks, their peak use and what made room.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvCache {
    /// One kind of replica only.
    pub blocks_per_replica: Option<u32>,
    pub block_tokens: u32,
    pub peak_use: f64,
    pub preemptions: u64,
    pub preemption: String,
    pub swapped_bytes: f64,
}

/// Memory per GPU (the figures of one kind of replica; none for a mixed fleet).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub weights_bytes_per_gpu: Option<u64>,
    pub weights_offload_bytes_per_gpu: f64,
    pub kv_bytes_per_gpu: Option<u64>,
    pub capacity_bytes: Option<u64>,
    pub fits: bool,
}

/// The fleet's GPUs; `tp` and `pp` of one kind of replica only.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// The GPU, or `"mixed"`.
    pub gpu: String,
    pub gpus: u32,
    pub nodes: u32,
    pub replicas: u32,
    pub tp: Option<u32>,
    pub pp: Option<u32>,
    /// One row per kind of replica or group of servers.
    pub groups: Vec<Value>,
    pub profile: Option<String>,
}

/// Disaggregated prefill and decode pools, and the KV caches moved between them.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Disaggregation {
    pub prefill_replicas: u32,
    pub decode_replicas: u32,
    pub kv_transfers: u64,
    pub kv_transfer_bytes: f64,
    pub kv_transfer_s: Percentiles,
}

/// The model served.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    pub name: String,
    pub params: u64,
    pub dtype: String,
}

/// The engine and its batch limits.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Engine {
    pub engine: String,
    pub scheduler: String,
    pub max_batch_size: u32,
    pub max_batch_tokens: u32,
}

/// How the run was priced and what was simulated.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fidelity {
    pub compute: String,
    pub network: String,
    pub symmetry: String,
}

/// What every fleet's requests give: counts, throughput, latencies and SLO attainment (the
/// first keys of a serving report; `workload::serving::Lives::report` computes them).
#[derive(Clone, Debug, Serialize)]
pub struct Latency {
    pub requests: u64,
    pub requests_completed: u64,
    pub throughput: Throughput,
    pub ttft_s: Percentiles,
    pub tpot_s: Percentiles,
    pub e2e_s: Percentiles,
    pub queueing_s: Percentiles,
    pub histograms: Value,
    pub slo: Slo,
}

impl Latency {
    /// The figures as the JSON object a cluster's serving job reports.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("latency figures are plain data")
    }
}

impl TypedReport for ServingReport {
    const KIND: &'static str = "serving";
}
