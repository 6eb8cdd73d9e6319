//! The operations of one transformer layer on one GPU, and their backward.
//!
//! A dense layer, with t = micro_batch x seq_len / cp tokens and h = hidden: layer norm, QKV
//! projection (t x h by h x qkv), fused causal attention, output projection (t x h by h x h),
//! residual add, layer norm, up projection (h x ffn, doubled when gated), activation, down
//! projection (ffn x h), residual add. Tensor parallelism splits them as Megatron-LM does (columns
//! of the QKV and up projections, rows of the output and down projections, heads of attention),
//! with its conjugate operators `f` and `g` marking where collectives go (`Sync`). A
//! mixture-of-experts layer replaces the MLP half with a router, an all-to-all dispatch, the local
//! experts' batched GEMMs, shared experts and an all-to-all combine (`Item::Exchange`).
//! A layer without attention (the model's last `skip_attention_layers`) keeps only its MLP half:
//! its first layer norm, QKV, attention, output projection and residual add are gone.
//! A GEMM's backward is two GEMMs (input gradient and weight gradient); an elementwise or
//! streaming kernel's backward moves twice the bytes; fused attention's backward does 2.5 times
//! its forward's work. Eager PyTorch's split of the elementwise operations is `eager.rs`.
//! A mixture-of-experts layer copies each token once per chosen expert into expert order before
//! the dispatch and sums the copies back after the combine (streaming passes).
//! Ignored: dropout kernels; the router's softmax and top-k, and the host synchronisation a
//! dropless dispatcher makes each layer to learn the all-to-all's split sizes (MoE training comes
//! out 1.6 to 3.5 times too fast against published runs, docs/VALIDATION.md).

use super::policy::ContextAlgorithm;
use crate::collective::CollectiveOp;
use crate::hw::{Dtype, ElementwiseOp, Kernel};
use crate::model::Transformer;

/// A named kernel of one layer.
#[derive(Clone, Copy)]
pub(super) struct Step {
    pub(super) name: &'static str,
    pub(super) kernel: Kernel,
}

/// Megatron-LM's tensor-parallel conjugate operators.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(super) enum Sync {
    /// Before a column-split GEMM: identity forward, all-reduce backward.
    F,
    /// After a row-split GEMM: all-reduce forward, identity backward.
    G,
}

impl Sync {
    /// The collective the operator runs in the forward (or backward) pass: an all-reduce, or with
    /// sequence parallelism an all-gather or reduce-scatter of the same bytes; None for identity.
    pub(super) fn collective(self, forward: bool, sequence_parallel: bool) -> Option<CollectiveOp> {
        Some(match (self, forward, sequence_parallel) {
            (Sync::F, true, false) | (Sync::G, false, false) => return None,
            (Sync::F, true, true) | (Sync::G, false, true) => CollectiveOp::AllGather,
            (Sync::G, true, true) | (Sync::F, false, true) => CollectiveOp::ReduceScatter,
            (Sync::G, true, false) | (Sync::F, false, false) => CollectiveOp::AllReduce,
        })
    }
}

