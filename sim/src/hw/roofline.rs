//! The time one kernel takes on one GPU: a roofline with shape-dependent efficiency.
//!
//! Achieved FLOP/s is the datasheet peak x a peak fraction x `x / (x + x0)` per matrix dimension
//! (small matrices fill fewer SMs and tiles); achieved bandwidth, the HBM bandwidth x a fraction.
//! Compute time `c = flops / FLOP/s`, memory time `m = bytes / bandwidth`, in seconds. Streaming
//! kernels ([`Kernel::Memory`]; [`Kernel::Elementwise`] at a lower fraction) hide math under
//! traffic: `max(c, m) + overhead`. Tiled tensor-core kernels ([`Kernel::Gemm`],
//! [`Kernel::Attention`]) overlap only partly: `(c^p + m^p)^(1/p) + overhead + tensor-core
//! latency`, `p` the overlap exponent (infinity: the ideal roofline; 1: no overlap). A device's
//! softmax unit (`GpuSpec::nonlinear_rate`) runs attention's exponentials beside the matrix units.
//! Small grids ([`ComputeModel::cost_on_grid`]) get `min(blocks, SMs) / SMs` of the arithmetic and
//! bandwidth, the launch overhead paid whole. Above the power limit compute time is divided by the
//! clock `hw::clock` sustains. Constants: [`Efficiency::DEFAULT`] (or a device's own); a profile
//! ([`super::profile`]) prices what it measured. Ignored: wave quantisation, tile choice, L2
//! reuse, overlap of kernels. More, with the checks: docs/CALIBRATION.md#the-roofline

use super::gpu::GpuSpec;
use super::kernel::Kernel;
use super::profile::Profile;
use std::sync::Arc;

/// Which cost tier priced a kernel.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ComputeTier {
    /// Measurements of a calibration profile, interpolated ([`super::profile`]).
    Profile,
    /// Datasheet peaks with the shared efficiency constants.
    Roofline,
}

impl ComputeTier {
    pub fn name(self) -> &'static str {
        match self {
            ComputeTier::Profile => "profile",
            ComputeTier::Roofline => "roofline",
        }
    }
}

/// How much of the datasheet a real kernel gets.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Efficiency {
    /// Fraction of dense peak FLOP/s a large GEMM sustains.
    pub gemm_peak_fraction: f64,
    /// Dimension at which a GEMM reaches half of that fraction along one axis.
    pub gemm_half_dim: f64,
    /// Fraction of peak a fused attention kernel sustains (before the saturation factors).
    pub attention_peak_fraction: f64,
    /// The backward's share of that fraction (1: as fast per FLOP as the forward).
    pub attention_backward_fraction: f64,
    /// Fraction of datasheet memory bandwidth that streaming kernels sustain.
    pub memory_fraction: f64,
    /// Fraction of datasheet memory bandwidth that a framework's elementwise kernels sustain.
    pub elementwise_fraction: f64,
    /// Launch and tail time added to every kernel, seconds.
    pub kernel_overhead_s: f64,
    /// How well a tiled tensor-core kernel (GEMM, attention) overlaps its memory traffic with its
    /// math: its busy time is `(c^p + m^p)^(1/p)` for compute time `c` and memory time `m`.
    /// Infinity is the ideal roofline `max(c, m)`; 1 is no overlap (`c + m`).
    pub overlap_exponent: f64,
    /// Fixed time a tiled tensor-core kernel pays on top of `kernel_overhead_s`, seconds (pipeline
    /// fill and drain, split-K reductions of skinny products).
    pub tensor_core_latency_s: f64,
}

