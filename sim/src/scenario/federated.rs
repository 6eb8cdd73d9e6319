//! `[federated]`: federated training over a population of devices (`kind = "federated"`): who
//! the devices are (compute speed, links, availability, drop-out), how the server runs a round
//! (cohort, quorum, deadline), what each device trains locally and what it uploads.
//! `scenario/lower/federated.rs` checks the values and applies (and records) the defaults.

use super::quantity::{Bandwidth, Duration, Throughput};
use serde::Deserialize;

pub use crate::workload::federated::Download;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FederatedSection {
    /// Devices in the population.
    pub population: Option<u32>,
    /// Probability that a device is online (eligible) when a round starts, independently per
    /// round.
    pub availability: Option<f64>,
    /// Devices the server selects per round.
    pub cohort: Option<u32>,
    /// Reports that close a round early (over-selection: a cohort larger than the quorum).
    pub quorum: Option<u32>,
    /// Fewest reports for a closed round's aggregate to be used; fewer and the round failed.
    pub min_reports: Option<u32>,
    /// Longest a round may last; devices still working then are dropped as stragglers.
    pub deadline: Option<Duration>,
    /// Rounds to simulate.
    pub rounds: Option<u32>,
    /// Server time between a round's close and the next round's start (aggregation, model
    /// publication).
    pub server_time: Option<Duration>,
    /// Probability that a selected device drops out during its work (unplugged, lost network).
    pub dropout: Option<f64>,
    /// Median achieved training speed of a device.
    pub compute: Option<Throughput>,
    /// Spread of the speed over devices: sigma of its natural logarithm (0: all alike).
    pub compute_sigma: Option<f64>,
    /// Median device uplink and downlink.
    pub uplink: Option<Bandwidth>,
    pub uplink_sigma: Option<f64>,
    pub downlink: Option<Bandwidth>,
    pub downlink_sigma: Option<f64>,
    /// Local training per round: steps of `batch` sequences of `[model] seq_len` tokens.
    pub local_steps: Option<u32>,
    pub batch: Option<u32>,
    /// What trains in the transformer layers: all their weights, or LoRA adapters.
    pub train: Option<TrainedBody>,
    /// LoRA's rank (with `train = "lora"`).
    pub lora_rank: Option<u32>,
    /// What trains in the embedding table (and the output projection when untied).
    pub embedding: Option<TrainedEmbedding>,
    /// Rows of each table a partial embedding update trains: a count chosen by the server for
    /// every device of the round, or "seen" (each device's distinct tokens).
    pub embedding_rows: Option<EmbeddingRows>,
    /// Exponent of the Zipf law of token frequencies (with `embedding_rows = "seen"`).
    pub zipf_exponent: Option<f64>,
    /// Noise-contrastive estimation: the output layer scores the true token and this many
    /// sampled ones instead of the whole vocabulary.
    pub nce_samples: Option<u32>,
    /// Bits per uploaded coordinate (32: fp32; 16; 8 or fewer: quantised).
    pub update_bits: Option<u32>,
    /// What a device downloads each round: the whole model, or only what it trains.
    pub download: Option<Download>,
    /// Central differential privacy: Gaussian noise of this many times the clipping bound.
    pub dp_noise_multiplier: Option<f64>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrainedBody {
    Full,
    Lora,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrainedEmbedding {
    Full,
    Partial,
    Frozen,
}

/// `embedding_rows = 10000` or `embedding_rows = "seen"`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum EmbeddingRows {
    Count(u32),
    Named(String),
}