/// One position in a layer: a kernel, a tensor-parallel synchronisation, or an expert-parallel
/// all-to-all (dispatching tokens to their experts, or combining them back; its own conjugate).
#[derive(Clone, Copy)]
pub(super) enum Item {
    Kernel(Step),
    Sync(Sync),
    Exchange(&'static str),
}

pub(super) fn gemm(m: u64, n: u64, k: u64, dtype: Dtype) -> Kernel {
    Kernel::Gemm {
        m,
        n,
        k,
        batch: 1,
        dtype,
    }
}

pub(super) fn elementwise(op: ElementwiseOp, bytes: f64, flops: f64) -> Kernel {
    Kernel::Elementwise {
        op,
        backward: false,
        bytes,
        flops,
    }
}

/// The query and the key (or value) widths of a rank's fused QKV projection `n` columns wide,
/// split over `tp` ranks: the queries first, then keys and values of equal width.
pub(super) fn qkv_widths(m: &Transformer, tp: u64, n: u64) -> (u64, u64) {
    let q = (m.q_width() / tp).min(n);
    (q, (n - q) / 2)
}

/// The kind of the MLP's activation kernel.
fn activation(m: &Transformer) -> ElementwiseOp {
    if m.gated {
        ElementwiseOp::GatedActivation
    } else {
        ElementwiseOp::Activation
    }
}

/// The forward of one layer on one tensor-parallel rank.
/// With context parallelism over `cp` ranks each rank holds `seq_len / cp` tokens of every
/// sequence; its attention kernel stands for its queries against all keys (how the keys arrive is
/// up to the builder).
pub(super) fn layer_forward(
    m: &Transformer,
    micro_batch: u64,
    cp: u64,
    tp: u64,
    sequence_parallel: bool,
) -> Vec<Item> {
    let t = micro_batch * m.seq_len as u64 / cp;
    // Tokens that layer norms and residual adds see.
    let tn = if sequence_parallel { t / tp.max(1) } else { t };
    let h = m.hidden as u64;
    let e = m.dtype.bytes();
    let act = |tokens: u64, width: u64| (tokens * width) as f64 * e;
    let ffn = m.ffn as u64 / tp;
    let k = |name, kernel| Item::Kernel(Step { name, kernel });
    vec![
        k(
            "layernorm",
            elementwise(ElementwiseOp::Norm, 2.0 * act(tn, h), 8.0 * (tn * h) as f64),
        ),
        Item::Sync(Sync::F),
        k("qkv_proj", gemm(t, m.qkv_width() / tp, h, m.dtype)),
        k(
            "attention",
            Kernel::Attention {
                batch_heads: micro_batch * m.heads as u64 / tp,
                q_len: m.seq_len as u64 / cp,
                kv_len: m.seq_len as u64,
                head_dim: m.head_dim(),
                causal: true,
                backward: false,
                dtype: m.dtype,
            },
        ),
        k("out_proj", gemm(t, h, m.q_width() / tp, m.dtype)),
        Item::Sync(Sync::G),
        k(
            "residual_add",
            elementwise(ElementwiseOp::Add, 3.0 * act(tn, h), (tn * h) as f64),
        ),
        k(
            "layernorm",
            elementwise(ElementwiseOp::Norm, 2.0 * act(tn, h), 8.0 * (tn * h) as f64),
        ),
        Item::Sync(Sync::F),
        k("mlp_up", gemm(t, m.up_width() / tp, h, m.dtype)),
        k(
            "mlp_act",
            elementwise(
                activation(m),
                act(t, m.up_width() / tp) + act(t, ffn),
                8.0 * (t * ffn) as f64,
            ),
        ),
        k("mlp_down", gemm(t, h, ffn, m.dtype)),
        Item::Sync(Sync::G),
        k(
            "residual_add",
            elementwise(ElementwiseOp::Add, 3.0 * act(tn, h), (tn * h) as f64),
        ),
    ]
}

/// The forward of one mixture-of-experts layer on one tensor-parallel rank of one
/// expert-parallel group: attention as in a dense layer, then the router, an all-to-all that sends
/// each token to its `top_k` experts, the local experts' GEMMs batched (the experts split over the
/// `ep` ranks and, like a dense MLP, over the `tp` ranks), the shared experts as a dense MLP, and
/// an all-to-all that brings the results back. Routing is assumed balanced: each local expert
/// gets `tokens x top_k x ep / experts` tokens (padded to the capacity when a capacity factor is
/// set).
pub(super) fn moe_layer_forward(
    m: &Transformer,
    micro_batch: u64,
    cp: u64,
    tp: u64,
    ep: u64,
    sequence_parallel: bool,
) -> Vec<Item> {
    let moe = m.moe.as_ref().expect("a mixture-of-experts layer");
    let mut items = layer_forward(m, micro_batch, cp, tp, sequence_parallel);
    // Keep attention and its residual add; replace the dense MLP half (from the second layer norm).
    let mlp_start = items
        .iter()
        .enumerate()
        .filter(|(_, item)| matches!(item, Item::Kernel(step) if step.name == "layernorm"))
        .map(|(i, _)| i)
        .nth(1)
        .expect("a layer has two layer norms");
    let norm = items.remove(mlp_start);
    items.truncate(mlp_start);
    items.push(norm);
    let t = micro_batch * m.seq_len as u64 / cp;
    let tn = if sequence_parallel { t / tp.max(1) } else { t };
    let h = m.hidden as u64;
    let e = m.dtype.bytes();
    let act = |tokens: u64, width: u64| (tokens * width) as f64 * e;
    let local = moe.experts as u64 / ep;
    let routed = t * moe.top_k as u64 * ep;
    let per_expert = match m.expert_capacity(t * ep) {
        Some(capacity) => capacity,
        None => routed.div_ceil(moe.experts as u64),
    };
    let ffn = moe.expert_ffn as u64 / tp;
    let up = m.expert_up_width() / tp;
    let batched = |m_: u64, n: u64, k: u64| Kernel::Gemm {
        m: m_,
        n,
        k,
        batch: local,
        dtype: m.dtype,
    };
    let k = |name, kernel| Item::Kernel(Step { name, kernel });
    items.push(k("router", gemm(t, moe.experts as u64, h, m.dtype)));
    // Each token copied once per chosen expert into expert order before the dispatch, and the
    // copies summed back, weighted by the router's probabilities, after the combine.
    let copies = act(t * moe.top_k as u64, h);
    items.push(k(
        "moe_permute",
        Kernel::Memory {
            bytes: act(t, h) + copies,
            flops: 0.0,
        },
    ));
    items.push(Item::Exchange("ep_dispatch"));
    items.push(Item::Sync(Sync::F));
    items.push(k("expert_up", batched(per_expert, up, h)));
    items.push(k(
        "expert_act",
        elementwise(
            activation(m),
            act(per_expert * local, up) + act(per_expert * local, ffn),
            8.0 * (per_expert * local * ffn) as f64,
        ),
    ));
    items.push(k("expert_down", batched(per_expert, h, ffn)));
    items.push(Item::Sync(Sync::G));
    items.push(Item::Exchange("ep_combine"));
    items.push(k(
        "moe_unpermute",
        Kernel::Memory {
            bytes: copies + act(t, h),
            flops: 2.0 * (t * moe.top_k as u64 * h) as f64,
        },
    ));
    if moe.shared_experts > 0 {
        let width = moe.shared_experts as u64;
        items.push(Item::Sync(Sync::F));
        items.push(k("shared_up", gemm(t, width * up, h, m.dtype)));
        items.push(k(
            "shared_act",
            elementwise(
                activation(m),
                act(t, width * up) + act(t, width * ffn),
                8.0 * (t * width * ffn) as f64,
            ),
        ));
        items.push(k("shared_down", gemm(t, h, width * ffn, m.dtype)));
        items.push(Item::Sync(Sync::G));
    }
    items.push(k(
        "residual_add",
        elementwise(ElementwiseOp::Add, 3.0 * act(tn, h), (tn * h) as f64),
    ));
    items
}

/// The casts that put an fp8 GEMM's operands into fp8 under dynamic (per-tensor) scaling, as
/// Transformer Engine and torchao's float8 run them: each operand of `batch` products, the
/// activation (rows x k) and `weights` of the weight (k x n: 1 when every call casts it, one
/// over the step's micro-batches when the cast is reused), read once for its absolute maximum
/// and once more to be written in fp8 (`2 e + 1` bytes an element from a format of `e` bytes),
/// one streaming pass. Its backward (twice the bytes, `backward`) stands for the output
/// gradient's cast and the transposed copies the weight-gradient GEMM needs. Not modelled:
/// Transformer Engine's casts fused into the layer norm and the activation before a GEMM.
fn fp8_cast((rows, n, k, batch): (u64, u64, u64, u64), from: Dtype, weights: f64) -> Item {
    let elements = (batch * k) as f64 * (rows as f64 + n as f64 * weights);
    Item::Kernel(Step {
        name: "fp8_cast",
        kernel: Kernel::Memory {
            bytes: elements * (2.0 * from.bytes() + 1.0),
            flops: 2.0 * elements,
        },
    })
}

/// A layer's items without its attention sublayer: everything up to and including the first
/// residual add removed (the MLP half, dense or mixture-of-experts, kept).
pub(super) fn without_attention(mut items: Vec<Item>) -> Vec<Item> {
    let end = items
        .iter()
        .position(|item| matches!(item, Item::Kernel(step) if step.name == "residual_add"))
        .expect("a layer's attention sublayer ends with a residual add");
    items.drain(..=end);
    items
}

/// The item lists a model's layers use: dense or mixture-of-experts, each with and without
/// attention (the latter only built when the model skips some).
pub(super) struct LayerKinds {
    dense: Vec<Item>,
    moe: Option<Vec<Item>>,
    bare_dense: Vec<Item>,
    bare_moe: Option<Vec<Item>>,
}

impl LayerKinds {
    /// The layers of `m` for a micro-batch of `micro_batch` sequences split over `cp`, `tp` and
    /// `ep` ranks, their linear layers' GEMMs in `gemm` (the router's stay in the model's
    /// format), their elementwise operations split as eager PyTorch runs them when `eager`
    /// (`super::eager`).
    pub(super) fn new(
        m: &Transformer,
        micro_batch: u64,
        (cp, tp, ep): (u64, u64, u64),
        sequence_parallel: bool,
        (gemm, weight_casts): (Dtype, f64),
        eager: bool,
    ) -> Self {
        let retype = |mut items: Vec<Item>| {
            if eager {
                items = super::eager::expand(items, m, tp);
            }
            let mut out = Vec::with_capacity(items.len() * 2);
            for mut item in items {
                if let Item::Kernel(Step {
                    name,
                    kernel:
                        Kernel::Gemm {
                            m: rows,
                            n,
                            k,
                            batch,
                            dtype,
                        },
                }) = &mut item
                    && *name != "router"
                {
                    *dtype = gemm;
                    if gemm == Dtype::Fp8 && m.dtype != Dtype::Fp8 {
                        out.push(fp8_cast((*rows, *n, *k, *batch), m.dtype, weight_casts));
                    }
                }
                out.push(item);
            }
            out
        };
        let dense = retype(layer_forward(m, micro_batch, cp, tp, sequence_parallel));
        let moe = m.moe.as_ref().map(|_| {
            retype(moe_layer_forward(
                m,
                micro_batch,
                cp,
                tp,
                ep,
                sequence_parallel,
            ))
        });
        let skips = m.attention_layers() < m.layers;
        let bare = |items: &[Item]| {
            if skips {
                without_attention(items.to_vec())
            } else {
                Vec::new()
            }
        };
        LayerKinds {
            bare_dense: bare(&dense),
            bare_moe: moe.as_deref().map(bare),
            dense,
            moe,
        }
    }

