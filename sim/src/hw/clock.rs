//! The clock a kernel sustains under a board power limit, and the board power it draws.
//!
//! Dynamic power is `C V^2 f`; in the DVFS range the voltage rises about in proportion to the
//! clock, so the power of busy SMs goes as `f^3`. A kernel at the rated clock (`f = 1`: the clock
//! the roofline's efficiency constants were measured at, on boards at their TDP) draws
//!
//! `P = idle + (TDP - idle) * (x + M * u_m * (1 - x))`, `x = u_c * f^3`
//!
//! with `u_c` the share of its time the math units are busy (compute time over kernel time),
//! `u_m` the share the memory system streams, and `M` the memory system's share of the board's
//! dynamic power (HBM, its controllers and the load path; HBM's clock is fixed, so that part does
//! not scale with `f`). The math units' part `x` alone can take the board to its TDP; the memory
//! system adds its share of what they leave. Two anchors fix the shape:
//!
//! - A compute-bound tensor-core kernel (`u_c` near 1) draws the TDP: GEMMs run at the board's
//!   power limit ([`super::power`]). At the rated clock no kernel draws more than the TDP, so a
//!   board at its TDP never throttles here (the constants already include the clocks it holds).
//! - A kernel that streams HBM at full bandwidth with idle math units draws
//!   [`MEMORY_BOUND_FRACTION`] of the TDP: 0.43, the top of what LLM decode (memory-bound, HBM
//!   saturated) draws on a 700 W H200, 137-300 W (Ma, Afzal, Eitzinger and Wellein, "The Illusion
//!   of Power Capping in LLM Decode", arXiv 2605.11999, 2026: no power cap triggers in decode).
//!   So `M = (0.43 TDP - idle) / (TDP - idle)`, 0.33 for an idle power of 15% of the TDP.
//!
//! Under a limit `L` below the TDP, a kernel whose draw at the rated clock exceeds `L` runs at the
//! highest clock `f` whose draw fits: its compute time grows by `1 / f`, its memory time does not
//! (HBM keeps its clock), and the kernel's time is re-combined as the roofline combines them. A
//! memory-bound kernel therefore barely slows; a GEMM with little memory traffic runs at about
//! `f = ((L - idle) / (TDP - idle))^(1/3)`: 0.87 of its clock on an H100 held to 500 W.
//! Limits below what a memory-bound kernel draws are refused by the scenario: the memory system's
//! own power is not throttled here.
//!
//! Deliberately ignored: temperature (no thermal model: clocks depend on power alone, the limit is
//! a sustained one and the board settles within a kernel), the time DVFS takes to move (tens of
//! milliseconds on real boards, so very short kernels really run at the clock of their
//! neighbours), voltage floors at low clocks (below them power falls only linearly), and
//! per-architecture differences in how much of the TDP a GEMM reaches.

use super::GpuSpec;
use super::power;

/// Board power of a kernel streaming HBM at full bandwidth with idle math units, as a share of
/// the TDP (source in the module notes).
pub const MEMORY_BOUND_FRACTION: f64 = 0.43;

/// The memory system's share `M` of the dynamic power (above idle) of `gpu`, 0-1.
pub fn memory_share(gpu: &GpuSpec) -> f64 {
    let idle = power::idle_watts(gpu);
    let dynamic = gpu.tdp_watts - idle;
    if dynamic <= 0.0 {
        return 0.0;
    }
    ((MEMORY_BOUND_FRACTION * gpu.tdp_watts - idle) / dynamic).clamp(0.0, 1.0)
}

/// The lowest power limit the model accepts for `gpu`, watts: what a memory-bound kernel draws.
pub fn lowest_limit(gpu: &GpuSpec) -> f64 {
    let idle = power::idle_watts(gpu);
    idle + (gpu.tdp_watts - idle) * memory_share(gpu)
}

/// How busy a kernel keeps the board: the shares of its time (0-1) the math units and the memory
/// system are busy.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Load {
    pub compute: f64,
    pub memory: f64,
}

/// Board power of `gpu`, watts, running a kernel of `load` at `clock` (1 = rated).
pub fn kernel_watts(gpu: &GpuSpec, clock: f64, load: Load) -> f64 {
    let idle = power::idle_watts(gpu);
    let m = memory_share(gpu);
    let compute = load.compute.clamp(0.0, 1.0);
    let memory = load.memory.clamp(0.0, 1.0);
    let math = compute * clock.clamp(0.0, 1.0).powi(3);
    idle + (gpu.tdp_watts - idle) * (math + m * memory * (1.0 - math))
}

/// A kernel's clock and board power under a limit.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Sustained {
    /// Clock as a share of the rated clock (1: not throttled).
    pub clock: f64,
    /// Board power while it runs, watts.
    pub watts: f64,
}

