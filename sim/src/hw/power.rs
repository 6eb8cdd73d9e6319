//! GPU board power by utilisation: idle power plus the rest of the board's power limit (TDP) in
//! proportion to the time its compute stream is busy.
//!
//! - Idle: the device's own idle power where its spec gives one (`GpuSpec::idle_watts`, a custom
//!   accelerator's `idle_power`), else 15% of TDP. nvidia-smi on idle HGX boards reads about 50-60 W for an A100 SXM (400 W)
//!   and 70-100 W for an H100 SXM (700 W), 10-15%; an idle GPU in a running job (waiting in a
//!   collective, its clocks up) sits at the top of that range, so the top is taken.
//! - Busy: the power limit. Dense GEMMs, the bulk of training and of prefill, run at the board's
//!   power limit (clocks throttle to stay under it).
//!
//! Deliberately ignored: memory-bound kernels drawing less than the limit, the host (CPUs, NICs,
//! fans, storage) and the facility's cooling, which the scenario's power usage effectiveness
//! (`[cost] pue`) stands for when given.

use super::GpuSpec;

/// Idle board power as a share of the power limit.
pub const IDLE_FRACTION: f64 = 0.15;

/// Idle board power of `gpu`, watts.
pub fn idle_watts(gpu: &GpuSpec) -> f64 {
    gpu.idle_watts.unwrap_or(IDLE_FRACTION * gpu.tdp_watts)
}

/// Average board power of `gpu`, watts, when its compute stream is busy `busy` of the time (0-1).
pub fn board_watts(gpu: &GpuSpec, busy: f64) -> f64 {
    let idle = idle_watts(gpu);
    idle + (gpu.tdp_watts - idle) * busy.clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::gpu;

    #[test]
    fn power_runs_from_idle_to_the_power_limit() {
        let h100 = gpu::find("H100").unwrap();
        assert_eq!(board_watts(h100, 0.0), 0.15 * 700.0);
        assert_eq!(board_watts(h100, 1.0), 700.0);
        assert_eq!(board_watts(h100, 0.5), 0.5 * (105.0 + 700.0));
        let own_idle = GpuSpec {
            idle_watts: Some(20.0),
            ..h100.clone()
        };
        assert_eq!(board_watts(&own_idle, 0.0), 20.0);
        assert_eq!(board_watts(&own_idle, 2.0), 700.0);
    }
}
