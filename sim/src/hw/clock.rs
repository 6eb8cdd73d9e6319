//! The clock a kernel sustains under a board power limit, and the board power it draws.
//!
//! Dynamic power is `C V^2 f` with the voltage rising about with the clock, so busy SMs draw
//! `f^3`. At clock `f` (1: the rated clock the roofline's constants hold at) a kernel draws
//! `P = idle + (TDP - idle) (x + M u_m (1 - x))`, `x = u_c (f / f_h)^3`, with `u_c` and `u_m`
//! the shares of its time the math units and the memory system are busy, and `M` the memory
//! system's share of the dynamic power (HBM's clock is fixed). Anchors: a compute-bound GEMM draws
//! the TDP at `f_h` ([`super::power`]): 1 for isolated kernels (serving), the GPU's
//! `GpuSpec::sustained_clock` under sustained load (training, diffusion); a kernel streaming HBM
//! with idle math draws [`MEMORY_BOUND_FRACTION`] of the TDP, which fixes `M`.
//! Under a limit `L` (the TDP without one) a kernel runs at the highest `f` whose draw fits: its
//! compute time grows by `1 / f`, its memory time does not. Limits below a memory-bound kernel's
//! draw are refused. Ignored: temperature, DVFS latency, voltage floors at low clocks, and
//! per-architecture differences in how much of the TDP a GEMM reaches. Sources and figures:
//! docs/CAPACITY.md#the-models ("Power by kernel and clocks under a limit").

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

