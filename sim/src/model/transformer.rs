//! Decoder-only transformer shapes and what follows from them: parameter counts and the sizes of the
//! matrices each layer multiplies.
//!
//! Modelled: multi-head and grouped-query attention (`kv_heads`), plain (GELU) or gated (SwiGLU) MLPs,
//! tied or untied embeddings. Ignored: biases and normalisation weights in parameter counts (under
//! 0.1% of any model here), positional-embedding tables, mixture-of-experts layers (not yet).

use crate::hw::Dtype;

/// The shape of a decoder-only transformer.
#[derive(Clone, Debug, PartialEq)]
pub struct Transformer {
    pub name: String,
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub ffn: u32,
    /// SwiGLU-style MLP: two up projections (gate and up) and one down projection.
    pub gated: bool,
    pub vocab: u32,
    pub seq_len: u32,
    pub tied_embeddings: bool,
    pub dtype: Dtype,
}

impl Transformer {
    pub fn head_dim(&self) -> u64 {
        (self.hidden / self.heads) as u64
    }

    /// Output width of the fused QKV projection.
    pub fn qkv_width(&self) -> u64 {
        self.hidden as u64 + 2 * self.kv_heads as u64 * self.head_dim()
    }

    /// Output width of the MLP's up projection (gate and up together when gated).
    pub fn up_width(&self) -> u64 {
        self.ffn as u64 * if self.gated { 2 } else { 1 }
    }

    /// Weights of one transformer layer.
    pub fn layer_params(&self) -> u64 {
        let h = self.hidden as u64;
        let attention = h * self.qkv_width() + h * h;
        let mlp = h * self.up_width() + self.ffn as u64 * h;
        attention + mlp
    }

    /// Embedding table plus the output projection when it is not tied to it.
    pub fn embedding_params(&self) -> u64 {
        let table = self.vocab as u64 * self.hidden as u64;
        if self.tied_embeddings {
            table
        } else {
            2 * table
        }
    }

    pub fn params(&self) -> u64 {
        self.layers as u64 * self.layer_params() + self.embedding_params()
    }
}

#[cfg(test)]
mod tests {
    use super::super::preset;

    /// Published parameter counts (billions) against the shapes.
    #[test]
    fn parameter_counts_match_the_published_sizes() {
        for (name, billions, tolerance) in [
            ("gpt3-175b", 175.0, 0.01),
            ("llama-2-7b", 6.74, 0.01),
            ("llama-2-70b", 68.98, 0.01),
            ("llama-3-8b", 8.03, 0.01),
            ("llama-3.1-405b", 405.0, 0.02),
        ] {
            let m = preset::find(name).unwrap();
            let got = m.params() as f64 / 1e9;
            assert!(
                (got - billions).abs() / billions < tolerance,
                "{name}: {got:.2} B parameters, published {billions} B"
            );
        }
    }
}