impl Efficiency {
    /// Shared across GPUs, from public measurements. "The profiles" are Vidur's A100-SXM4-80GB and
    /// H100-SXM5-80GB operator timings (`shared/data/vidur-profiles`, fp16, 8 and 6 models, 1 to
    /// 32k tokens, TP 1-8), which `sim/tests/it/vidur_compute.rs` compares against:
    /// - GEMM 0.75 of peak and half-saturation at 32: the profiles show Llama-2-7B's MLP
    ///   up-projection at 4,096 tokens reaching 0.76 (H100) and 0.70 (A100) of dense bf16 peak, and
    ///   0.73 (H100) at 1,024 tokens. `x / (x + 32)` can be read as padding each dimension by 32 on
    ///   average, half of a 64-wide tile edge;
    /// - attention 0.6: FlashAttention-2 (Dao 2023) reports 50-73% of A100 peak forward; its
    ///   backward as fast per FLOP here (a kernel named by `attention_kernel` sets its own);
    /// - memory 0.85: the profiles stream the weights of 1-8 token GEMMs at 0.80 (A100, HBM2e) and
    ///   0.91 (H100, HBM3) of datasheet HBM bandwidth (slope of time against bytes); STREAM-like
    ///   copies reach about 0.9;
    /// - elementwise 0.5: the profiles' layer norms, activations and rotary embeddings, 128 tokens
    ///   and more, reach a median 0.39-0.47 (norms), 0.50-0.60 (activations) and 0.50-0.59 (rope)
    ///   of datasheet bandwidth on A100 and H100 (per-operator medians in
    ///   docs/COMPUTE-VALIDATION.md, taken at 0.85 x measured-over-predicted); residual adds run
    ///   faster, from L2, when their tensors fit it, which the large tensors of training do not;
    /// - overhead 2 us: the smallest kernels in the profiles (residual add, 1-4 tokens) take 1-2
    ///   us; norm, activation, rope and add times against their bytes have 0-3.4 us intercepts;
    /// - overlap exponent 1.75: with `c` and `m` priced by the constants above and the 5 us of
    ///   fixed time taken off, the profiled GEMMs take a median 1.35x (A100) and 1.40x (H100) of
    ///   `max(c, m)` where `c = m` (the ridge), which `2^(1/p)` matches for p = 2.3 and 2.1, and
    ///   1.20x and 1.23x where `c = 2m`, matched by p = 1.6 and 1.5; 1.75 splits them (1.49x and
    ///   1.16x). The curve is the same on both GPUs although their datasheet ridge points differ
    ///   by 2x (153 and 295 FLOP/byte), which is what a shared exponent needs. Physically: a tile
    ///   loads its first k-slices before any math and writes its output after the last, and a
    ///   pipeline of a few stages stalls whenever loads and math take about as long;
    /// - tensor-core latency 3 us: the time of 1-8 token GEMMs against their weight bytes has a
    ///   5.1 us (A100) and 4.8 us (H100) intercept, 3 us above the streaming kernels' 2 us; the
    ///   smallest of them (4 MB of weights) take 4-7 us where streaming the weights needs 1.5-2.4
    ///   us. We attribute it to pipeline fill and drain and to split-K reductions of skinny
    ///   products, but did not measure those separately.
    pub const DEFAULT: Efficiency = Efficiency {
        gemm_peak_fraction: 0.75,
        gemm_half_dim: 32.0,
        attention_peak_fraction: 0.6,
        attention_backward_fraction: 1.0,
        memory_fraction: 0.85,
        elementwise_fraction: 0.5,
        kernel_overhead_s: 2e-6,
        overlap_exponent: 1.75,
        tensor_core_latency_s: 3e-6,
    };
}

/// Prices kernels on one GPU model: from its calibration profile where that has something
/// suitable, else from the roofline.
#[derive(Clone, Debug)]
pub struct ComputeModel {
    pub gpu: Arc<GpuSpec>,
    pub efficiency: Efficiency,
    /// Measurements that take precedence over the roofline; None prices everything by roofline.
    pub profile: Option<Arc<Profile>>,
    /// Attention runs unfused (`attention_kernel::unfused_kernels`): each `Attention` kernel is
    /// priced as the GEMMs and score passes it stands for.
    pub unfused_attention: bool,
    /// A sustained board power limit below the TDP, watts (`[cluster] power_limit`): kernels that
    /// would draw more run at a lower clock (`hw::clock`). None: the TDP.
    pub power_limit_watts: Option<f64>,
    /// Kernels run back to back for long stretches (training and diffusion steps), so at the TDP
    /// matrix kernels hold the GPU's sustained clock (`GpuSpec::sustained_clock`); false: they
    /// are priced as isolated kernels, at the clock the efficiency constants were measured at.
    pub sustained_load: bool,
}

/// A profile refused because it was measured on another GPU model than the one it would price.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileMismatch {
    pub measured_on: String,
    pub gpu: String,
}

impl std::fmt::Display for ProfileMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ProfileMismatch { measured_on, gpu } = self;
        write!(f, "the profile was measured on {measured_on}, not on {gpu}")
    }
}

impl std::error::Error for ProfileMismatch {}

