//! Energy of a serving run: every device of the fleet draws its idle power for the whole run
//! (first arrival to last completion) and its board power above idle while an iteration of its
//! replica runs (`hw::power`: idle to TDP by busy time; to `[cluster] power_limit` when one is
//! set), times the facility's PUE when `[cost]` gives one. Per output token: the run's joules over the output tokens it completed.
//!
//! An iteration keeps all `tp` devices of its stage busy for its whole length; a replica of `pp`
//! stages runs `pp` engines whose iterations pass through every stage, each stage busy for about
//! `1/pp` of each, so an iteration counts `tp` busy device-seconds a second whatever `pp`.
//! Ignored: memory-bound kernels drawing less than the power limit (decode at small batches is
//! priced at full board power while it runs), the host, and idle power between runs.

use crate::hw::{GpuSpec, power};
use serde_json::{Value, json};
use std::sync::Arc;

/// One kind of device in the fleet and what it did.
pub struct Use {
    pub gpu: Arc<GpuSpec>,
    /// Devices of this kind.
    pub gpus: u32,
    /// Device-seconds its replicas' iterations kept busy.
    pub busy_gpu_seconds: f64,
    /// `[cluster] power_limit` below the TDP, watts: busy devices draw it instead of the TDP.
    pub power_limit_watts: Option<f64>,
}

/// The report's `energy` section for a run of `span_s` seconds that produced `output_tokens`.
pub fn report(uses: &[Use], span_s: f64, output_tokens: u64, pue: f64) -> Value {
    let gpus: u32 = uses.iter().map(|u| u.gpus).sum();
    let board_joules: f64 = uses
        .iter()
        .map(|u| {
            let idle = power::idle_watts(&u.gpu);
            let busy = u.busy_gpu_seconds.min(u.gpus as f64 * span_s);
            let top = u.power_limit_watts.unwrap_or(u.gpu.tdp_watts);
            idle * u.gpus as f64 * span_s + (top - idle) * busy
        })
        .sum();
    let joules = board_joules * pue;
    let busy: f64 = uses.iter().map(|u| u.busy_gpu_seconds).sum();
    let device_seconds = gpus as f64 * span_s;
    let per_token = (output_tokens > 0).then(|| joules / output_tokens as f64);
    json!({
        "joules": joules,
        "joules_per_output_token": per_token,
        "kwh_per_million_output_tokens": per_token.map(|j| j / 3.6e6 * 1e6),
        "board_watts_per_gpu": if device_seconds > 0.0 { board_joules / device_seconds } else { 0.0 },
        "gpu_busy_fraction": if device_seconds > 0.0 { busy / device_seconds } else { 0.0 },
        "pue": pue,
        "model": "board power from idle to TDP by the time iterations keep each device busy \
                  (hw::power), for the whole run",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::gpu;

    #[test]
    fn busy_devices_draw_their_power_limit_and_idle_ones_their_idle_power() {
        let h100 = gpu::find("H100").unwrap();
        let idle = power::idle_watts(h100);
        // `gpus` H100s busy `busy` device-seconds of a 10 s run that produced `tokens`.
        let run = |gpus: u32, busy: f64, limit: Option<f64>, tokens: u64, pue: f64| {
            let uses = [Use {
                gpu: h100.into(),
                gpus,
                busy_gpu_seconds: busy,
                power_limit_watts: limit,
            }];
            report(&uses, 10.0, tokens, pue)
        };
        assert_eq!(run(2, 0.0, None, 100, 1.0)["joules"], 2.0 * 10.0 * idle);
        let half = run(2, 10.0, None, 100, 1.5);
        let joules = 1.5 * (2.0 * 10.0 * idle + (700.0 - idle) * 10.0);
        assert_eq!(half["joules"], joules);
        assert_eq!(half["joules_per_output_token"], joules / 100.0);
        assert_eq!(half["gpu_busy_fraction"], 0.5);
        // Busy time beyond the run's length is not drawn twice.
        assert_eq!(run(1, 50.0, None, 1, 1.0)["joules"], 7000.0);
        // Under a power limit busy devices draw the limit.
        assert_eq!(run(1, 10.0, Some(500.0), 1, 1.0)["joules"], 5000.0);
    }
}
