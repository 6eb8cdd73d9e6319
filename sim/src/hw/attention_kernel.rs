//! Which fused-attention implementation a run uses, when the scenario says
//! (`[model] attention_kernel`): its achieved throughput depends on the kernel as much as on the
//! GPU. Each kernel has a reference point per architecture (per GPU where one was measured
//! apart): its fraction of bf16 peak forward, non-causal, at 16,384 queries and keys of head_dim
//! 128. The roofline's attention fraction is scaled to reproduce it, keeping its saturation with
//! shorter sequences and narrower heads (the default without the key). A profile's tables prevail.
//!
//! `unfused` materialises the scores, as frameworks did before FlashAttention. Forward: a batched
//! GEMM for `Q K^T` (a causal mask saves nothing), a fused scale-mask-softmax, dropout (writing a
//! one-byte mask), a batched GEMM for `P V`; backward: the two GEMMs of `P V`'s gradient,
//! dropout's and softmax's backward, the two GEMMs of `Q K^T`'s (`unfused_kernels`). A causal
//! softmax reads each row up to the diagonal and writes it whole. Score passes are streaming
//! kernels ([`Kernel::Memory`]). Probabilities and mask stay in memory for the backward unless
//! selective recomputation recomputes them (the training memory model's `5 a s^2 b` term).
//! Reference points and their sources: docs/CALIBRATION.md#attention-kernels

use super::gpu::{Architecture, GpuSpec};
use super::{ComputeModel, Dtype, Kernel};
use serde::Deserialize;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
pub enum AttentionKernel {
    #[serde(rename = "flash-attention-1")]
    FlashAttention1,
    #[serde(rename = "flash-attention-2")]
    FlashAttention2,
    #[serde(rename = "flash-attention-3")]
    FlashAttention3,
    #[serde(rename = "unfused")]
    Unfused,
}

/// The reference point's shape: (tokens, head_dim, heads).
const REFERENCE: (u64, u64, u64) = (16_384, 128, 32);

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

/// FlashAttention 2's backward per FLOP against its forward: PyTorch's flash backend on an H200
/// (calibration/h200-2026-11-30, run 2, head_dim 128, causal and not, 8,192 and 16,384 tokens)
/// ran its backward at 0.84-0.91 of its forward's FLOP/s, median 0.87; Dao 2023 reports up to 73%
/// of an A100's peak forward and 63% backward (0.86). Shorter sequences fall further (0.6-0.8 at
/// 512-4,096 tokens), which the shared saturation does not follow. FlashAttention 1 (half of
/// FlashAttention 2's forward in both passes) keeps its forward's rate: Dao 2023 puts its
/// backward at 25-35% of an A100's peak against 30-50% forward, but the kernel the validation runs
/// as FlashAttention 1 (the 2022 Triton port) has no figure apart, and FlashAttention 2's ratio
/// made its A100 rows worse (validation/llm-foundry-a100.json, 8.3% to 10.4%). FlashAttention 3
/// keeps its forward's rate too: no backward figure for it here.
const FLASH_ATTENTION_2_BACKWARD: f64 = 0.87;

/// The H20's FlashAttention 2 and 3 as measured (Dao-AILab/flash-attention#1310, November 2024,
/// the repository's Hopper benchmark): forward, non-causal, head_dim 128, 2,048 queries and keys,
/// batch 2 of 16 heads; 83.7 and 126.2 TFLOP/s. The H20 keeps the Hopper SMs but a seventh of
/// the H100's tensor-core rate, so kernels that leave an H100's tensor cores idle half the time
/// (FlashAttention 2: softmax and the older MMA instructions) reach far more of its peak.
const H20: &str = "H20-96GB";
const H20_MEASURED_TFLOPS: (f64, f64) = (83.7, 126.2);

