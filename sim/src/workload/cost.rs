//! Prices of GPU time and energy (`[cost]`), shared by every kind of workload: what a unit of
//! work (a million tokens, a video) costs at the simulated throughput.
//!
//! GPU time is billed for every GPU of the run, busy or not; energy (training, which has the
//! power model) is the GPUs' board power times the facility's power usage effectiveness.

use serde_json::{Value, json};

/// Prices of GPU time and energy (`[cost]`, read by `scenario/lower/cost.rs`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Prices {
    pub usd_per_gpu_hour: Option<f64>,
    pub usd_per_kwh: Option<f64>,
    /// Power usage effectiveness (1 when not given: board power alone).
    pub pue: f64,
}

impl Prices {
    /// Dollars of GPU time for `gpus` GPUs over `seconds`.
    pub fn gpu_usd(&self, gpus: u32, seconds: f64) -> Option<f64> {
        self.usd_per_gpu_hour
            .map(|p| p * gpus as f64 * seconds / 3600.0)
    }

    /// The report's `cost` section for `gpus` GPUs doing `units` of work (named `unit`, e.g.
    /// "million_output_tokens") in `seconds`.
    pub fn per_unit(&self, gpus: u32, seconds: f64, units: f64, unit: &str) -> Value {
        let mut v = json!({ "usd_per_gpu_hour": self.usd_per_gpu_hour });
        if let Some(usd) = self.gpu_usd(gpus, seconds)
            && units > 0.0
        {
            v[format!("usd_per_{unit}")] = json!(usd / units);
            v[format!("gpu_hours_per_{unit}")] = json!(gpus as f64 * seconds / 3600.0 / units);
        }
        v
    }
}
