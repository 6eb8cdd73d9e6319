//! A GPU's idle board power, the floor every power figure starts from: training prices each
//! kernel's draw above it (`hw::clock`, the report's `power` and `energy` sections), serving
//! charges busy device time at the power limit (`workload::serving::energy`).
//!
//! Idle: the device's own idle power where its spec gives one (`GpuSpec::idle_watts`, a custom
//! accelerator's `idle_power`), else 15% of TDP. nvidia-smi on idle HGX boards reads about
//! 50-60 W for an A100 SXM (400 W) and 70-100 W for an H100 SXM (700 W), 10-15%; an idle GPU in a
//! running job (waiting in a collective, its clocks up) sits at the top of that range, so the top
//! is taken.
//!
//! Deliberately ignored: the host (CPUs, NICs, fans, storage) and the facility's cooling, which
//! the scenario's power usage effectiveness (`[cost] pue`) stands for when given.

use super::GpuSpec;

/// Idle board power as a share of the power limit.
pub const IDLE_FRACTION: f64 = 0.15;

/// Idle board power of `gpu`, watts.
pub fn idle_watts(gpu: &GpuSpec) -> f64 {
    gpu.idle_watts.unwrap_or(IDLE_FRACTION * gpu.tdp_watts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::gpu;

    #[test]
    fn idle_is_the_devices_own_or_fifteen_percent_of_its_tdp() {
        let h100 = gpu::find("H100").unwrap();
        assert_eq!(idle_watts(h100), 0.15 * 700.0);
        let own_idle = GpuSpec {
            idle_watts: Some(20.0),
            ..h100.clone()
        };
        assert_eq!(idle_watts(&own_idle), 20.0);
    }
}
