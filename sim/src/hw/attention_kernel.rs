//! Which fused-attention implementation a run uses, when the scenario says
//! (`[model] attention_kernel`): its achieved throughput depends on the kernel as much as on the
//! GPU. FlashAttention 2 does not use Hopper's asynchronous tensor-core instructions and reaches
//! about a third of an H100's peak; FlashAttention 3, written for Hopper, about three quarters.
//!
//! Each kernel has a reference point per architecture: the forward, non-causal, bf16 throughput
//! at long sequences (16,384 queries and keys, head_dim 128), measured or published. The roofline's
//! attention fraction is scaled so that it reproduces that point; its saturation with shorter
//! sequences and narrower heads is kept. Without `attention_kernel` the roofline's default
//! fraction stands (`roofline::Efficiency::DEFAULT`). A calibration profile's attention
//! measurements still take precedence over the roofline.

use super::gpu::{self, Architecture, GpuSpec};
use super::{ComputeModel, Dtype, Kernel, profile};
use serde::Deserialize;
use std::sync::OnceLock;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
pub enum AttentionKernel {
    #[serde(rename = "flash-attention-2")]
    FlashAttention2,
    #[serde(rename = "flash-attention-3")]
    FlashAttention3,
}

/// The reference point's shape: (tokens, head_dim, heads).
const REFERENCE: (u64, u64, u64) = (16_384, 128, 32);

/// The shipped profile whose attention table measured FlashAttention 2 on Hopper.
const HOPPER_FLASH_ATTENTION_2: &str = "h200-sxm-141gb-measured";

/// The reference point: forward, non-causal, bf16.
fn reference_kernel() -> Kernel {
    let (len, head_dim, heads) = REFERENCE;
    Kernel::Attention {
        batch_heads: heads,
        q_len: len,
        kv_len: len,
        head_dim,
        causal: false,
        backward: false,
        dtype: Dtype::Bf16,
    }
}

/// Fraction of bf16 peak that [`HOPPER_FLASH_ATTENTION_2`] measured at the reference point (read
/// once).
fn hopper_flash_attention_2() -> Option<f64> {
    static MEASURED: OnceLock<Option<f64>> = OnceLock::new();
    *MEASURED.get_or_init(|| {
        let profile = profile::shipped_profile(HOPPER_FLASH_ATTENTION_2)?;
        let gpu = gpu::find(profile.gpu).ok()?;
        let kernel = reference_kernel();
        let seconds = profile.attention_seconds(gpu, &kernel)?;
        Some(kernel.flops() / seconds / gpu.peak_flops(Dtype::Bf16)?)
    })
}

impl AttentionKernel {
    pub fn name(self) -> &'static str {
        match self {
            AttentionKernel::FlashAttention2 => "flash-attention-2",
            AttentionKernel::FlashAttention3 => "flash-attention-3",
        }
    }

    /// Fraction of bf16 peak at the reference point on `gpu`, and where it comes from; `None`
    /// where there is no figure (or the kernel does not run there).
    pub fn reference(self, gpu: &GpuSpec) -> Option<(f64, &'static str)> {
        match (self, gpu.architecture) {
            // Read from the shipped H200 profile's [[attention]] table: PyTorch 2.11's
            // scaled_dot_product_attention flash backend on an H200 (same SMs and clocks as the
            // H100 SXM), calibration/h200-2026-11-30, run 2.
            (AttentionKernel::FlashAttention2, Architecture::Hopper) => Some((
                hopper_flash_attention_2()?,
                "FlashAttention 2 on Hopper: 35% of peak, measured on an H200 (calibration/h200-2026-11-30)",
            )),
            // Dao 2023 (FlashAttention-2, Fig. 4 and text): forward up to 73% of an A100's peak,
            // about 70% at head_dim 128 and 16k tokens.
            (AttentionKernel::FlashAttention2, Architecture::Ampere) => Some((
                0.70,
                "FlashAttention 2 on Ampere: 70% of peak (Dao 2023, forward at head_dim 128)",
            )),
            // Shah et al. 2024 (FlashAttention-3): bf16 forward up to 740 TFLOP/s on H100 SXM,
            // 75% of peak, at head_dim 128 and 16k tokens.
            (AttentionKernel::FlashAttention3, Architecture::Hopper) => Some((
                0.75,
                "FlashAttention 3 on Hopper: 75% of peak (Shah et al. 2024, forward at head_dim 128)",
            )),
            _ => None,
        }
    }

    /// Sets `compute`'s roofline attention fraction so that it reproduces this kernel's reference
    /// point on its GPU; the source sentence, or `None` when there is no figure for the GPU.
    pub fn apply(self, compute: &mut ComputeModel) -> Option<&'static str> {
        let (fraction, source) = self.reference(compute.gpu)?;
        let kernel = reference_kernel();
        let peak = compute.gpu.peak_flops(Dtype::Bf16)?;
        let roofline = compute.roofline_cost(&kernel)?;
        let achieved = roofline.flops / roofline.seconds / peak;
        compute.efficiency.attention_peak_fraction *= fraction / achieved;
        Some(source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_point_is_reproduced() {
        let h100 = gpu::find("H100").unwrap();
        // The H200 measurement: 346 TFLOP/s of 989.
        let (measured, _) = AttentionKernel::FlashAttention2.reference(h100).unwrap();
        assert!((measured - 346.0 / 989.0).abs() < 0.005, "{measured}");
        let mut fa2 = ComputeModel::new(h100);
        AttentionKernel::FlashAttention2.apply(&mut fa2).unwrap();
        let mut fa3 = ComputeModel::new(h100);
        AttentionKernel::FlashAttention3.apply(&mut fa3).unwrap();
        let k = Kernel::Attention {
            batch_heads: 32,
            q_len: 16_384,
            kv_len: 16_384,
            head_dim: 128,
            causal: false,
            backward: false,
            dtype: Dtype::Bf16,
        };
        let tflops = |m: &ComputeModel| {
            let c = m.cost(&k).unwrap();
            c.flops / c.seconds / 1e12
        };
        assert!((tflops(&fa2) - 346.0).abs() < 5.0, "{}", tflops(&fa2));
        assert!(
            (tflops(&fa3) - 0.75 * 989.0).abs() < 10.0,
            "{}",
            tflops(&fa3)
        );
        // FlashAttention 3 runs on Hopper only.
        let a100 = gpu::find("A100").unwrap();
        assert!(AttentionKernel::FlashAttention3.reference(a100).is_none());
        assert!(AttentionKernel::FlashAttention2.reference(a100).is_some());
    }
}