/// FlashAttention 2 on an Ada GPU whose tensor cores run bf16 at twice its fp32 rate: the whole of
/// the tensor-core peak. Measured on an RTX 4090 (apache/tvm `tl_doc/flash_perf.md`, CUDA 12.2,
/// flash-attn forward, non-causal, head_dim 128, 2,048 tokens): 169.3 TFLOP/s, 1.02 times the
/// card's fp32-accumulate datasheet peak (128 SMs x 512 FLOP a clock x 2.52 GHz = 165.2 TFLOP/s;
/// the card boosts above that clock), so the kernel keeps those tensor cores busy. The L20 and
/// L40 have the same SM at the same 512 bf16 FLOP a clock (their bf16 peak is twice their fp32);
/// the L4 and L40S run twice as many and have no figure here.
const ADA_FLASH_ATTENTION_2: f64 = 1.0;

/// Whether `gpu` is an Ada GPU whose bf16 tensor peak is twice its fp32 peak (within 1%), the
/// RTX 4090's fp32-accumulate rate that [`ADA_FLASH_ATTENTION_2`] was measured at.
fn half_rate_ada(gpu: &GpuSpec) -> bool {
    gpu.architecture == Architecture::AdaLovelace
        && gpu
            .peak_bf16
            .is_some_and(|bf16| (bf16 / gpu.peak_fp32 - 2.0).abs() < 0.02)
}

/// The fraction of peak at the reference point that a measurement of `fraction` at `kernel`
/// implies on `gpu`, carried over by the roofline's own saturation with sequence length.
fn at_reference(gpu: &GpuSpec, kernel: &Kernel, fraction: f64) -> Option<f64> {
    let model = ComputeModel::new(gpu.clone());
    let achieved = |k: &Kernel| -> Option<f64> {
        let c = model.roofline_cost(k)?;
        Some(c.flops / c.seconds)
    };
    Some(fraction * achieved(&reference_kernel())? / achieved(kernel)?)
}

/// The H20's measured point (see [`H20`]): FlashAttention 2's fraction of peak carried to the
/// reference point, or FlashAttention 3's.
fn h20(gpu: &GpuSpec, flash_attention_3: bool) -> Option<f64> {
    let (fa2, fa3) = H20_MEASURED_TFLOPS;
    let tflops = if flash_attention_3 { fa3 } else { fa2 };
    at_reference(
        gpu,
        &h20_kernel(),
        tflops * 1e12 / gpu.peak_flops(Dtype::Bf16)?,
    )
}

/// The shape the H20 was measured at: forward, non-causal, 2,048 queries and keys, batch 2 of 16
/// heads of 128.
fn h20_kernel() -> Kernel {
    Kernel::Attention {
        batch_heads: 32,
        q_len: 2048,
        kv_len: 2048,
        head_dim: 128,
        causal: false,
        backward: false,
        dtype: Dtype::Bf16,
    }
}

/// Fraction of bf16 peak that FlashAttention 2 reaches on Hopper at the reference point: what the
/// attention table of the shipped profile `h200-sxm-141gb-measured` gives there (the test
/// `hopper_flash_attention_2_is_its_profiles` derives it again from that table).
const HOPPER_FLASH_ATTENTION_2_FRACTION: f64 = 0.34968436467399217;

