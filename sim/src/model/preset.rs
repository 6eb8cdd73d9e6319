//! Named models with their published shapes (`clustersim list models`).
//!
//! Sources: GPT-3 (Brown et al. 2020, Table 2.1; vocabulary padded to 51,200 as Megatron-LM does),
//! the Megatron-LM SC21 weak-scaling models (Narayanan et al. 2021, Table 1), Llama 2 (Touvron et
//! al. 2023) and Llama 3 / 3.1 (the models' published `config.json`). Sequence lengths are the
//! training context of each family.

use super::transformer::Transformer;
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
}

const fn gpt(name: &'static str, layers: u32, hidden: u32, heads: u32) -> Shape {
    Shape {
        name,
        layers,
        hidden,
        heads,
        kv_heads: heads,
        ffn: 4 * hidden,
        gated: false,
        vocab: 51200,
        seq_len: 2048,
        tied: true,
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
    }
}

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

/// A preset by name (case-insensitive).
pub fn find(name: &str) -> Option<Transformer> {
    PRESETS
        .iter()
        .find(|s| s.name.eq_ignore_ascii_case(name))
        .map(Shape::model)
}
