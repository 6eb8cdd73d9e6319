//! `[model]`: a preset by name, a Hugging Face `config.json` (`hf_config`), or the shape written
//! out; explicit keys override what a preset or a config says. `crate::model::resolve` turns it
//! into a [`crate::model::Transformer`].

use crate::hw::Dtype;
use crate::model::Activation;
use crate::workload::training::policy::ElementwiseMode;
use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    pub preset: Option<String>,
    /// A Hugging Face `config.json`, relative to the scenario.
    pub hf_config: Option<String>,
    pub layers: Option<u32>,
    pub hidden: Option<u32>,
    pub heads: Option<u32>,
    pub kv_heads: Option<u32>,
    /// Per-head width, when not hidden / heads.
    pub head_dim: Option<u32>,
    pub ffn: Option<u32>,
    pub gated: Option<bool>,
    pub activation: Option<Activation>,
    pub vocab: Option<u32>,
    pub seq_len: Option<u32>,
    pub tied_embeddings: Option<bool>,
    pub dtype: Option<Dtype>,
    /// Routed experts per mixture-of-experts layer.
    pub experts: Option<u32>,
    /// Routed experts per token.
    pub top_k: Option<u32>,
    pub shared_experts: Option<u32>,
    /// Intermediate width of one expert (default: `ffn`).
    pub expert_ffn: Option<u32>,
    /// Expert capacity as a multiple of an even share; absent: dropless.
    pub capacity_factor: Option<f64>,
    /// Leading layers that keep a dense MLP.
    pub dense_layers: Option<u32>,
    /// The last this many layers run without their attention sublayer (0 to layers - 1).
    pub skip_attention_layers: Option<u32>,
    /// The fused-attention kernel the framework runs ("flash-attention-1", "flash-attention-2" or
    /// "flash-attention-3"), or "unfused" (scores materialised, as before FlashAttention);
    /// absent: the roofline's default attention efficiency.
    pub attention_kernel: Option<crate::hw::attention_kernel::AttentionKernel>,
    /// Training: how the layer's elementwise operations run, "fused" (default: one kernel per
    /// norm, activation or add, as Megatron-LM, TransformerEngine or a compiler runs them) or
    /// "eager" (PyTorch without a compiler running Llama-style model code: a kernel per operation,
    /// `workload::training::eager`).
    pub elementwise: Option<ElementwiseMode>,
    /// Training: the attention and residual dropout probability (0 to below 1). Above 0, each
    /// layer keeps its dropout masks for the backward; default: the framework's recipes' (0 under
    /// NeMo and torchtitan), else Megatron-LM's 0.1.
    pub dropout: Option<f64>,
}
