//! Named models with their published shapes (`clustersim list models`): [`find`] by name
//! (case-insensitive), [`all`] in catalog order, [`names`].
//!
//! Each preset is a [`Transformer`] as the model's `config.json` or paper gives it; vocabularies
//! are as released (GPT-3's padded to 51,200 as Megatron-LM does). Sequence lengths are each
//! family's main pre-training context, not the longest context a release supports. DeepSeek-V3's
//! attention is counted with MLA's own projections (the workload prices it as GQA); its
//! multi-token-prediction module is left out, as in its report.
//! Sources, parameter counts and what they include: docs/MODELS.md#presets

use super::transformer::{Activation, Mla, Moe, Transformer};
use crate::hw::Dtype;

struct Shape {
    name: &'static str,
    layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    ffn: u32,
    gated: bool,
    vocab: u32,
    seq_len: u32,
    tied: bool,
    activation: Activation,
    head_dim: Option<u32>,
    mla: Option<Mla>,
    moe: Option<Moe>,
    /// The dropout probability of the published config, when it states one.
    dropout: Option<f64>,
}

const fn gpt(name: &'static str, layers: u32, hidden: u32, heads: u32) -> Shape {
    plain(name, layers, hidden, heads, 51200, 2048, true)
}

/// A GPT-style model: multi-head attention, a GELU MLP of 4 x hidden.
const fn plain(
    name: &'static str,
    layers: u32,
    hidden: u32,
    heads: u32,
    vocab: u32,
    seq_len: u32,
    tied: bool,
) -> Shape {
    Shape {
        name,
        layers,
        hidden,
        heads,
        kv_heads: heads,
        ffn: 4 * hidden,
        gated: false,
        vocab,
        seq_len,
        tied,
        activation: Activation::Gelu,
        head_dim: None,
        mla: None,
        moe: None,
        dropout: None,
    }
}

#[allow(clippy::too_many_arguments)]
const fn llama(
    name: &'static str,
    layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    ffn: u32,
    vocab: u32,
    seq_len: u32,
) -> Shape {
    Shape {
        name,
        layers,
        hidden,
        heads,
        kv_heads,
        ffn,
        gated: true,
        vocab,
        seq_len,
        tied: false,
        activation: Activation::Silu,
        head_dim: None,
        mla: None,
        moe: None,
        // Llama-style configs set `attention_dropout` to 0 and have no other dropout.
        dropout: Some(0.0),
    }
}

impl Shape {
    const fn with_moe(mut self, experts: u32, top_k: u32, expert_ffn: u32) -> Shape {
        self.moe = Some(Moe {
            experts,
            top_k,
            shared_experts: 0,
            expert_ffn,
            capacity_factor: None,
            dense_layers: 0,
        });
        self
    }

    const fn with_head_dim(mut self, head_dim: u32) -> Shape {
        self.head_dim = Some(head_dim);
        self
    }

    const fn with_activation(mut self, activation: Activation) -> Shape {
        self.activation = activation;
        self
    }

    const fn with_dropout(mut self, dropout: f64) -> Shape {
        self.dropout = Some(dropout);
        self
    }
}

const DEEPSEEK_V3: Shape = {
    let mut s = llama("deepseek-v3", 61, 7168, 128, 128, 18432, 129280, 4096);
    s.mla = Some(Mla {
        q_lora_rank: Some(1536),
        kv_lora_rank: 512,
        qk_nope_head_dim: 128,
        qk_rope_head_dim: 64,
        v_head_dim: 128,
    });
    s.moe = Some(Moe {
        experts: 256,
        top_k: 8,
        shared_experts: 1,
        expert_ffn: 2048,
        capacity_factor: None,
        dense_layers: 3,
    });
    s
};

