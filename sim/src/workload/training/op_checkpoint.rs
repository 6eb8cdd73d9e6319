//! Operator-level selective activation checkpointing (`recompute = "op"`), as torchtitan applies
//! it to each transformer block with `selective_ac_option = "op"`: in the forward, the outputs of
//! attention and of every matrix multiply but every second one are saved; everything else the
//! backward needs is recomputed from the layer's input and those outputs just before the layer's
//! backward. Multiplies count in the order a Llama block issues them (q, k, v, output, gate, up,
//! down; router and expert GEMMs too), so a gated layer recomputes its key, output and up
//! projections, a plain one its key and output projections. Every elementwise kernel is
//! recomputed; attention is not. Entry points: `recomputed` (kernels) and `saved_bytes`.
//!
//! Memory per layer and micro-batch, bytes in the model's 16-bit format: the layer's input, the
//! saved multiplies' outputs and the attention output, plus one layer's full activations while
//! its backward runs. Ignored: the tensor- and sequence-parallel collectives between a
//! recomputed kernel and its inputs (not rerun here), and attention's saved per-row statistics.
//! Sources: docs/TRAINING.md#operator-level-selective-checkpointing

use super::layer::{Item, LayerKinds, Step, qkv_widths};
use super::setup::TrainingConfig;
use crate::hw::Kernel;
use crate::model::Transformer;

/// The matrix multiplies of one layer's forward in the order a Llama block issues them, with
/// their names: the fused QKV and gated up projections of `items` split into their parts.
fn multiplies(items: &[Item], m: &Transformer, tp: u64) -> Vec<(&'static str, Kernel)> {
    let mut out = Vec::new();
    for item in items {
        let Item::Kernel(Step {
            name,
            kernel:
                kernel @ Kernel::Gemm {
                    m: rows,
                    n,
                    k,
                    batch,
                    dtype,
                },
        }) = *item
        else {
            continue;
        };
        let with_n = |width: u64| Kernel::Gemm {
            m: rows,
            n: width,
            k,
            batch,
            dtype,
        };
        match name {
            "qkv_proj" => {
                let (q, kv) = qkv_widths(m, tp, n);
                out.push(("q_proj", with_n(q)));
                out.push(("k_proj", with_n(kv)));
                out.push(("v_proj", with_n(n - q - kv)));
            }
            "mlp_up" | "expert_up" | "shared_up" if m.gated => {
                out.push(("gate_proj", with_n(n / 2)));
                out.push(("up_proj", with_n(n - n / 2)));
            }
            _ => out.push((name, kernel)),
        }
    }
    out
}

/// The kernels a layer's backward reruns first, in forward order: every elementwise kernel,
/// then every second matrix multiply (the second, fourth, ...).
pub(super) fn recomputed(items: &[Item], m: &Transformer, tp: u64) -> Vec<(&'static str, Kernel)> {
    let elementwise = items.iter().filter_map(|item| match item {
        Item::Kernel(step)
            if matches!(
                step.kernel,
                Kernel::Elementwise { .. } | Kernel::Memory { .. }
            ) =>
        {
            Some((step.name, step.kernel))
        }
        _ => None,
    });
    let dropped = multiplies(items, m, tp).into_iter().skip(1).step_by(2);
    elementwise.chain(dropped).collect()
}

/// Bytes one layer keeps for its backward per micro-batch on one GPU: its input (`input` bytes),
/// the outputs of the saved multiplies (the first, third, ...) and attention's output.
pub(super) fn saved_bytes(items: &[Item], m: &Transformer, tp: u64, input: f64) -> f64 {
    let e = m.dtype.bytes();
    let output = |k: &Kernel| match *k {
        Kernel::Gemm { m, n, batch, .. } => (m * n * batch) as f64 * e,
        Kernel::Attention {
            batch_heads,
            q_len,
            head_dim,
            ..
        } => (batch_heads * q_len * head_dim) as f64 * e,
        _ => 0.0,
    };
    let kept: f64 = multiplies(items, m, tp)
        .iter()
        .step_by(2)
        .map(|(_, k)| output(k))
        .sum();
    let attention: f64 = items
        .iter()
        .filter_map(|item| match item {
            Item::Kernel(step) if matches!(step.kernel, Kernel::Attention { .. }) => {
                Some(output(&step.kernel))
            }
            _ => None,
        })
        .sum();
    input + kept + attention
}

