//! The report of a federated run, typed (`report::typed`): what `workload::federated` writes and
//! the summary reads. Times in seconds, sizes in bytes, compute in FLOPs, rates per hour. Keys
//! other stages add (`cost`) stay JSON.

use super::percentiles::Percentiles;
use super::typed::{Sim, TypedReport};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A federated run's report: the model, the population, the update a device sends, the rounds.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FederatedReport {
    /// Always `"federated"`.
    pub kind: String,
    pub scenario: String,
    pub model: Model,
    pub population: Population,
    pub update: Update,
    pub local_tokens_per_device: f64,
    pub local_flops_per_device: f64,
    pub download_bytes_per_device: f64,
    pub upload_bytes_per_device: f64,
    pub upload_bytes_per_round: f64,
    pub upload_bytes_total: f64,
    pub device_memory_bytes: f64,
    pub device_memory_breakdown_bytes: DeviceMemory,
    pub round_time_s: Percentiles,
    pub rounds: u64,
    pub rounds_succeeded: u64,
    pub rounds_failed: u64,
    pub rounds_per_hour: f64,
    pub successful_rounds_per_hour: f64,
    /// Simulated time, from the first round's start to the last one's end.
    pub simulated_s: f64,
    pub selected_per_round: f64,
    pub reports_per_round: f64,
    pub dropouts: u64,
    pub stragglers_dropped: u64,
    /// Each reporting device's time, by phase.
    pub device_time_s: DeviceTime,
    pub fidelity: Fidelity,
    pub assumptions: Vec<String>,
    pub sim: Sim,
    /// Central differential privacy, when the scenario adds noise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dp: Option<Dp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Value>,
}

/// The model every device trains.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    pub name: String,
    pub params: u64,
    pub layers: u32,
    pub hidden: u32,
    pub vocab: u32,
    pub seq_len: u32,
    pub dtype: String,
}

/// The devices, and the medians of their drawn speeds and links.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Population {
    pub devices: u32,
    pub availability: f64,
    pub dropout: f64,
    pub compute_flops_median: f64,
    pub uplink_bytes_per_s_median: f64,
    pub downlink_bytes_per_s_median: f64,
}

/// What a device trains and sends.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Update {
    /// `"full"` or `"lora"`.
    pub train: String,
    pub lora_rank: Option<u32>,
    pub embedding_rows: f64,
    pub tables: u32,
    pub body_coordinates: f64,
    pub trainable_coordinates: f64,
    pub trainable_fraction: f64,
    pub output_classes: f64,
}

/// A device's memory while it trains.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceMemory {
    pub weights: f64,
    pub gradients: f64,
    pub activations: f64,
    pub logits: f64,
}

/// A reporting device's time in each phase, over the devices.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceTime {
    pub download: Percentiles,
    pub compute: Percentiles,
    pub upload: Percentiles,
    pub total: Percentiles,
}

/// What was simulated and what was not.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fidelity {
    pub devices: String,
    pub compute: String,
    pub network: String,
}

/// Central DP on the average of the clipped updates.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dp {
    pub noise_multiplier: f64,
    pub noised_coordinates: f64,
    /// The noise's norm over the mean update's bound, averaged over the rounds.
    pub noise_to_signal: Option<f64>,
}

impl TypedReport for FederatedReport {
    const KIND: &'static str = "federated";
}
