//! `[cost]` and `[capacity]`: prices of GPU time and energy (any kind of scenario), and the
//! amount of training a run must do.

use super::quantity::Period;
use serde::Deserialize;

/// Prices. Dollars are plain numbers with the unit in the key's name.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostSection {
    /// Rent or amortised price of one GPU for one hour, US dollars (energy excluded).
    pub usd_per_gpu_hour: Option<f64>,
    /// Price of electricity, US dollars per kWh (needs the power model: training only).
    pub usd_per_kwh: Option<f64>,
    /// Facility power over IT power (power usage effectiveness, >= 1); without it energy is the
    /// GPUs' board power alone.
    pub pue: Option<f64>,
}

/// Training: what the run must get through.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacitySection {
    /// Tokens to train on (a count: `300e9`).
    pub tokens: Option<f64>,
}

/// Training: failures, checkpoints and stragglers.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReliabilitySection {
    /// Mean time between failures of one GPU (`"50000 h"`).
    pub gpu_mtbf: Option<Period>,
    /// Mean time between failures of one node beyond its GPUs (host, NICs, power supply).
    pub node_mtbf: Option<Period>,
    /// How long the job stalls to write a checkpoint.
    pub checkpoint_write: Option<Period>,
    /// Training time between checkpoints; default the Young/Daly optimum.
    pub checkpoint_interval: Option<Period>,
    /// After a failure: detection, re-queue, restart and checkpoint reload, until training
    /// resumes.
    pub restart: Option<Period>,
    /// Fault-tolerant training (replicas drop out and rejoin, as in FT-HSDP): until a failed
    /// data-parallel replica trains again; default `restart`.
    pub rejoin: Option<Period>,
    /// Fault-tolerant training: how long every replica waits per failure while the survivors
    /// regroup (detection, reconfiguring the all-reduce); default none beyond the step in flight.
    pub stall: Option<Period>,
    /// One GPU computes this many times slower than its peers (a straggler; >= 1).
    pub straggler_slowdown: Option<f64>,
    /// One server's network links run this many times slower than the others' (a degraded NIC
    /// or cable; >= 1).
    pub straggler_link_slowdown: Option<f64>,
}