/// Board power of `gpu`, watts, running a kernel of `load` at `clock` (1 = rated), when a
/// compute-bound kernel draws the TDP at `held` (`GpuSpec::sustained_clock` under sustained load,
/// 1 for isolated kernels).
pub fn kernel_watts(gpu: &GpuSpec, held: f64, clock: f64, load: Load) -> f64 {
    let idle = power::idle_watts(gpu);
    let m = memory_share(gpu);
    let compute = load.compute.clamp(0.0, 1.0);
    let memory = load.memory.clamp(0.0, 1.0);
    let math = compute * (clock.clamp(0.0, 1.0) / held).powi(3);
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
/// more than `limit_watts` (`None`: the TDP) on `gpu` whose compute-bound kernels draw the TDP at
/// `held` (see [`kernel_watts`]), and its draw there. When the kernel fits at the rated clock, the
/// clock is 1.
pub fn sustained(
    gpu: &GpuSpec,
    held: f64,
    limit_watts: Option<f64>,
    load_at: impl Fn(f64) -> Load,
) -> Sustained {
    let rated = kernel_watts(gpu, held, 1.0, load_at(1.0));
    let limit = limit_watts.unwrap_or(gpu.tdp_watts);
    if rated <= limit {
        return Sustained {
            clock: 1.0,
            watts: rated,
        };
    }
    // The draw falls with the clock (the compute term goes as f^2 times the share of time the
    // slower math takes), from idle at f = 0 (under the limit) to the rated draw (over it). The
    // highest clock that fits, by regula falsi with the Illinois step (a handful of evaluations
    // where bisection takes dozens; every kernel of a Hopper step comes here), keeping a bracket
    // whose low end always fits.
    let excess = |f: f64| kernel_watts(gpu, held, f, load_at(f)) - limit;
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    // At f = 0 the math never finishes: the board idles.
    let (mut e_lo, mut e_hi) = (power::idle_watts(gpu) - limit, rated - limit);
    let mut side = 0;
    for _ in 0..64 {
        if hi - lo < 1e-12 {
            break;
        }
        let f = (lo - e_lo * (hi - lo) / (e_hi - e_lo)).clamp(lo, hi);
        let e = excess(f);
        if e <= 0.0 {
            (lo, e_lo) = (f, e);
            if side == -1 {
                e_hi *= 0.5;
            }
            side = -1;
            if e > -1e-9 {
                break;
            }
        } else {
            (hi, e_hi) = (f, e);
            if side == 1 {
                e_lo *= 0.5;
            }
            side = 1;
        }
    }
    Sustained {
        clock: lo,
        watts: kernel_watts(gpu, held, lo, load_at(lo)),
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
        let f = h200.sustained_clock;
        let gemm = kernel_watts(h200, f, f, streaming(1.0 / f, 0.2)(f));
        assert!((gemm - 700.0).abs() < 1e-9, "{gemm}");
        // Above its sustained clock a GEMM would draw more than the board may.
        assert!(kernel_watts(h200, f, 1.0, streaming(1.0, 0.2)(1.0)) > 800.0);
        // Isolated, it draws the TDP at the rated clock.
        let alone = kernel_watts(h200, 1.0, 1.0, streaming(1.0, 0.2)(1.0));
        assert!((alone - 700.0).abs() < 1e-9, "{alone}");
        let decode = kernel_watts(h200, 1.0, 1.0, streaming(0.05, 1.0)(1.0));
        // 0.43 x 700 = 301 W plus a little SM power for its arithmetic.
        assert!(decode > 300.0 && decode < 330.0, "{decode}");
        assert!((lowest_limit(h200) - 301.0).abs() < 1e-9);
        assert!((memory_share(h200) - (301.0 - 105.0) / 595.0).abs() < 1e-12);
    }

    #[test]
    fn at_the_tdp_a_board_that_sustains_its_rated_clock_keeps_it() {
        let a100 = gpu::find("A100").unwrap();
        assert_eq!(a100.sustained_clock, 1.0);
        for limit in [None, Some(a100.tdp_watts)] {
            let s = sustained(a100, a100.sustained_clock, limit, streaming(1.0, 0.3));
            assert_eq!(s.clock, 1.0);
        }
    }

    #[test]
    fn at_the_tdp_a_hopper_gemm_runs_at_the_sustained_clock_a_copy_at_the_rated_one() {
        let h100 = gpu::find("H100").unwrap();
        let f = h100.sustained_clock;
        assert!(f > 0.9 && f < 0.95, "{f}");
        for limit in [None, Some(700.0)] {
            let gemm = sustained(h100, f, limit, streaming(1.0, 0.0));
            assert!((gemm.clock - f).abs() < 1e-9, "{gemm:?}");
            assert!((gemm.watts - 700.0).abs() < 1e-6, "{gemm:?}");
            // Some memory time leaves the math idle part of the time: a higher clock fits.
            let mixed = sustained(h100, f, limit, streaming(1.0, 1.2));
            assert!(mixed.clock > f && mixed.clock < 1.0, "{mixed:?}");
            assert_eq!(sustained(h100, f, limit, streaming(0.1, 1.0)).clock, 1.0);
        }
    }

    #[test]
    fn a_gemm_under_a_limit_slows_by_the_cube_root_a_memory_bound_kernel_does_not() {
        let h100 = gpu::find("H100").unwrap();
        // Pure arithmetic: the draw is idle + D (f / f_s)^3, so f = f_s ((L - idle) / D)^(1/3).
        let s = sustained(h100, h100.sustained_clock, Some(500.0), streaming(1.0, 0.0));
        let expected = h100.sustained_clock * ((500.0_f64 - 105.0) / 595.0).cbrt();
        assert!(
            (s.clock - expected).abs() < 1e-9,
            "{} vs {expected}",
            s.clock
        );
        let relative = s.clock / h100.sustained_clock;
        assert!(relative > 0.86 && relative < 0.88, "{relative}");
        assert!(s.watts <= 500.0 && s.watts > 499.99);
        // Memory-bound: its draw at the rated clock is under the limit already.
        let mem = sustained(h100, h100.sustained_clock, Some(500.0), streaming(0.1, 1.0));
        assert_eq!(mem.clock, 1.0);
        // A tighter limit lowers the clock further.
        let tighter = sustained(h100, h100.sustained_clock, Some(400.0), streaming(1.0, 0.0));
        assert!(tighter.clock < s.clock);
    }

    #[test]
    fn the_roofline_slows_gemms_under_a_limit_and_leaves_streaming_kernels_alone() {
        use crate::hw::{ComputeModel, Dtype, Kernel};
        let h100 = gpu::find("H100").unwrap();
        let free = ComputeModel {
            sustained_load: true,
            ..ComputeModel::new(h100)
        };
        let held = ComputeModel {
            power_limit_watts: Some(500.0),
            ..free.clone()
        };
        let gemm = Kernel::Gemm {
            m: 8192,
            n: 8192,
            k: 8192,
            batch: 1,
            dtype: Dtype::Bf16,
        };
        let (a, b) = (free.cost(&gemm).unwrap(), held.cost(&gemm).unwrap());
        // At the TDP the GEMM holds about the sustained clock (its little memory time lets it
        // run a hair above).
        assert!(a.clock >= h100.sustained_clock && a.clock < 0.95, "{a:?}");
        assert!(a.watts > 680.0 && a.watts <= 700.0 + 1e-9, "{}", a.watts);
        assert!(b.clock < 0.85 && b.watts <= 500.0 + 1e-9, "{b:?}");
        let slowdown = b.seconds / a.seconds;
        assert!(
            slowdown > 1.1 && slowdown < a.clock / b.clock + 1e-9,
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