/// The highest clock (0-1] at which a kernel whose load at a clock is `load_at(clock)` draws no
/// more than `limit_watts` on `gpu`, and its draw there. Without a limit, or when the kernel fits
/// at the rated clock, the clock is 1.
pub fn sustained(
    gpu: &GpuSpec,
    limit_watts: Option<f64>,
    load_at: impl Fn(f64) -> Load,
) -> Sustained {
    let rated = kernel_watts(gpu, 1.0, load_at(1.0));
    let Some(limit) = limit_watts else {
        return Sustained {
            clock: 1.0,
            watts: rated,
        };
    };
    if rated <= limit {
        return Sustained {
            clock: 1.0,
            watts: rated,
        };
    }
    // The draw falls with the clock (the compute term goes as f^2 times the share of time the
    // slower math takes); bisect for the highest clock that fits.
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..48 {
        let mid = 0.5 * (lo + hi);
        if kernel_watts(gpu, mid, load_at(mid)) <= limit {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Sustained {
        clock: lo,
        watts: kernel_watts(gpu, lo, load_at(lo)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::gpu;

    /// A kernel of compute time `c` and memory time `m` (rated clock) whose time is `max`.
    fn streaming(c: f64, m: f64) -> impl Fn(f64) -> Load {
        move |f| {
            let c = c / f;
            let t = c.max(m);
            Load {
                compute: c / t,
                memory: m / t,
            }
        }
    }

    #[test]
    fn a_compute_bound_kernel_draws_the_tdp_and_a_memory_bound_one_far_less() {
        let h200 = gpu::find("H200").unwrap();
        let gemm = kernel_watts(h200, 1.0, streaming(1.0, 0.2)(1.0));
        assert!((gemm - 700.0).abs() < 1e-9, "{gemm}");
        let decode = kernel_watts(h200, 1.0, streaming(0.05, 1.0)(1.0));
        // 0.43 x 700 = 301 W plus a little SM power for its arithmetic.
        assert!(decode > 300.0 && decode < 330.0, "{decode}");
        assert!((lowest_limit(h200) - 301.0).abs() < 1e-9);
        assert!((memory_share(h200) - (301.0 - 105.0) / 595.0).abs() < 1e-12);
    }

    #[test]
    fn no_limit_or_a_limit_at_the_tdp_keeps_the_rated_clock() {
        let h100 = gpu::find("H100").unwrap();
        for limit in [None, Some(700.0)] {
            let s = sustained(h100, limit, streaming(1.0, 0.3));
            assert_eq!(s.clock, 1.0);
        }
    }

    #[test]
    fn a_gemm_under_a_limit_slows_by_the_cube_root_a_memory_bound_kernel_does_not() {
        let h100 = gpu::find("H100").unwrap();
        // Pure arithmetic: the draw is idle + D f^3, so f = ((L - idle) / D)^(1/3).
        let s = sustained(h100, Some(500.0), streaming(1.0, 0.0));
        let expected = ((500.0_f64 - 105.0) / 595.0).cbrt();
        assert!(
            (s.clock - expected).abs() < 1e-9,
            "{} vs {expected}",
            s.clock
        );
        assert!(s.clock > 0.86 && s.clock < 0.88, "{}", s.clock);
        assert!(s.watts <= 500.0 && s.watts > 499.99);
        // Memory-bound: its draw at the rated clock is under the limit already.
        let mem = sustained(h100, Some(500.0), streaming(0.1, 1.0));
        assert_eq!(mem.clock, 1.0);
        // A tighter limit lowers the clock further.
        let tighter = sustained(h100, Some(400.0), streaming(1.0, 0.0));
        assert!(tighter.clock < s.clock);
    }

    #[test]
    fn the_roofline_slows_gemms_under_a_limit_and_leaves_streaming_kernels_alone() {
        use crate::hw::{ComputeModel, Dtype, Kernel};
        let h100 = gpu::find("H100").unwrap();
        let free = ComputeModel::new(h100);
        let held = ComputeModel {
            power_limit_watts: Some(500.0),
            ..ComputeModel::new(h100)
        };
        let gemm = Kernel::Gemm {
            m: 8192,
            n: 8192,
            k: 8192,
            batch: 1,
            dtype: Dtype::Bf16,
        };
        let (a, b) = (free.cost(&gemm).unwrap(), held.cost(&gemm).unwrap());
        assert_eq!(a.clock, 1.0);
        assert!(a.watts > 680.0 && a.watts <= 700.0, "{}", a.watts);
        assert!(b.clock < 0.9 && b.watts <= 500.0 + 1e-9, "{b:?}");
        let slowdown = b.seconds / a.seconds;
        assert!(
            slowdown > 1.1 && slowdown < 1.0 / b.clock + 1e-9,
            "{slowdown}"
        );
        let copy = Kernel::Memory {
            bytes: 1e9,
            flops: 1e8,
        };
        let (a, b) = (free.cost(&copy).unwrap(), held.cost(&copy).unwrap());
        assert_eq!(a.seconds, b.seconds);
        assert_eq!(b.clock, 1.0);
        assert!(a.watts < 0.5 * 700.0, "{}", a.watts);
    }
}