impl AttentionKernel {
    pub fn name(self) -> &'static str {
        match self {
            AttentionKernel::FlashAttention1 => "flash-attention-1",
            AttentionKernel::FlashAttention2 => "flash-attention-2",
            AttentionKernel::FlashAttention3 => "flash-attention-3",
            AttentionKernel::Unfused => "unfused",
        }
    }

    /// Fraction of bf16 peak at the reference point on `gpu`, and where it comes from; `None`
    /// where there is no figure (or the kernel does not run there).
    pub fn reference(self, gpu: &GpuSpec) -> Option<Reference> {
        let at = |fraction, what, source| {
            Some(Reference {
                fraction,
                what,
                source,
            })
        };
        // Dao 2023 (FlashAttention-2, abstract): FlashAttention 2 is "around 2x" as fast as
        // FlashAttention (v1.0.9, Dao-AILab/flash-attention#505), and 1.3-2.5x as fast as
        // FlashAttention in Triton. The Triton port's own notes (flash-attention's
        // flash_attn/flash_attn_triton.py, tested on A100): "overall Triton forward + backward is
        // slightly slower than CUDA forward + backward" (the CUDA kernel of the day, FlashAttention
        // 1). Neither uses Hopper's asynchronous tensor-core instructions, so the same ratio is
        // taken on Hopper.
        if self == AttentionKernel::FlashAttention1 {
            return at(
                AttentionKernel::FlashAttention2.reference(gpu)?.fraction / 2.0,
                "FlashAttention 1 or its 2022 Triton port",
                "half of FlashAttention 2's speed on the same GPU; Dao 2023: FlashAttention 2 is \
                 about 2x FlashAttention",
            );
        }
        if gpu.name == H20 {
            return match self {
                AttentionKernel::FlashAttention2 => at(
                    h20(gpu, false)?,
                    "FlashAttention 2 on an H20",
                    "measured, flash-attention#1310",
                ),
                AttentionKernel::FlashAttention3 => at(
                    h20(gpu, true)?,
                    "FlashAttention 3 on an H20",
                    "measured, flash-attention#1310",
                ),
                _ => None,
            };
        }
        match (self, gpu.architecture) {
            // Read from the shipped H200 profile's [[attention]] table: PyTorch 2.11's
            // scaled_dot_product_attention flash backend on an H200 (same SMs and clocks as the
            // H100 SXM), calibration/h200-2026-11-30, run 2.
            (AttentionKernel::FlashAttention2, Architecture::Hopper) => at(
                HOPPER_FLASH_ATTENTION_2_FRACTION,
                "FlashAttention 2 on Hopper",
                "measured on an H200, calibration/h200-2026-11-30",
            ),
            // Dao 2023 (FlashAttention-2, Fig. 4 and text): forward up to 73% of an A100's peak,
            // about 70% at head_dim 128 and 16k tokens.
            (AttentionKernel::FlashAttention2, Architecture::Ampere) => at(
                0.70,
                "FlashAttention 2 on Ampere",
                "Dao 2023, forward at head_dim 128",
            ),
            // An RTX 4090's measurement, on the GPUs with its SMs ([`ADA_FLASH_ATTENTION_2`]).
            (AttentionKernel::FlashAttention2, Architecture::AdaLovelace) if half_rate_ada(gpu) => {
                at(
                    ADA_FLASH_ATTENTION_2,
                    "FlashAttention 2 on Ada",
                    "at its tensor-core peak, as measured on an RTX 4090 (169 TFLOP/s of 165, \
                     apache/tvm tl_doc/flash_perf.md), whose SMs run bf16 at the same rate",
                )
            }
            // Shah et al. 2024 (FlashAttention-3): bf16 forward up to 740 TFLOP/s on H100 SXM,
            // 75% of peak, at head_dim 128 and 16k tokens.
            (AttentionKernel::FlashAttention3, Architecture::Hopper) => at(
                0.75,
                "FlashAttention 3 on Hopper",
                "Shah et al. 2024, forward at head_dim 128",
            ),
            _ => None,
        }
    }

    /// Sets `compute`'s roofline attention fraction so that it reproduces this kernel's reference
    /// point on its GPU; the assumption in words, or `None` when there is no figure for the GPU.
    pub fn apply(self, compute: &mut ComputeModel) -> Option<String> {
        if self == AttentionKernel::Unfused {
            compute.unfused_attention = true;
            return Some(
                "unfused attention: scores materialised, batched GEMMs and a fused softmax with \
                 dropout, each its own kernel (Megatron-LM before FlashAttention)"
                    .into(),
            );
        }
        let reference = self.reference(&compute.gpu)?;
        let kernel = reference_kernel();
        let peak = compute.gpu.peak_flops(Dtype::Bf16)?;
        let roofline = compute.roofline_cost(&kernel)?;
        let achieved = roofline.flops / roofline.seconds / peak;
        compute.efficiency.attention_peak_fraction *= reference.fraction / achieved;
        if self == AttentionKernel::FlashAttention2 {
            compute.efficiency.attention_backward_fraction = FLASH_ATTENTION_2_BACKWARD;
        }
        Some(reference.describe())
    }
}