/// The price of one kernel.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct KernelCost {
    pub seconds: f64,
    pub flops: f64,
    pub bytes: f64,
    /// True when memory traffic, not arithmetic, set the time.
    pub memory_bound: bool,
    pub tier: ComputeTier,
    /// The clock it ran at as a share of the rated clock (below 1 under a power limit).
    pub clock: f64,
    /// Board power while it runs, watts (`hw::clock`).
    pub watts: f64,
}

impl ComputeModel {
    /// The roofline alone, with the device's own efficiencies where its spec has them.
    pub fn new(gpu: impl Into<Arc<GpuSpec>>) -> Self {
        let gpu = gpu.into();
        ComputeModel {
            efficiency: gpu.efficiency.unwrap_or(Efficiency::DEFAULT),
            gpu,
            profile: None,
            unfused_attention: false,
            power_limit_watts: None,
            sustained_load: false,
        }
    }

    /// Measurements of `profile` first, the roofline for what it lacks. Refused when the profile
    /// was measured on another GPU model.
    pub fn with_profile(
        gpu: impl Into<Arc<GpuSpec>>,
        profile: impl Into<Arc<Profile>>,
    ) -> Result<Self, ProfileMismatch> {
        let gpu = gpu.into();
        let profile = profile.into();
        if profile.gpu != gpu.name {
            return Err(ProfileMismatch {
                measured_on: profile.gpu.to_string(),
                gpu: gpu.name.to_string(),
            });
        }
        Ok(ComputeModel {
            profile: Some(profile),
            ..ComputeModel::new(gpu)
        })
    }

    fn saturation(&self, x: u64) -> f64 {
        let x = x as f64;
        x / (x + self.efficiency.gemm_half_dim)
    }

    /// Achieved FLOP/s for a kernel, or None when the GPU has no units for its format.
    fn achieved_flops(&self, kernel: &Kernel) -> Option<f64> {
        let e = &self.efficiency;
        match *kernel {
            Kernel::Gemm { m, n, k, dtype, .. } => Some(
                self.gpu.peak_flops(dtype)?
                    * e.gemm_peak_fraction
                    * self.saturation(m)
                    * self.saturation(n)
                    * self.saturation(k),
            ),
            Kernel::Attention {
                q_len,
                kv_len,
                head_dim,
                backward,
                dtype,
                ..
            } => {
                let peak = self.gpu.peak_flops(dtype)?;
                let pass = if backward {
                    e.attention_backward_fraction
                } else {
                    1.0
                };
                // A kernel measured at its GPU's peak has its fraction scaled above 1 to hold
                // that at the reference shape; no shape runs faster than the peak.
                Some(
                    (peak
                        * e.attention_peak_fraction
                        * pass
                        * self.saturation(q_len)
                        * self.saturation(kv_len)
                        * self.saturation(head_dim))
                    .min(peak),
                )
            }
            // Elementwise arithmetic runs on the vector units at FP32 rate.
            Kernel::Memory { .. } | Kernel::Elementwise { .. } => Some(self.gpu.peak_fp32),
        }
    }

    /// Busy time of a tiled kernel: `(c^p + m^p)^(1/p)`, written to stay finite for any `p`.
    fn overlapped(&self, compute_s: f64, memory_s: f64) -> f64 {
        let (hi, lo) = if compute_s >= memory_s {
            (compute_s, memory_s)
        } else {
            (memory_s, compute_s)
        };
        if hi <= 0.0 {
            return 0.0;
        }
        let p = self.efficiency.overlap_exponent;
        hi * (1.0 + (lo / hi).powf(p)).powf(1.0 / p)
    }

    /// The time of `kernel`; None when the GPU cannot compute in the kernel's format. The profile
    /// prices it when it has something suitable (`tier` says which did); `flops`, `bytes` and
    /// `memory_bound` are the kernel's own and the roofline's judgement either way.
    pub fn cost(&self, kernel: &Kernel) -> Option<KernelCost> {
        if self.unfused_attention && matches!(kernel, Kernel::Attention { .. }) {
            return self.unfused_cost(kernel);
        }
        let roofline = self.roofline_cost(kernel)?;
        if let Some(seconds) = self
            .profile
            .as_ref()
            .and_then(|p| p.seconds(&self.gpu, kernel))
        {
            // Measured at the rated clock: slowed as the roofline is by a power limit.
            let slowdown = match self.power_limit_watts {
                Some(_) if roofline.clock < 1.0 => {
                    roofline.seconds / self.roofline_share_at(kernel, 1.0, None)?.seconds
                }
                _ => 1.0,
            };
            return Some(KernelCost {
                seconds: seconds * slowdown,
                tier: ComputeTier::Profile,
                ..roofline
            });
        }
        Some(roofline)
    }