/// [`saved_bytes`] of the layer of `s` that keeps the most (dense or mixture-of-experts), for a
/// layer input of `input` bytes.
pub(super) fn most_saved_bytes(s: &TrainingConfig, input: f64) -> f64 {
    let m = &s.model;
    let kinds = LayerKinds::of_setup(s);
    [false, true]
        .into_iter()
        .map(|moe| saved_bytes(kinds.kind(moe, true), m, s.tp as u64, input))
        .fold(0.0, f64::max)
}

/// Recomputed GEMM FLOPs of one micro-batch's layers, summed over the GPUs that share it (its
/// tensor- and context-parallel ranks), for the hardware FLOP count.
pub(super) fn recomputed_flops(s: &TrainingConfig) -> f64 {
    let m = &s.model;
    let kinds = LayerKinds::of_setup(s);
    let per_rank: f64 = (0..m.layers)
        .map(|layer| {
            recomputed(kinds.of(m, layer), m, s.tp as u64)
                .iter()
                .filter(|(_, k)| matches!(k, Kernel::Gemm { .. }))
                .map(|(_, k)| k.flops())
                .sum::<f64>()
        })
        .sum();
    per_rank * (s.tp * s.cp) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::training::layer::layer_forward;

    fn llama_8b() -> Transformer {
        crate::model::preset::find("llama-3.1-8b").expect("a preset")
    }

    #[test]
    fn a_gated_layer_recomputes_its_key_output_and_up_projections() {
        let m = llama_8b();
        let items = layer_forward(&m, 1, 1, 1, false);
        let names: Vec<_> = multiplies(&items, &m, 1).iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "q_proj",
                "k_proj",
                "v_proj",
                "out_proj",
                "gate_proj",
                "up_proj",
                "mlp_down"
            ]
        );
        let rerun = recomputed(&items, &m, 1);
        let gemms: Vec<_> = rerun
            .iter()
            .filter(|(_, k)| matches!(k, Kernel::Gemm { .. }))
            .map(|(n, _)| *n)
            .collect();
        assert_eq!(gemms, ["k_proj", "out_proj", "up_proj"]);
        // Every elementwise kernel of the layer comes back; attention does not.
        let elementwise = items
            .iter()
            .filter(
                |i| matches!(i, Item::Kernel(s) if matches!(s.kernel, Kernel::Elementwise { .. })),
            )
            .count();
        assert_eq!(rerun.len(), elementwise + 3);
        assert!(
            rerun
                .iter()
                .all(|(_, k)| !matches!(k, Kernel::Attention { .. }))
        );
        // The key projection is the GQA width: 8 heads of 128.
        let k_proj = rerun.iter().find(|(n, _)| *n == "k_proj").unwrap().1;
        assert!(matches!(
            k_proj,
            Kernel::Gemm {
                n: 1024,
                k: 4096,
                ..
            }
        ));
    }

    #[test]
    fn saved_bytes_are_the_odd_multiplies_attention_and_the_input() {
        let m = llama_8b();
        let t = m.seq_len as f64;
        let items = layer_forward(&m, 1, 1, 1, false);
        let input = 2.0 * t * 4096.0;
        // q (4096), v (1024), gate (14336), down (4096) and attention's output (4096), bf16.
        let expected = input + 2.0 * t * (4096.0 + 1024.0 + 14336.0 + 4096.0 + 4096.0);
        assert_eq!(saved_bytes(&items, &m, 1, input), expected);
        // Tensor parallelism splits the column-parallel outputs and attention, not the down
        // projection's partial sums.
        let items = layer_forward(&m, 1, 1, 2, false);
        let split = input + 2.0 * t * ((4096.0 + 1024.0 + 14336.0 + 4096.0) / 2.0 + 4096.0);
        assert_eq!(saved_bytes(&items, &m, 2, input), split);
    }
}
