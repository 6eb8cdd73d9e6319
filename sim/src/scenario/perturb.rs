//! `[[perturb]]`: GPUs that compute slower than their peers, or less steadily (training). An
//! entry names one `gpu` (global rank) or one `server` (node index), and any of a `slowdown` (its
//! kernels take that many times as long, at least 1), a `power_limit` (a lower board power limit
//! than `[cluster]`'s, e.g. "500 W") and a `jitter` (each kernel's time varies by that
//! coefficient of variation, 0-1); a `jitter` without a target applies to every GPU.

use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerturbEntry {
    pub gpu: Option<u32>,
    pub server: Option<u32>,
    pub slowdown: Option<f64>,
    pub jitter: Option<f64>,
    pub power_limit: Option<crate::quantity::Power>,
}