    /// An attention kernel run unfused: the sum of its launches; the tier of its largest part.
    fn unfused_cost(&self, kernel: &Kernel) -> Option<KernelCost> {
        let parts = super::attention_kernel::unfused_kernels(kernel)
            .iter()
            .map(|k| self.cost(k))
            .collect::<Option<Vec<_>>>()?;
        let largest = parts
            .iter()
            .max_by(|a, b| a.seconds.total_cmp(&b.seconds))?;
        let seconds: f64 = parts.iter().map(|c| c.seconds).sum();
        let memory_s: f64 = parts
            .iter()
            .filter(|c| c.memory_bound)
            .map(|c| c.seconds)
            .sum();
        let weighted = |f: fn(&KernelCost) -> f64| {
            parts.iter().map(|c| f(c) * c.seconds).sum::<f64>() / seconds.max(f64::MIN_POSITIVE)
        };
        Some(KernelCost {
            seconds,
            flops: parts.iter().map(|c| c.flops).sum(),
            bytes: parts.iter().map(|c| c.bytes).sum(),
            memory_bound: 2.0 * memory_s > seconds,
            tier: largest.tier,
            clock: weighted(|c| c.clock),
            watts: weighted(|c| c.watts),
        })
    }

    /// Seconds the device's softmax unit takes for `ops` transcendental evaluations; 0 on a
    /// device that does not price them apart.
    pub fn nonlinear_seconds(&self, ops: f64) -> f64 {
        self.gpu.nonlinear_rate.map_or(0.0, |rate| ops / rate)
    }

    /// The roofline's price of `kernel`, ignoring any profile.
    pub fn roofline_cost(&self, kernel: &Kernel) -> Option<KernelCost> {
        self.roofline_share(kernel, 1.0)
    }

    /// The roofline's price of one launch of `kernel` as a grid of `blocks` thread blocks: a
    /// grid smaller than the device's multiprocessors gets their share of its arithmetic and
    /// bandwidth (see the module notes); the fixed launch and tensor-core times are paid whole.
    pub fn cost_on_grid(&self, kernel: &Kernel, blocks: u64) -> Option<KernelCost> {
        let sms = self.gpu.multiprocessors.max(1) as f64;
        self.roofline_share(kernel, (blocks.max(1) as f64).min(sms) / sms)
    }

    /// The roofline with `share` (0-1] of the device's multiprocessors, under the model's power
    /// limit.
    fn roofline_share(&self, kernel: &Kernel, share: f64) -> Option<KernelCost> {
        self.roofline_share_at(kernel, share, self.power_limit_watts)
    }

