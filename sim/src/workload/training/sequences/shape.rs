//! The shape of one micro-batch as the step builder prices it (its tokens, bytes and kernels),
//! and the price of attention given as one kernel per sequence or chunk.

use super::super::layer::{LayerKinds, gemm};
use super::super::policy::ContextAlgorithm;
use super::super::setup::Training;
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
    pub(in crate::workload::training) fn uniform(s: &Training) -> Shape {
        let m = &s.model;
        let tokens = s.micro_batch as u64 * m.seq_len as u64;
        Shape::of(s, m.clone(), s.micro_batch as u64, tokens, Vec::new())
    }

    /// A packed micro-batch of [`Sequences`](super::Sequences), priced by its own segments.
    pub(in crate::workload::training) fn packed(s: &Training, mb: &MicroBatch) -> Shape {
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
        s: &Training,
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
            s.gemm_dtype,
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

#[cfg(test)]
mod tests {
    use super::super::tests::{report, text};
    use crate::scenario::Scenario;
    use serde_json::Value;
    use std::path::Path;

    #[test]
    fn attention_is_priced_by_each_sequence_not_the_packed_length() {
        // Four micro-batches of 32,768 tokens each: one long sequence, or eight of 4,096.
        let long = report(&text(
            "",
            "[sequences]\nlengths = [32768, 32768, 32768, 32768]\npacking = \"fixed\"",
        ));
        let short = format!(
            "[sequences]\nlengths = [{}]\npacking = \"fixed\"\nmicro_batch_tokens = 32768",
            ["4096"; 32].join(", ")
        );
        let short = report(&text("", &short));
        assert_eq!(
            long["sequences"]["micro_batches"],
            short["sequences"]["micro_batches"]
        );
        assert_eq!(
            long["tokens_per_s"].as_f64().unwrap() * long["iteration_time_s"].as_f64().unwrap(),
            short["tokens_per_s"].as_f64().unwrap() * short["iteration_time_s"].as_f64().unwrap()
        );
        let it = |r: &Value| r["iteration_time_s"].as_f64().unwrap();
        // Attention is most of a 32K sequence's work at 7B; a eighth of it leaves the GEMMs.
        assert!(
            it(&short) < 0.7 * it(&long),
            "{} vs {}",
            it(&short),
            it(&long)
        );
        // Model FLOPs count each sequence's own quadratic attention.
        let flops = |r: &Value| r["flops"]["model_per_step"].as_f64().unwrap();
        assert!(flops(&short) < flops(&long));
    }

    #[test]
    fn each_micro_batch_flows_through_the_pipeline_with_its_own_durations() {
        // One 32K sequence, then four micro-batches of eight 4K sequences (2 ranks each).
        let lengths = format!("[32768, {}]", ["4096"; 32].join(", "));
        let t = text(
            "cp = 2\ncp_algorithm = \"ring\"",
            &format!("[sequences]\nlengths = {lengths}\npacking = \"sequence-parallel\"\nmicro_batch_tokens = 32768"),
        )
        .replace("pp = 4", "pp = 2");
        let s = Scenario::parse(Path::new("t.toml"), t, &[]).unwrap_or_else(|e| panic!("{e}"));
        let run = crate::run::training(&s).unwrap_or_else(|e| panic!("{e}"));
        // Forward attention time of the first stage's first layer, per micro-batch.
        let mut by_micro = std::collections::BTreeMap::new();
        for op in &run.graph.ops {
            if op.name == "attention" && op.layer == Some(0) && op.model_flops {
                *by_micro.entry(op.micro_batch.unwrap()).or_insert(0.0) +=
                    op.duration.as_secs_f64();
            }
        }
        let times: Vec<f64> = by_micro.values().copied().collect();
        assert_eq!(times.len(), 5);
        // The long sequence's micro-batch (packed first: longest first) costs about eight of the
        // others' attention (32K^2 against 8 x 4K^2).
        let ratio = times[0] / times[1];
        assert!((5.0..10.0).contains(&ratio), "{times:?}");
        assert!(
            times[1..]
                .iter()
                .all(|&x| (x - times[1]).abs() < 1e-9 * times[1])
        );
        assert!(
            run.report["breakdown_s"]["pipeline_bubble"]
                .as_f64()
                .unwrap()
                > 0.0
        );
    }
}