const PRESETS: &[Shape] = &[
    gpt("gpt3-125m", 12, 768, 12),
    gpt("gpt3-350m", 24, 1024, 16),
    gpt("gpt3-1.3b", 24, 2048, 16),
    gpt("gpt3-2.7b", 32, 2560, 32),
    gpt("gpt3-6.7b", 32, 4096, 32),
    gpt("gpt3-13b", 40, 5120, 40),
    gpt("gpt3-175b", 96, 12288, 96),
    gpt("megatron-1.7b", 24, 2304, 24),
    gpt("megatron-3.6b", 30, 3072, 32),
    gpt("megatron-7.5b", 36, 4096, 32),
    gpt("megatron-18.4b", 40, 6144, 48),
    gpt("megatron-39.1b", 48, 8192, 64),
    gpt("megatron-76.1b", 60, 10240, 80),
    gpt("megatron-145.6b", 80, 12288, 96),
    gpt("megatron-310.1b", 96, 16384, 128),
    gpt("megatron-529.6b", 105, 20480, 128),
    gpt("megatron-1t", 128, 25600, 160),
    llama("llama-2-7b", 32, 4096, 32, 32, 11008, 32000, 4096),
    llama("llama-2-13b", 40, 5120, 40, 40, 13824, 32000, 4096),
    llama("llama-2-70b", 80, 8192, 64, 8, 28672, 32000, 4096),
    llama("llama-3-8b", 32, 4096, 32, 8, 14336, 128256, 8192),
    llama("llama-3-70b", 80, 8192, 64, 8, 28672, 128256, 8192),
    llama("llama-3.1-8b", 32, 4096, 32, 8, 14336, 128256, 8192),
    llama("llama-3.1-70b", 80, 8192, 64, 8, 28672, 128256, 8192),
    llama("llama-3.1-405b", 126, 16384, 128, 8, 53248, 128256, 8192),
    llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768).with_moe(8, 2, 14336),
    llama("mixtral-8x22b", 56, 6144, 48, 8, 16384, 32768, 65536).with_moe(8, 2, 16384),
    DEEPSEEK_V3,
    llama("qwen3-30b-a3b", 48, 2048, 32, 4, 6144, 151936, 4096)
        .with_head_dim(128)
        .with_moe(128, 8, 768),
    llama("qwen3-235b-a22b", 94, 4096, 64, 4, 12288, 151936, 4096)
        .with_head_dim(128)
        .with_moe(128, 8, 1536),
    Shape {
        kv_heads: 8,
        ..plain("nemotron-4-340b", 96, 18432, 96, 256000, 4096, false)
    }
    .with_activation(Activation::SquaredRelu)
    .with_dropout(0.0),
    plain("gpt-neox-20b", 44, 6144, 64, 50432, 2048, false).with_dropout(0.0),
    plain("bloom-176b", 70, 14336, 112, 250880, 2048, true).with_dropout(0.0),
    plain("opt-175b", 96, 12288, 96, 50272, 2048, true)
        .with_activation(Activation::Relu)
        .with_dropout(0.1),
    plain("mpt-7b", 32, 4096, 32, 50432, 2048, true).with_dropout(0.0),
    plain("mpt-30b", 48, 7168, 64, 50432, 8192, true).with_dropout(0.0),
];

impl Shape {
    fn model(&self) -> Transformer {
        Transformer {
            name: self.name.to_string(),
            layers: self.layers,
            hidden: self.hidden,
            heads: self.heads,
            kv_heads: self.kv_heads,
            ffn: self.ffn,
            gated: self.gated,
            vocab: self.vocab,
            seq_len: self.seq_len,
            tied_embeddings: self.tied,
            dtype: Dtype::Bf16,
            activation: self.activation,
            head_dim_override: self.head_dim,
            mla: self.mla,
            moe: self.moe.clone(),
            skip_attention_layers: 0,
        }
    }
}

/// Every preset, in catalog order.
pub fn all() -> Vec<Transformer> {
    PRESETS.iter().map(Shape::model).collect()
}

/// Names of the presets.
pub fn names() -> impl Iterator<Item = &'static str> {
    PRESETS.iter().map(|s| s.name)
}

/// The dropout probability a preset's published config trains with (`attention_dropout`,
/// `hidden_dropout`, `resid_pdrop` or the paper's), or None where it states none (GPT-3 and the
/// Megatron-LM paper's models).
pub fn published_dropout(name: &str) -> Option<f64> {
    shape(name).and_then(|s| s.dropout)
}

/// A preset by name (case-insensitive).
pub fn find(name: &str) -> Option<Transformer> {
    shape(name).map(Shape::model)
}

fn shape(name: &str) -> Option<&'static Shape> {
    PRESETS.iter().find(|s| s.name.eq_ignore_ascii_case(name))
}