/// A kernel's reference point on a GPU: its fraction of bf16 peak there, the kernel and GPU in
/// words, and where the figure comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reference {
    pub fraction: f64,
    pub what: &'static str,
    pub source: &'static str,
}

impl Reference {
    /// "FlashAttention 2 on Hopper: 35% of peak (measured on an H200, ...)".
    pub fn describe(&self) -> String {
        format!(
            "{}: {:.0}% of peak ({})",
            self.what,
            100.0 * self.fraction,
            self.source
        )
    }
}

/// The kernels an unfused attention runs for `kernel` (an `Attention`; anything else is returned
/// as it is): see the module notes. Scores and probabilities are in the kernel's format, the
/// dropout mask one byte per score.
pub fn unfused_kernels(kernel: &Kernel) -> Vec<Kernel> {
    let Kernel::Attention {
        batch_heads,
        q_len,
        kv_len,
        head_dim,
        causal,
        backward,
        dtype,
    } = *kernel
    else {
        return vec![*kernel];
    };
    let gemm = |m, n, k| Kernel::Gemm {
        m,
        n,
        k,
        batch: batch_heads,
        dtype,
    };
    let scores = (batch_heads * q_len * kv_len) as f64;
    let e = dtype.bytes();
    // The causal softmax reads only the scores at or below the diagonal (for queries that see
    // every key: all of them) and writes whole rows, zeros above it.
    let kept = if causal && q_len == kv_len {
        (q_len as f64 + 1.0) / (2.0 * q_len as f64)
    } else {
        1.0
    };
    let pass = |reads: f64, writes: f64, flops: f64| Kernel::Memory {
        bytes: scores * (reads + writes),
        flops: scores * flops,
    };
    if backward {
        vec![
            // dV = P^T dO and dP = dO V^T.
            gemm(kv_len, head_dim, q_len),
            gemm(q_len, kv_len, head_dim),
            // Dropout's backward: the gradient and the mask in, the gradient out.
            pass(e + 1.0, e, 1.0),
            // Softmax's backward: probabilities and their gradient in, the scores' gradient out.
            pass(2.0 * e * kept, e, 3.0),
            // dQ = dS K and dK = dS^T Q.
            gemm(q_len, head_dim, kv_len),
            gemm(kv_len, head_dim, q_len),
        ]
    } else {
        vec![
            gemm(q_len, kv_len, head_dim),
            // Scale, mask and softmax: scores in, probabilities out.
            pass(e * kept, e, 5.0),
            // Dropout: probabilities in, dropped probabilities and the mask out.
            pass(e, e + 1.0, 1.0),
            gemm(q_len, head_dim, kv_len),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::{gpu, profile};

    #[test]
    fn hopper_flash_attention_2_is_its_profiles() {
        let profile = profile::shipped_profile("h200-sxm-141gb-measured").expect("shipped");
        let gpu = gpu::find(profile.gpu).unwrap();
        let kernel = reference_kernel();
        let seconds = profile.attention_seconds(gpu, &kernel).unwrap();
        let fraction = kernel.flops() / seconds / gpu.peak_flops(Dtype::Bf16).unwrap();
        assert_eq!(fraction, HOPPER_FLASH_ATTENTION_2_FRACTION);
    }

    #[test]
    fn unfused_attention_runs_every_score_and_costs_its_launches() {
        let h100 = gpu::find("H100").unwrap();
        let mut unfused = ComputeModel::new(h100);
        assert_eq!(
            AttentionKernel::Unfused.apply(&mut unfused).map(|_| ()),
            Some(())
        );
        let fused = ComputeModel::new(h100);
        let kernel = |backward| Kernel::Attention {
            batch_heads: 32,
            q_len: 2048,
            kv_len: 2048,
            head_dim: 128,
            causal: true,
            backward,
            dtype: Dtype::Bf16,
        };
        // Two GEMMs forward and four backward over all 2048 x 2048 scores: the mask saves nothing.
        let full = 4.0 * 32.0 * 2048.0 * 2048.0 * 128.0;
        assert_eq!(unfused_kernels(&kernel(false)).len(), 4);
        assert_eq!(unfused_kernels(&kernel(true)).len(), 6);
        for backward in [false, true] {
            let u = unfused.cost(&kernel(backward)).unwrap();
            let f = fused.cost(&kernel(backward)).unwrap();
            let gemm_flops = if backward { 2.0 * full } else { full };
            assert!(
                u.flops > gemm_flops && u.flops < 1.03 * gemm_flops,
                "{}",
                u.flops
            );
            assert!(
                u.seconds > f.seconds,
                "{backward}: {} vs {}",
                u.seconds,
                f.seconds
            );
            // The score matrix crosses memory several times.
            assert!(u.bytes > 4.0 * 32.0 * 2048.0 * 2048.0 * 2.0, "{}", u.bytes);
            // The causal softmax reads half the scores (and the diagonal): the same GEMMs, the
            // read half of the softmax pass saved.
            let mut full_rows = kernel(backward);
            if let Kernel::Attention { causal, .. } = &mut full_rows {
                *causal = false;
            }
            let n = unfused.cost(&full_rows).unwrap();
            let scores = 32.0 * 2048.0 * 2048.0;
            let saved = if backward { 2.0 * 2.0 } else { 2.0 } * scores * (2047.0 / 4096.0);
            assert!(
                (n.bytes - u.bytes - saved).abs() < 1.0,
                "{} {}",
                n.bytes,
                u.bytes
            );
            assert_eq!(n.flops, u.flops);
        }
        // Other kernels are priced as before.
        let gemm = Kernel::Gemm {
            m: 4096,
            n: 4096,
            k: 4096,
            batch: 1,
            dtype: Dtype::Bf16,
        };
        assert_eq!(unfused.cost(&gemm), fused.cost(&gemm));
    }

    #[test]
    fn the_reference_point_is_reproduced() {
        let h100 = gpu::find("H100").unwrap();
        // The H200 measurement: 346 TFLOP/s of 989.
        let measured = AttentionKernel::FlashAttention2
            .reference(h100)
            .unwrap()
            .fraction;
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
        // FlashAttention 1 runs at half of FlashAttention 2's speed on both architectures.
        let mut fa1 = ComputeModel::new(h100);
        AttentionKernel::FlashAttention1.apply(&mut fa1).unwrap();
        assert!((tflops(&fa1) - 173.0).abs() < 3.0, "{}", tflops(&fa1));
        let a100 = gpu::find("A100").unwrap();
        let fa1_ampere = AttentionKernel::FlashAttention1
            .reference(a100)
            .unwrap()
            .fraction;
        assert!((fa1_ampere - 0.35).abs() < 1e-9, "{fa1_ampere}");
        // The H20's own measurements, carried from 2,048 to 16,384 tokens: FlashAttention 2 at
        // 83.7 of 148 TFLOP/s there, a little more at the reference point; FlashAttention 1 half.
        let h20 = gpu::find("H20").unwrap();
        let fa2_h20 = AttentionKernel::FlashAttention2
            .reference(h20)
            .unwrap()
            .fraction;
        let fa3_h20 = AttentionKernel::FlashAttention3
            .reference(h20)
            .unwrap()
            .fraction;
        let fa1_h20 = AttentionKernel::FlashAttention1
            .reference(h20)
            .unwrap()
            .fraction;
        assert!(fa2_h20 > 83.7 / 148.0 && fa2_h20 < 0.60, "{fa2_h20}");
        assert!(fa3_h20 > 126.2 / 148.0 && fa3_h20 < 0.90, "{fa3_h20}");
        assert!((fa1_h20 - fa2_h20 / 2.0).abs() < 1e-12);
        let mut on_h20 = ComputeModel::new(h20);
        AttentionKernel::FlashAttention2.apply(&mut on_h20).unwrap();
        let c = on_h20.cost(&h20_kernel()).unwrap();
        assert!(
            (c.flops / c.seconds / 1e12 - 83.7).abs() < 1.0,
            "{}",
            c.flops / c.seconds
        );
        // FlashAttention 3 runs on Hopper only.
        assert!(AttentionKernel::FlashAttention3.reference(a100).is_none());
        let l20 = gpu::find("L20").unwrap();
        assert!(AttentionKernel::FlashAttention3.reference(l20).is_none());
        assert!(AttentionKernel::FlashAttention2.reference(a100).is_some());
    }

    /// FlashAttention 2 on an L20 runs at the tensor cores' peak, from the reference shape to a
    /// video's 118,800 tokens, and never above it; FlashAttention 1 at half of it. The L40S and
    /// L4, whose tensor cores run bf16 at four times their fp32 rate, have no figure.
    #[test]
    fn flash_attention_2_on_a_half_rate_ada_gpu_reaches_its_peak() {
        let l20 = gpu::find("L20").unwrap();
        let reference = AttentionKernel::FlashAttention2.reference(l20).unwrap();
        assert_eq!(reference.fraction, ADA_FLASH_ATTENTION_2);
        assert!(reference.describe().contains("RTX 4090"));
        let mut model = ComputeModel::new(l20);
        AttentionKernel::FlashAttention2.apply(&mut model).unwrap();
        let peak = l20.peak_flops(Dtype::Bf16).unwrap();
        for len in [16_384, 118_800, 1_000_000] {
            let k = Kernel::Attention {
                batch_heads: 24,
                q_len: len,
                kv_len: len,
                head_dim: 128,
                causal: false,
                backward: false,
                dtype: Dtype::Bf16,
            };
            let c = model.cost(&k).unwrap();
            let fraction = c.flops / c.seconds / peak;
            assert!(
                fraction > 0.98 && fraction <= 1.0 + 1e-9,
                "{len}: {fraction}"
            );
        }
        let fa1 = AttentionKernel::FlashAttention1.reference(l20).unwrap();
        assert!((fa1.fraction - 0.5).abs() < 1e-12);
        for name in ["L40S", "L4"] {
            let g = gpu::find(name).unwrap();
            assert!(!half_rate_ada(g), "{name}");
            assert!(
                AttentionKernel::FlashAttention2.reference(g).is_none(),
                "{name}"
            );
        }
        assert!(half_rate_ada(l20));
        assert!(!half_rate_ada(gpu::find("A100").unwrap()));
    }
}

#[cfg(test)]
mod backward_tests {
    use super::*;
    use crate::hw::gpu;

    /// FlashAttention 2's backward on an H100 at 8,192 causal tokens of head_dim 128, batch 2 of
    /// 32 heads, against the H200 measurement of PyTorch's flash backend (9.90 ms; 7.99 ms
    /// priced at the forward's rate); FlashAttention 3 keeps the forward's rate.
    #[test]
    fn flash_attention_2_runs_its_backward_slower_per_flop() {
        let h100 = gpu::find("H100").unwrap();
        let kernel = |backward| Kernel::Attention {
            batch_heads: 64,
            q_len: 8_192,
            kv_len: 8_192,
            head_dim: 128,
            causal: true,
            backward,
            dtype: Dtype::Bf16,
        };
        let rate = |m: &ComputeModel, backward| {
            let c = m.cost(&kernel(backward)).unwrap();
            (c.flops / c.seconds, c.seconds)
        };
        let mut fa2 = ComputeModel::new(h100);
        AttentionKernel::FlashAttention2.apply(&mut fa2).unwrap();
        let ((forward, _), (backward, seconds)) = (rate(&fa2, false), rate(&fa2, true));
        assert!((backward / forward - FLASH_ATTENTION_2_BACKWARD).abs() < 0.01);
        assert!((seconds - 9.90e-3).abs() < 0.1 * 9.90e-3, "{seconds}");
        let mut fa3 = ComputeModel::new(h100);
        AttentionKernel::FlashAttention3.apply(&mut fa3).unwrap();
        let ((forward, _), (backward, _)) = (rate(&fa3, false), rate(&fa3, true));
        assert!((backward / forward - 1.0).abs() < 0.01);
    }
}
