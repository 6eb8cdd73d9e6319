//! The time one kernel takes on one GPU: a roofline with shape-dependent efficiency.
//!
//! A kernel is priced as `max(flops / achieved FLOP/s, bytes / achieved bandwidth) + overhead`.
//! Achieved FLOP/s is the datasheet peak times a peak fraction times a saturation factor per matrix
//! dimension, `x / (x + x0)`: small matrices fill fewer SMs and tiles, a 4096-wide one gets close to
//! the fraction. Achieved bandwidth is the datasheet HBM bandwidth times a fraction. Every kernel pays
//! a fixed overhead for launch and tail.
//!
//! The constants are physical and shared by every GPU and case (see [`Efficiency::DEFAULT`] for where
//! each comes from); a calibration profile, when one exists, replaces them with measurements.
//! Ignored here: wave quantisation, L2 cache reuse across kernels, clock throttling under power
//! limits, and overlap of independent kernels on one GPU.

use super::dtype::Dtype;
use super::gpu::GpuSpec;

/// A unit of work on one GPU.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Kernel {
    /// `batch` independent products of (m x k) by (k x n), inputs and output in `dtype`.
    Gemm {
        m: u64,
        n: u64,
        k: u64,
        batch: u64,
        dtype: Dtype,
    },
    /// Fused (flash) attention over `batch_heads` heads: queries of `q_len` against `kv_len` keys.
    /// The backward pass does 2.5 times the forward's matrix work (five products against two).
    Attention {
        batch_heads: u64,
        q_len: u64,
        kv_len: u64,
        head_dim: u64,
        causal: bool,
        backward: bool,
        dtype: Dtype,
    },
    /// Bandwidth-bound work (normalisation, activation, residual add, optimizer step) touching
    /// `bytes` of device memory, with `flops` of arithmetic that it hides under the memory traffic.
    Memory { bytes: f64, flops: f64 },
}

impl Kernel {
    /// Floating-point operations the kernel performs (a multiply-add counts two).
    pub fn flops(&self) -> f64 {
        match *self {
            Kernel::Gemm { m, n, k, batch, .. } => 2.0 * (m * n * k * batch) as f64,
            Kernel::Attention {
                batch_heads,
                q_len,
                kv_len,
                head_dim,
                causal,
                backward,
                ..
            } => {
                // Scores (QK^T) and output (PV): two products of q_len x kv_len x head_dim.
                let full = 4.0 * (batch_heads * q_len * kv_len * head_dim) as f64;
                let done = if causal && q_len == kv_len {
                    full / 2.0
                } else {
                    full
                };
                if backward { 2.5 * done } else { done }
            }
            Kernel::Memory { flops, .. } => flops,
        }
    }

    /// Bytes the kernel moves to and from device memory (each operand read once, output written once).
    pub fn bytes(&self) -> f64 {
        match *self {
            Kernel::Gemm {
                m,
                n,
                k,
                batch,
                dtype,
            } => (batch * (m * k + k * n + m * n)) as f64 * dtype.bytes(),
            Kernel::Attention {
                batch_heads,
                q_len,
                kv_len,
                head_dim,
                backward,
                dtype,
                ..
            } => {
                // Q and O by query, K and V by key; the backward reads them again with their grads.
                let once =
                    (batch_heads * head_dim * (2 * q_len + 2 * kv_len)) as f64 * dtype.bytes();
                if backward { 2.0 * once } else { once }
            }
            Kernel::Memory { bytes, .. } => bytes,
        }
    }
}

/// Which cost tier priced a kernel.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ComputeTier {
    /// Datasheet peaks with the shared efficiency constants.
    Roofline,
}

impl ComputeTier {
    pub fn name(self) -> &'static str {
        match self {
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
    /// Fraction of datasheet memory bandwidth that streaming kernels sustain.
    pub memory_fraction: f64,
    /// Launch and tail time added to every kernel, seconds.
    pub kernel_overhead_s: f64,
}

impl Efficiency {
    /// First estimates, shared across GPUs, from public measurements:
    /// - GEMM 0.75 of peak and half-saturation at 32: the Vidur H100 and A100 profiles
    ///   (`shared/data/vidur-profiles`) show Llama-2-7B's MLP up-projection at 4,096 tokens reaching
    ///   0.76 (H100) and 0.70 (A100) of dense bf16 peak, and 0.73 (H100) at 1,024 tokens;
    /// - attention 0.6: FlashAttention-2 (Dao 2023) reports 50-73% of A100 peak forward;
    /// - memory 0.85: the same profiles stream a 1-token MLP's weights at 0.76 (A100) to 0.84 (H100)
    ///   of datasheet HBM bandwidth; STREAM-like copies reach about 0.9;
    /// - overhead 2 us: the smallest kernels in those profiles (residual add, 1 token) take 1-2 us.
    pub const DEFAULT: Efficiency = Efficiency {
        gemm_peak_fraction: 0.75,
        gemm_half_dim: 32.0,
        attention_peak_fraction: 0.6,
        memory_fraction: 0.85,
        kernel_overhead_s: 2e-6,
    };
}

/// Prices kernels on one GPU model.
#[derive(Clone, Debug)]
pub struct ComputeModel {
    pub gpu: &'static GpuSpec,
    pub efficiency: Efficiency,
}

/// The price of one kernel.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct KernelCost {
    pub seconds: f64,
    pub flops: f64,
    pub bytes: f64,
    /// True when memory traffic, not arithmetic, set the time.
    pub memory_bound: bool,
    pub tier: ComputeTier,
}

impl ComputeModel {
    pub fn new(gpu: &'static GpuSpec) -> Self {
        ComputeModel {
            gpu,
            efficiency: Efficiency::DEFAULT,
        }
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
                dtype,
                ..
            } => Some(
                self.gpu.peak_flops(dtype)?
                    * e.attention_peak_fraction
                    * self.saturation(q_len)
                    * self.saturation(kv_len)
                    * self.saturation(head_dim),
            ),
            // Elementwise arithmetic runs on the vector units at FP32 rate.
            Kernel::Memory { .. } => Some(self.gpu.peak_fp32),
        }
    }

    /// The time of `kernel`; None when the GPU cannot compute in the kernel's format.
    pub fn cost(&self, kernel: &Kernel) -> Option<KernelCost> {
        let flops = kernel.flops();
        let bytes = kernel.bytes();
        let compute_s = flops / self.achieved_flops(kernel)?;
        let memory_s = bytes / (self.gpu.memory_bandwidth * self.efficiency.memory_fraction);
        Some(KernelCost {
            seconds: compute_s.max(memory_s) + self.efficiency.kernel_overhead_s,
            flops,
            bytes,
            memory_bound: memory_s > compute_s,
            tier: ComputeTier::Roofline,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::gpu;

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
}