    /// [`LayerKinds::new`] for the set-up `s`: its model, micro-batch, degrees and formats.
    pub(super) fn of_setup(s: &super::setup::TrainingConfig) -> Self {
        Self::new(
            &s.model,
            s.micro_batch as u64,
            (s.cp as u64, s.tp as u64, s.ep as u64),
            s.sequence_parallel,
            (s.gemm_dtype, s.weight_casts()),
            s.eager,
        )
    }

    /// The items of layer `layer` of `m`.
    pub(super) fn of(&self, m: &Transformer, layer: u32) -> &[Item] {
        self.kind(m.is_moe_layer(layer), m.has_attention(layer))
    }

    /// The items of a layer of either kind, with or without attention.
    pub(super) fn kind(&self, moe_layer: bool, attention: bool) -> &[Item] {
        match (moe_layer, attention, &self.moe, &self.bare_moe) {
            (true, true, Some(moe), _) => moe,
            (true, false, _, Some(bare)) => bare,
            (_, true, ..) => &self.dense,
            (_, false, ..) => &self.bare_dense,
        }
    }
}

/// The attention kernel one context-parallel rank runs for a layer's attention `kernel` (its
/// queries against every key), in the pass `backward` or forward, and how many times it runs.
/// A rank holds a load-balanced share of the causal sequence (chunks `i` and `2 cp - 1 - i`), so
/// its queries meet half of the keys on average. After an all-gather of the keys and values: one
/// kernel of its `kv_len / cp` queries against `kv_len / 2` keys, every pair computed; under ring
/// attention one block of `kv_len / cp` keys a ring step, `cp` times, each block half computed.
pub(super) fn context_attention_kernel(
    kernel: Kernel,
    cp: u32,
    algorithm: ContextAlgorithm,
    backward: bool,
) -> (Kernel, u32) {
    let Kernel::Attention {
        batch_heads,
        q_len,
        kv_len,
        head_dim,
        dtype,
        ..
    } = kernel
    else {
        unreachable!("context attention splits an attention kernel")
    };
    let (kv, causal, runs) = match algorithm {
        ContextAlgorithm::AllGather => (kv_len / 2, false, 1),
        ContextAlgorithm::Ring => (kv_len / cp as u64, true, cp),
    };
    let block = Kernel::Attention {
        batch_heads,
        q_len,
        kv_len: kv,
        head_dim,
        causal,
        backward,
        dtype,
    };
    (block, runs)
}

/// The backward kernels of one forward kernel, with their names.
pub(super) fn backward(step: &Step) -> impl Iterator<Item = (&'static str, Kernel)> {
    // (an array, not a vector: a step asks for these millions of times)
    let kernels: [Option<(&'static str, Kernel)>; 2] = match step.kernel {
        Kernel::Gemm {
            m,
            n,
            k,
            batch,
            dtype,
        } => [
            Some((
                grad_name(step.name, false),
                Kernel::Gemm {
                    m,
                    n: k,
                    k: n,
                    batch,
                    dtype,
                },
            )),
            Some((
                grad_name(step.name, true),
                Kernel::Gemm {
                    m: k,
                    n,
                    k: m,
                    batch,
                    dtype,
                },
            )),
        ],
        Kernel::Attention { .. } => {
            let mut kernel = step.kernel;
            if let Kernel::Attention { backward, .. } = &mut kernel {
                *backward = true;
            }
            [Some(("attention_bwd", kernel)), None]
        }
        Kernel::Memory { bytes, flops } => [
            Some((
                grad_name(step.name, false),
                Kernel::Memory {
                    bytes: 2.0 * bytes,
                    flops: 2.0 * flops,
                },
            )),
            None,
        ],
        Kernel::Elementwise {
            op, bytes, flops, ..
        } => [
            Some((
                grad_name(step.name, false),
                Kernel::Elementwise {
                    op,
                    backward: true,
                    bytes: 2.0 * bytes,
                    flops: 2.0 * flops,
                },
            )),
            None,
        ],
    };
    kernels.into_iter().flatten()
}

fn grad_name(forward: &'static str, weights: bool) -> &'static str {
    match (forward, weights) {
        ("qkv_proj", false) => "qkv_proj_dgrad",
        ("qkv_proj", true) => "qkv_proj_wgrad",
        ("out_proj", false) => "out_proj_dgrad",
        ("out_proj", true) => "out_proj_wgrad",
        ("mlp_up", false) => "mlp_up_dgrad",
        ("mlp_up", true) => "mlp_up_wgrad",
        ("mlp_down", false) => "mlp_down_dgrad",
        ("mlp_down", true) => "mlp_down_wgrad",
        ("router", false) => "router_dgrad",
        ("router", true) => "router_wgrad",
        ("expert_up", false) => "expert_up_dgrad",
        ("expert_up", true) => "expert_up_wgrad",
        ("expert_down", false) => "expert_down_dgrad",
        ("expert_down", true) => "expert_down_wgrad",
        ("expert_act", _) => "expert_act_bwd",
        ("shared_up", false) => "shared_up_dgrad",
        ("shared_up", true) => "shared_up_wgrad",
        ("shared_down", false) => "shared_down_dgrad",
        ("shared_down", true) => "shared_down_wgrad",
        ("shared_act", _) => "shared_act_bwd",
        ("output_proj", false) => "output_proj_dgrad",
        ("output_proj", true) => "output_proj_wgrad",
        ("layernorm", _) => "layernorm_bwd",
        ("residual_add", _) => "residual_add_bwd",
        ("mlp_act", _) => "mlp_act_bwd",
        ("loss", _) => "loss_bwd",
        ("embedding", _) => "embedding_bwd",
        (
            "norm_upcast" | "norm_square" | "norm_mean" | "norm_scale" | "norm_downcast"
            | "norm_weight",
            _,
        ) => "norm_eager_bwd",
        ("rope_upcast" | "rope_rotate" | "rope_downcast", _) => "rope_eager_bwd",
        ("repeat_kv", _) => "repeat_kv_bwd",
        ("attention_contiguous", _) => "attention_contiguous_bwd",
        ("silu" | "gate_mul", _) => "mlp_act_eager_bwd",
        ("fp8_cast", _) => "fp8_cast_bwd",
        ("moe_permute", _) => "moe_permute_bwd",
        ("moe_unpermute", _) => "moe_unpermute_bwd",
        _ => "backward",
    }
}
