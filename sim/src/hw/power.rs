//! GPU board power by utilisation: idle power plus the rest of the board's power limit (TDP) in
//! proportion to the time its compute stream is busy.
//!
//! - Idle: 15% of TDP. nvidia-smi on idle HGX boards reads about 50-60 W for an A100 SXM (400 W)
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

/// Average board power of `gpu`, watts, when its compute stream is busy `busy` of the time (0-1).
pub fn board_watts(gpu: &GpuSpec, busy: f64) -> f64 {
    let idle = IDLE_FRACTION * gpu.tdp_watts;
    idle + (gpu.tdp_watts - idle) * busy.clamp(0.0, 1.0)
}
