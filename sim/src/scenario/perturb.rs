//! `[[perturb]]`: a GPU or a whole server that computes slower than its peers (training). Each
//! entry names one `gpu` (global rank) or one `server` (node index) and its `slowdown` (its
//! kernels take that many times as long, at least 1).

use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerturbEntry {
    pub gpu: Option<u32>,
    pub server: Option<u32>,
    pub slowdown: Option<f64>,
}