    /// The roofline with `share` of the multiprocessors under `limit_watts`: the compute time at
    /// the clock `hw::clock` sustains, the memory time as it is.
    fn roofline_share_at(
        &self,
        kernel: &Kernel,
        share: f64,
        limit_watts: Option<f64>,
    ) -> Option<KernelCost> {
        let e = &self.efficiency;
        let flops = kernel.flops();
        let bytes = kernel.bytes();
        let achieved = self.achieved_flops(kernel)?;
        // No arithmetic takes no time, however little of the units a degenerate shape fills.
        let mut compute_s = if flops > 0.0 {
            flops / (achieved * share)
        } else {
            0.0
        };
        if let Some(rate) = self.gpu.nonlinear_rate {
            compute_s = compute_s.max(kernel.nonlinear_ops() / (rate * share));
        }
        let fraction = match kernel {
            Kernel::Elementwise { .. } => e.elementwise_fraction,
            _ => e.memory_fraction,
        };
        let memory_s = bytes / (self.gpu.memory_bandwidth * fraction * share);
        let seconds = |compute_s: f64| {
            e.kernel_overhead_s
                + match kernel {
                    Kernel::Gemm { .. } | Kernel::Attention { .. } => {
                        self.overlapped(compute_s, memory_s) + e.tensor_core_latency_s
                    }
                    Kernel::Memory { .. } | Kernel::Elementwise { .. } => compute_s.max(memory_s),
                }
        };
        // The math units and the memory system busy their share of the launch, at a clock.
        let held = if self.sustained_load {
            self.gpu.sustained_clock
        } else {
            1.0
        };
        let sustained = super::clock::sustained(&self.gpu, held, limit_watts, |clock| {
            let t = seconds(compute_s / clock);
            // A launch with no work (an empty grid) loads nothing.
            let busy = |s: f64| if t > 0.0 { share * s / t } else { 0.0 };
            super::clock::Load {
                compute: busy(compute_s / clock),
                memory: busy(memory_s),
            }
        });
        Some(KernelCost {
            seconds: seconds(compute_s / sustained.clock),
            flops,
            bytes,
            memory_bound: memory_s > compute_s,
            tier: ComputeTier::Roofline,
            clock: sustained.clock,
            watts: sustained.watts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::{Dtype, gpu};

    fn h100() -> ComputeModel {
        ComputeModel::new(gpu::find("H100").unwrap())
    }

    fn gemm(m: u64, n: u64, k: u64) -> Kernel {
        Kernel::Gemm {
            m,
            n,
            k,
            batch: 1,
            dtype: Dtype::Bf16,
        }
    }

    #[test]
    fn big_gemms_approach_the_peak_fraction_small_ones_do_not() {
        let model = h100();
        let peak = model.gpu.peak_bf16.unwrap();
        let achieved = |k: &Kernel| {
            let c = model.cost(k).unwrap();
            c.flops / c.seconds / peak
        };
        let big = achieved(&gemm(8192, 8192, 8192));
        let small = achieved(&gemm(64, 64, 64));
        assert!(big > 0.70 && big < 0.75, "{big}");
        // Under sustained load an H100 at its TDP holds about its sustained clock.
        let sustained = ComputeModel {
            sustained_load: true,
            ..h100()
        };
        let c = sustained.cost(&gemm(8192, 8192, 8192)).unwrap();
        assert!((c.clock - model.gpu.sustained_clock).abs() < 0.01, "{c:?}");
        let held = c.flops / c.seconds / peak;
        assert!((held / big - c.clock).abs() < 0.01, "{held} against {big}");
        assert!(small < 0.05, "{small}");
    }

    #[test]
    fn skinny_gemms_are_memory_bound() {
        let c = h100().cost(&gemm(1, 22016, 4096)).unwrap();
        assert!(c.memory_bound);
        // Vidur's H100 profile measures this Llama-2-7B up-projection at 1 token at 0.064 ms.
        assert!(
            (c.seconds - 0.064e-3).abs() / 0.064e-3 < 0.15,
            "{}",
            c.seconds
        );
    }

    #[test]
    fn at_the_ridge_loads_and_math_overlap_only_partly() {
        let model = h100();
        let e = model.efficiency;
        // Square GEMMs have intensity n/3 FLOP/byte; find one whose compute and memory times match.
        let times = |n: u64| {
            let g = gemm(n, n, n);
            let c = g.flops()
                / (model.gpu.peak_bf16.unwrap()
                    * e.gemm_peak_fraction
                    * model.saturation(n).powi(3));
            let m = g.bytes() / (model.gpu.memory_bandwidth * e.memory_fraction);
            (c, m, model.cost(&g).unwrap().seconds)
        };
        let ridge = (64..4096).min_by(|&a, &b| {
            let r = |n| {
                let (c, m, _) = times(n);
                (c / m).ln().abs()
            };
            r(a).total_cmp(&r(b))
        });
        let (c, m, t) = times(ridge.unwrap());
        let busy = t - e.kernel_overhead_s - e.tensor_core_latency_s;
        let expected = 2f64.powf(1.0 / e.overlap_exponent);
        assert!(
            (busy / c.max(m) - expected).abs() < 0.02,
            "{} vs {expected}",
            busy / c.max(m)
        );
    }

    #[test]
    fn tensor_core_kernels_pay_more_fixed_time_than_streaming_ones() {
        let model = h100();
        let tiny_gemm = model.cost(&gemm(1, 64, 64)).unwrap().seconds;
        let tiny_copy = model
            .cost(&Kernel::Memory {
                bytes: 8192.0,
                flops: 0.0,
            })
            .unwrap()
            .seconds;
        // Vidur's profiles: the smallest GEMMs take 4-7 us, the smallest residual adds 1-2 us.
        assert!((4.9e-6..5.1e-6).contains(&tiny_gemm), "{tiny_gemm}");
        assert!((1.9e-6..2.1e-6).contains(&tiny_copy), "{tiny_copy}");
    }

    #[test]
    fn formats_the_gpu_lacks_are_refused() {
        let a100 = ComputeModel::new(gpu::find("A100").unwrap());
        let fp8 = Kernel::Gemm {
            m: 1024,
            n: 1024,
            k: 1024,
            batch: 1,
            dtype: Dtype::Fp8,
        };
        assert!(a100.cost(&fp8).is_none());
    }

    #[test]
    fn small_grids_get_a_share_of_the_gpu_and_pay_the_whole_launch() {
        let model = h100();
        let copy = Kernel::Memory {
            bytes: 64e6,
            flops: 0.0,
        };
        let full = model.cost_on_grid(&copy, 10_000).unwrap().seconds;
        assert_eq!(full, model.cost(&copy).unwrap().seconds);
        let one = model.cost_on_grid(&copy, 1).unwrap().seconds;
        let overhead = model.efficiency.kernel_overhead_s;
        let sms = model.gpu.multiprocessors as f64;
        assert!(((one - overhead) / (full - overhead) - sms).abs() < 1e-6);
        // A tiny launch is nearly all overhead whatever its grid.
        let tiny = Kernel::Memory {
            bytes: 256.0,
            flops: 0.0,
        };
        let t = model.cost_on_grid(&tiny, 1).unwrap().seconds;
        assert!(t > overhead && t < 1.05 * overhead, "{t}");
    }

    #[test]
    fn a_slow_nonlinear_unit_bounds_attention_and_nothing_else() {
        let attention = Kernel::Attention {
            batch_heads: 32,
            q_len: 2048,
            kv_len: 2048,
            head_dim: 128,
            causal: true,
            backward: false,
            dtype: Dtype::Bf16,
        };
        assert_eq!(attention.nonlinear_ops(), 32.0 * 2048.0 * 2048.0 / 2.0);
        let gpu = gpu::find("H100").unwrap();
        let slow = GpuSpec {
            nonlinear_rate: Some(1e11),
            ..gpu.clone()
        };
        let plain = ComputeModel::new(gpu);
        let with_unit = ComputeModel::new(slow);
        let t = with_unit.cost(&attention).unwrap().seconds;
        let exps_s = attention.nonlinear_ops() / 1e11;
        assert!(t > exps_s && t > 2.0 * plain.cost(&attention).unwrap().seconds);
        let g = gemm(4096, 4096, 4096);
        assert_eq!(with_unit.cost(&g), plain.cost(&g));
        assert_eq!(with_unit.nonlinear_seconds(5e10), 0.5);
        assert_eq!(plain.nonlinear_seconds(5e10), 0.0);
    }

    #[test]
    fn a_device_brings_its_own_efficiency() {
        let gpu = gpu::find("H100").unwrap();
        let matrix_vector = Efficiency {
            gemm_half_dim: 1.0,
            ..Efficiency::DEFAULT
        };
        let own = GpuSpec {
            efficiency: Some(matrix_vector),
            ..gpu.clone()
        };
        assert_eq!(ComputeModel::new(own).efficiency, matrix_vector);
        assert_eq!(ComputeModel::new(gpu).efficiency, Efficiency::DEFAULT);
    }

    #[test]
    fn causal_attention_does_half_the_work_and_backward_more() {
        let attention = |causal, backward| Kernel::Attention {
            batch_heads: 32,
            q_len: 4096,
            kv_len: 4096,
            head_dim: 128,
            causal,
            backward,
            dtype: Dtype::Bf16,
        };
        let fwd = attention(true, false);
        assert_eq!(attention(false, false).flops(), 2.0 * fwd.flops());
        assert_eq!(attention(true, true).flops(), 2.5 * fwd.flops());
    }

    #[test]
    fn an_empty_launch_costs_its_overhead_at_every_load() {
        // A GEMM with no rows (a level of a decoder smaller than a pixel), at the sustained
        // clock of back-to-back kernels: the launch, nothing else, and no NaN.
        let mut m = h100();
        m.sustained_load = true;
        let empty = Kernel::Gemm {
            m: 0,
            n: 128,
            k: 3456,
            batch: 4,
            dtype: Dtype::Bf16,
        };
        let c = m.cost(&empty).unwrap();
        assert!(c.seconds.is_finite() && c.seconds > 0.0, "{c:?}");
        assert!(c.seconds < 10e-6, "{c:?}");
    }
}
