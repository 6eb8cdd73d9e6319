//! The shape of one micro-batch as the step builder prices it (its tokens, bytes and kernels),
//! and the price of attention given as one kernel per sequence or chunk.

use super::super::layer::{LayerKinds, gemm};
use super::super::policy::ContextAlgorithm;
use super::super::setup::TrainingConfig;
use super::MicroBatch;
use crate::hw::{ComputeModel, Kernel, KernelCost};

/// The shape of one micro-batch as the step builder prices it.
pub(in crate::workload::training) struct Shape {
    /// Tokens one GPU's GEMMs see (the micro-batch's, over the context-parallel ranks).
    pub t: u64,
    /// Bytes of the micro-batch's activations at a tensor-parallel synchronisation.
    pub act: f64,
    /// Bytes a stage sends to the next.
    pub p2p: f64,
    pub output: Kernel,
    pub kinds: LayerKinds,
    /// Attention as one kernel per sequence or chunk (forward; one ring block under
    /// context parallelism); empty: the layer's own attention kernel prices it.
    pub attention: Vec<Kernel>,
    /// Bytes one rank exchanges in an expert-parallel all-to-all.
    pub routed_bytes: f64,
}

impl Shape {
    /// Every micro-batch alike: `micro_batch` sequences of the model's length.
    pub(in crate::workload::training) fn uniform(s: &TrainingConfig) -> Shape {
        let m = &s.model;
        let tokens = s.micro_batch as u64 * m.seq_len as u64;
        Shape::of(s, m.clone(), s.micro_batch as u64, tokens, Vec::new())
    }

    /// A packed micro-batch of [`Sequences`](super::Sequences), priced by its own segments.
    pub(in crate::workload::training) fn packed(s: &TrainingConfig, mb: &MicroBatch) -> Shape {
        let mut m = s.model.clone();
        m.seq_len = u32::try_from(mb.tokens).expect("a micro-batch's tokens fit in u32");
        let heads = s.model.heads as u64 / s.tp as u64;
        let cp = s.cp as u64;
        let attention = |q_len, kv_len| Kernel::Attention {
            batch_heads: heads,
            q_len,
            kv_len,
            head_dim: s.model.head_dim(),
            causal: true,
            backward: false,
            dtype: s.model.dtype,
        };
        let mut parts = Vec::new();
        for seg in &mb.segments {
            if cp > 1 {
                let local = seg.tokens.div_ceil(cp);
                parts.push(match s.cp_algorithm {
                    ContextAlgorithm::Ring => attention(local, local),
                    ContextAlgorithm::AllGather => attention(local, seg.tokens),
                });
            } else {
                parts.push(attention(seg.tokens, seg.tokens));
                if seg.offset > 0 {
                    let mut earlier = attention(seg.tokens, seg.offset);
                    if let Kernel::Attention { causal, .. } = &mut earlier {
                        *causal = false;
                    }
                    parts.push(earlier);
                }
            }
        }
        Shape::of(s, m, 1, mb.tokens, parts)
    }

    fn of(
        s: &TrainingConfig,
        m: crate::model::Transformer,
        mb: u64,
        tokens: u64,
        attention: Vec<Kernel>,
    ) -> Shape {
        let (tp, cp) = (s.tp as u64, s.cp as u64);
        let t = tokens / cp;
        let h = m.hidden as u64;
        let act = (t * h) as f64 * m.dtype.bytes();
        let kinds = LayerKinds::new(
            &m,
            mb,
            (cp, tp, s.ep as u64),
            s.sequence_parallel,
            (s.gemm_dtype, s.weight_casts()),
            s.eager,
        );
        Shape {
            t,
            act,
            p2p: act / tp as f64,
            output: gemm(t, m.vocab as u64 / tp, h, m.dtype),
            kinds,
            attention,
            routed_bytes: m.moe.as_ref().map_or(0.0, |moe| {
                t as f64 * moe.top_k as f64 * h as f64 * m.dtype.bytes()
            }),
        }
    }
}

/// The price of an attention kernel `kernel` given as `parts` (one per sequence or chunk, in the
/// forward): each part priced in `kernel`'s pass and the times, FLOPs and bytes added (one
/// varlen launch: the launch overheads of all but one are not taken back, a small overestimate).
pub(in crate::workload::training) fn parts_cost(
    compute: &ComputeModel,
    parts: &[Kernel],
    kernel: &Kernel,
) -> KernelCost {
    let backward = matches!(kernel, Kernel::Attention { backward: true, .. });
    let mut total: Option<KernelCost> = None;
    let mut energy = 0.0;
    for part in parts {
        let mut k = *part;
        if let Kernel::Attention { backward: b, .. } = &mut k {
            *b = backward;
        }
        let c = compute
            .cost(&k)
            .expect("the set-up checked that the GPU computes in the model's format");
        energy += c.watts * c.seconds;
        total = Some(match total {
            None => c,
            Some(t) => KernelCost {
                seconds: t.seconds + c.seconds,
                flops: t.flops + c.flops,
                bytes: t.bytes + c.bytes,
                memory_bound: t.memory_bound && c.memory_bound,
                ..t
            },
        });
    }
    let mut total = total.expect("a micro-batch has at least one sequence");
    if total.seconds > 0.0 {
        total.watts = energy / total.seconds;
    }
    total
}
