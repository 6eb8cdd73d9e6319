//! A layer's elementwise work as PyTorch runs Llama-style model code without a compiler
//! (`[model] elementwise = "eager"`): every operation is a kernel of its own that reads its inputs
//! from memory and writes its output back, where a fused kernel makes one pass. Per layer, beside
//! the GEMMs and attention: each RMSNorm as six passes (upcast, square, mean, scale, downcast,
//! weight product), rotary embedding of q and k in fp32 (upcast, rotation, downcast), the keys and
//! values repeated to the query heads under grouped-query attention, attention's output made
//! contiguous, and SiLU then its product with the up projection. Residual adds are one kernel
//! either way.
//!
//! Each pass is a streaming kernel ([`Kernel::Memory`]) priced by its bytes; its backward moves
//! twice them (`layer.rs`). Entry point: `expand`, which splits a layer's fused elementwise items.
//! Modelled for gated layers only (the set-up refuses `eager` for a plain MLP). Ignored: the
//! per-row `eps` and `rsqrt` kernels, and the separate rotary launches for q and k.
//! Reference code and measured bandwidths: docs/TRAINING.md#eager-mode

use super::layer::{Item, Step, qkv_widths};
use crate::hw::{ElementwiseOp, Kernel};
use crate::model::Transformer;

/// A streaming pass over `elements` values that moves `bytes_per_element` bytes each.
fn pass(name: &'static str, elements: f64, bytes_per_element: f64) -> Item {
    Item::Kernel(Step {
        name,
        kernel: Kernel::Memory {
            bytes: elements * bytes_per_element,
            flops: elements,
        },
    })
}

/// `items` of one layer's forward on one tensor-parallel rank with their elementwise operations
/// split into the kernels eager PyTorch runs.
pub(super) fn expand(items: Vec<Item>, m: &Transformer, tp: u64) -> Vec<Item> {
    let e = m.dtype.bytes();
    let mut out = Vec::with_capacity(items.len() * 2);
    for item in items {
        match item {
            // A fused norm reads and writes each value once: 2 e bytes an element.
            Item::Kernel(Step {
                kernel:
                    Kernel::Elementwise {
                        op: ElementwiseOp::Norm,
                        bytes,
                        ..
                    },
                ..
            }) => {
                let n = bytes / (2.0 * e);
                out.extend([
                    pass("norm_upcast", n, e + 4.0),
                    pass("norm_square", n, 8.0),
                    pass("norm_mean", n, 4.0),
                    pass("norm_scale", n, 8.0),
                    pass("norm_downcast", n, 4.0 + e),
                    pass("norm_weight", n, 2.0 * e),
                ]);
            }
            // A fused gated activation reads gate and up and writes their product: 3 e bytes.
            Item::Kernel(Step {
                kernel:
                    Kernel::Elementwise {
                        op: ElementwiseOp::GatedActivation,
                        bytes,
                        ..
                    },
                ..
            }) => {
                let n = bytes / (3.0 * e);
                out.extend([pass("silu", n, 2.0 * e), pass("gate_mul", n, 3.0 * e)]);
            }
            Item::Kernel(Step {
                name: "qkv_proj",
                kernel: Kernel::Gemm { m: t, n, .. },
            }) => {
                out.push(item);
                let (q, kv) = qkv_widths(m, tp, n);
                let (q, kv, t) = (q as f64, kv as f64, t as f64);
                out.extend([
                    pass("rope_upcast", t * (q + kv), e + 4.0),
                    pass("rope_rotate", t * (q + kv), 8.0),
                    pass("rope_downcast", t * (q + kv), 4.0 + e),
                ]);
                if m.kv_heads < m.heads {
                    // Keys and values each read at their width and written at the queries'.
                    out.push(pass("repeat_kv", t * 2.0 * (kv + q), e));
                }
            }
            Item::Kernel(Step {
                kernel:
                    Kernel::Attention {
                        batch_heads,
                        q_len,
                        head_dim,
                        ..
                    },
                ..
            }) => {
                out.push(item);
                let n = (batch_heads * q_len * head_dim) as f64;
                out.push(pass("attention_contiguous", n, 2.0 * e));
            }
            _ => out.push(item),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::training::layer::layer_forward;

    /// Bytes of a layer's non-GEMM, non-attention kernels.
    fn elementwise_bytes(items: &[Item]) -> f64 {
        items
            .iter()
            .filter_map(|i| match i {
                Item::Kernel(Step {
                    kernel: Kernel::Elementwise { bytes, .. } | Kernel::Memory { bytes, .. },
                    ..
                }) => Some(*bytes),
                _ => None,
            })
            .sum()
    }

    #[test]
    fn eager_llama_layer_moves_what_its_operations_read_and_write() {
        let m = crate::model::preset::find("llama-3.1-8b").expect("a preset");
        let fused = layer_forward(&m, 1, 1, 1, false);
        let eager = expand(fused.clone(), &m, 1);
        let t = m.seq_len as f64;
        let (h, q, kv, f) = (4096.0, 4096.0, 1024.0, 14336.0);
        // Per token: two norms of 36 bytes an element, rotary embedding 20 bytes an element of q
        // and k, repeat_kv 2 (kv + q) elements of 2 bytes, the contiguous copy 4 bytes an element
        // of q, SiLU and product 10 bytes an element of the MLP width, two residual adds of 6.
        let per_token =
            2.0 * 36.0 * h + 20.0 * (q + kv) + 4.0 * (kv + q) + 4.0 * q + 10.0 * f + 2.0 * 6.0 * h;
        assert_eq!(elementwise_bytes(&eager), t * per_token);
        // Eager moves about four times what the fused layer does.
        let ratio = elementwise_bytes(&eager) / elementwise_bytes(&fused);
        assert!((3.5..4.5).contains(&ratio), "{ratio}");
        // The GEMMs and attention are untouched.
        let heavy = |items: &[Item]| {
            items
                .iter()
                .filter(|i| {
                    matches!(i, Item::Kernel(s) if matches!(s.kernel, Kernel::Gemm { .. } | Kernel::Attention { .. }))
                })
                .count()
        };
        assert_eq!(heavy(&eager), heavy(&fused));
    }

    #[test]
    fn multi_head_attention_repeats_nothing() {
        let m = crate::model::preset::find("llama-2-7b").expect("a preset");
        let eager = expand(layer_forward(&m, 1, 1, 2, false), &m, 2);
        assert!(
            !eager
                .iter()
                .any(|i| matches!(i, Item::Kernel(s) if s.name == "repeat_kv"))
        );
        assert!(
            eager
                .iter()
                .any(|i| matches!(i, Item::Kernel(s) if s.name == "rope_rotate"))
        );
    }
}
