//! `[[perturb]]`: GPUs that compute slower than their peers, or less steadily (training). An
//! entry names one `gpu` (global rank) or one `server` (node index), and any of a `slowdown` (its
//! kernels take that many times as long, at least 1), a `power_limit` (a lower board power limit
//! than `[cluster]`'s, e.g. "500 W") and a `jitter` (each kernel's time varies by that
//! coefficient of variation, 0-1); a `jitter` without a target applies to every GPU. A server's
//! `nic_bandwidth` runs its NICs' cables below the cluster's rate; `link = [from, to]` with a
//! `bandwidth` does so for one link between two devices (both directions), named as the report's
//! `links` names them (`node3/nic2`, `leaf0`, `spine5`); `link` with `failed = true` takes a
//! cable between a leaf and a spine out of the fabric.

use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerturbEntry {
    pub gpu: Option<u32>,
    pub server: Option<u32>,
    pub slowdown: Option<f64>,
    pub jitter: Option<f64>,
    pub power_limit: Option<crate::quantity::Power>,
    pub nic_bandwidth: Option<crate::quantity::Bandwidth>,
    pub link: Option<[String; 2]>,
    pub bandwidth: Option<crate::quantity::Bandwidth>,
    pub failed: Option<bool>,
}
