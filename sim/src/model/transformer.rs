//! Decoder-only transformer shapes and what follows from them: parameter counts and the sizes of the
//! matrices each layer multiplies.
//!
//! Modelled: multi-head and grouped-query attention (`kv_heads`), a head width apart from
//! `hidden / heads` (`head_dim_override`, as Qwen3 has), multi-head latent attention's projections
//! (`mla`, DeepSeek-V2/V3), plain or gated MLPs (`gated`: SwiGLU and its kin), tied or untied
//! embeddings, and mixture-of-experts layers (`moe`: routed experts, top-k routing, shared experts,
//! leading dense layers, the router's weights). Ignored: biases and normalisation weights in
//! parameter counts (under 0.1% of any model here), positional-embedding tables, and the extra
//! weights some releases carry beside the model (DeepSeek-V3's multi-token-prediction module).
//!
//! What the training workload prices stays the dense, grouped-query shape: `qkv_width`,
//! `head_dim` and `up_width` describe a GQA layer with an MLP of width `ffn`. For a model with
//! `mla` they are a GQA approximation of it (`attention_params` counts MLA's projections as they
//! are); for a model with `moe` the workload must add the experts itself (`expert_params`,
//! `moe_layers`, `top_k`). docs/MODELS.md explains both.

use crate::hw::Dtype;
use serde::Deserialize;

/// The MLP's non-linearity. With `gated`, the gate's: SiLU makes SwiGLU, GELU GeGLU.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    Gelu,
    Relu,
    /// ReLU squared (Primer; Nemotron-4).
    SquaredRelu,
    /// SiLU (swish), the gate of SwiGLU.
    Silu,
}

impl Activation {
    /// The name a scenario writes (`[model] activation = "..."`).
    pub fn name(self) -> &'static str {
        match self {
            Activation::Gelu => "gelu",
            Activation::Relu => "relu",
            Activation::SquaredRelu => "squared_relu",
            Activation::Silu => "silu",
        }
    }

    /// The MLP in words, e.g. "gated (SwiGLU)" or "plain (GELU)".
    pub fn describe(self, gated: bool) -> &'static str {
        match (gated, self) {
            (true, Activation::Silu) => "gated (SwiGLU)",
            (true, Activation::Gelu) => "gated (GeGLU)",
            (true, Activation::Relu) => "gated (ReGLU)",
            (true, Activation::SquaredRelu) => "gated (squared ReLU)",
            (false, Activation::Silu) => "plain (SiLU)",
            (false, Activation::Gelu) => "plain (GELU)",
            (false, Activation::Relu) => "plain (ReLU)",
            (false, Activation::SquaredRelu) => "plain (squared ReLU)",
        }
    }

    /// All of them, in the order docs list them.
    pub const ALL: [Activation; 4] = [
        Activation::Gelu,
        Activation::Relu,
        Activation::SquaredRelu,
        Activation::Silu,
    ];
}

/// Mixture-of-experts MLPs: in every layer after the first `dense_layers`, the MLP is replaced by
/// `experts` routed experts (each an MLP of width `expert_ffn`, gated like the model's), of which a
/// router picks `top_k` per token, plus `shared_experts` that every token goes through.
#[derive(Clone, Debug, PartialEq)]
pub struct Moe {
    /// Routed experts per mixture-of-experts layer.
    pub experts: u32,
    /// Routed experts each token is sent to.
    pub top_k: u32,
    /// Experts every token goes through besides its routed ones (DeepSeek: 1).
    pub shared_experts: u32,
    /// Intermediate width of one expert's MLP.
    pub expert_ffn: u32,
    /// Tokens an expert accepts per batch, as a multiple of an even share
    /// (`tokens x top_k / experts`); `None`: dropless (no token is dropped).
    pub capacity_factor: Option<f64>,
    /// Leading layers that keep a dense MLP of width `ffn` (DeepSeek-V3: 3).
    pub dense_layers: u32,
}

/// Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values go through low-rank
/// latents, and each head's query/key has a part without and a part with rotary embedding.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Mla {
    /// Rank of the query latent; `None`: queries projected at full rank (DeepSeek-V2-Lite).
    pub q_lora_rank: Option<u32>,
    /// Rank of the compressed key/value latent (what the KV cache holds).
    pub kv_lora_rank: u32,
    /// Per-head query/key width without rotary embedding.
    pub qk_nope_head_dim: u32,
    /// Per-head query/key width with rotary embedding (the key's part is shared by all heads).
    pub qk_rope_head_dim: u32,
    /// Per-head value width.
    pub v_head_dim: u32,
}

impl Mla {
    /// Weights of one layer's attention: query down/up, joint key/value down (with the shared
    /// rotary key), key/value up, and output projections.
    pub fn params(&self, hidden: u32, heads: u32) -> u64 {
        let h = hidden as u64;
        let n = heads as u64;
        let nope = self.qk_nope_head_dim as u64;
        let rope = self.qk_rope_head_dim as u64;
        let v = self.v_head_dim as u64;
        let q_out = n * (nope + rope);
        let q = match self.q_lora_rank {
            Some(r) => h * r as u64 + r as u64 * q_out,
            None => h * q_out,
        };
        let kv_rank = self.kv_lora_rank as u64;
        let kv = h * (kv_rank + rope) + kv_rank * n * (nope + v);
        let out = n * v * h;
        q + kv + out
    }
}

/// The most layers a model may have: layers are built one by one.
pub const MAX_LAYERS: u32 = 4_096;

/// The shape of a decoder-only transformer.
#[derive(Clone, Debug, PartialEq)]
pub struct Transformer {
    pub name: String,
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    /// Intermediate width of the dense MLP (of every layer of a dense model; of the first
    /// `moe.dense_layers` of a mixture-of-experts one).
    pub ffn: u32,
    /// SwiGLU-style MLP: two up projections (gate and up) and one down projection.
    pub gated: bool,
    pub vocab: u32,
    pub seq_len: u32,
    pub tied_embeddings: bool,
    pub dtype: Dtype,
    /// The MLP's non-linearity (no effect on sizes; reported, and priced as any elementwise op).
    pub activation: Activation,
    /// Per-head width when the model sets it apart from `hidden / heads` (Qwen3: 128).
    pub head_dim_override: Option<u32>,
    /// Multi-head latent attention's projections, which replace the GQA ones in parameter counts.
    pub mla: Option<Mla>,
    pub moe: Option<Moe>,
    /// The last this many layers have no attention sublayer (its layer norm, QKV and output
    /// projections, attention kernel, residual add and KV cache removed; the MLP kept), as in
    /// Tyukin et al. 2024, "Attention is all you need but you don't need all of it". 0: every
    /// layer has attention.
    pub skip_attention_layers: u32,
}

impl Transformer {
    /// A dense model with the activation its MLP usually has (SiLU when gated, else GELU), and
    /// none of the optional parts.
    #[allow(clippy::too_many_arguments)]
    pub fn dense(
        name: impl Into<String>,
        layers: u32,
        hidden: u32,
        heads: u32,
        kv_heads: u32,
        ffn: u32,
        gated: bool,
        vocab: u32,
        seq_len: u32,
        tied_embeddings: bool,
    ) -> Transformer {
        Transformer {
            name: name.into(),
            layers,
            hidden,
            heads,
            kv_heads,
            ffn,
            gated,
            vocab,
            seq_len,
            tied_embeddings,
            dtype: Dtype::Bf16,
            activation: if gated {
                Activation::Silu
            } else {
                Activation::Gelu
            },
            head_dim_override: None,
            mla: None,
            moe: None,
            skip_attention_layers: 0,
        }
    }

    pub fn head_dim(&self) -> u64 {
        match self.head_dim_override {
            Some(d) => d as u64,
            None => (self.hidden / self.heads) as u64,
        }
    }

    /// Output width of the query projection, and input width of the output projection: `hidden`,
    /// unless the head width is set apart from it.
    pub fn q_width(&self) -> u64 {
        match self.head_dim_override {
            Some(d) => self.heads as u64 * d as u64,
            None => self.hidden as u64,
        }
    }

    /// Output width of the fused QKV projection.
    pub fn qkv_width(&self) -> u64 {
        self.q_width() + 2 * self.kv_heads as u64 * self.head_dim()
    }

    /// Output width of the MLP's up projection (gate and up together when gated).
    pub fn up_width(&self) -> u64 {
        self.ffn as u64 * if self.gated { 2 } else { 1 }
    }

    /// Weights of one layer's attention: QKV and output projections, or MLA's.
    pub fn attention_params(&self) -> u64 {
        match &self.mla {
            Some(mla) => mla.params(self.hidden, self.heads),
            None => {
                let h = self.hidden as u64;
                h * self.qkv_width() + self.q_width() * h
            }
        }
    }

    /// Layers that keep their attention sublayer (and a KV cache): the leading
    /// `layers - skip_attention_layers`.
    pub fn attention_layers(&self) -> u32 {
        self.layers - self.skip_attention_layers.min(self.layers)
    }

    /// Whether layer `index` (0-based) has an attention sublayer.
    pub fn has_attention(&self, index: u32) -> bool {
        index < self.attention_layers()
    }

    /// Layers among `range` (0-based indices) that keep attention.
    pub fn attention_layers_in(&self, range: std::ops::Range<u32>) -> u32 {
        range.filter(|&i| self.has_attention(i)).count() as u32
    }

    /// Attention weights the skipped sublayers would have held (subtracted from the totals).
    fn skipped_attention_params(&self) -> u64 {
        (self.layers - self.attention_layers()) as u64 * self.attention_params()
    }

    /// Weights of one dense MLP (width `ffn`).
    pub fn mlp_params(&self) -> u64 {
        let h = self.hidden as u64;
        h * self.up_width() + self.ffn as u64 * h
    }

    /// Weights of one dense layer: attention and an MLP of width `ffn`. Every layer of a dense
    /// model is one; a mixture-of-experts model has `dense_layers()` of them and
    /// `moe_layers()` of [`Transformer::moe_layer_params`].
    pub fn layer_params(&self) -> u64 {
        self.attention_params() + self.mlp_params()
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

    /// All weights (every expert counted; skipped attention sublayers not).
    pub fn params(&self) -> u64 {
        self.dense_layers() as u64 * self.layer_params()
            + self.moe_layers() as u64 * self.moe_layer_params()
            + self.embedding_params()
            - self.skipped_attention_params()
    }

    /// Weights one token goes through: the routed experts it is sent to, not all of them. The
    /// whole embedding table and output projection count, as published active counts do. Equal to
    /// `params()` for a dense model.
    pub fn active_params(&self) -> u64 {
        self.dense_layers() as u64 * self.layer_params()
            + self.moe_layers() as u64 * self.moe_layer_active_params()
            + self.embedding_params()
            - self.skipped_attention_params()
    }

    pub fn is_moe(&self) -> bool {
        self.moe.is_some()
    }

    /// Layers with a dense MLP: all of a dense model's, the leading ones of a mixture-of-experts
    /// model's.
    pub fn dense_layers(&self) -> u32 {
        match &self.moe {
            Some(moe) => moe.dense_layers.min(self.layers),
            None => self.layers,
        }
    }

    /// Layers whose MLP is a mixture of experts (0 for a dense model).
    pub fn moe_layers(&self) -> u32 {
        self.layers - self.dense_layers()
    }

    /// Whether layer `index` (0-based) has experts rather than a dense MLP.
    pub fn is_moe_layer(&self, index: u32) -> bool {
        index >= self.dense_layers() && index < self.layers
    }

    /// Output width of one expert's up projection (gate and up together when gated); 0 for a
    /// dense model.
    pub fn expert_up_width(&self) -> u64 {
        self.moe
            .as_ref()
            .map_or(0, |m| m.expert_ffn as u64 * if self.gated { 2 } else { 1 })
    }

    /// Weights of one expert (routed or shared); 0 for a dense model.
    pub fn expert_params(&self) -> u64 {
        let ffn = self.moe.as_ref().map_or(0, |m| m.expert_ffn as u64);
        self.hidden as u64 * self.expert_up_width() + ffn * self.hidden as u64
    }

    /// Weights of one layer's router (a `hidden x experts` projection); 0 for a dense model.
    pub fn router_params(&self) -> u64 {
        self.moe
            .as_ref()
            .map_or(0, |m| self.hidden as u64 * m.experts as u64)
    }

    /// Weights of all the routed experts of one mixture-of-experts layer (what expert parallelism
    /// shards); 0 for a dense model.
    pub fn layer_expert_params(&self) -> u64 {
        self.moe
            .as_ref()
            .map_or(0, |m| m.experts as u64 * self.expert_params())
    }

    /// Weights of the shared experts of one mixture-of-experts layer; 0 for a dense model.
    pub fn layer_shared_expert_params(&self) -> u64 {
        self.moe
            .as_ref()
            .map_or(0, |m| m.shared_experts as u64 * self.expert_params())
    }

    /// All weights of one mixture-of-experts layer: attention, router, routed and shared experts.
    /// 0 for a dense model, which has no such layer.
    pub fn moe_layer_params(&self) -> u64 {
        if self.moe.is_none() {
            return 0;
        }
        self.attention_params()
            + self.router_params()
            + self.layer_expert_params()
            + self.layer_shared_expert_params()
    }

    /// Weights of one mixture-of-experts layer that one token goes through: attention, router,
    /// `top_k` routed experts and the shared ones. 0 for a dense model.
    pub fn moe_layer_active_params(&self) -> u64 {
        let Some(moe) = &self.moe else {
            return 0;
        };
        self.attention_params()
            + self.router_params()
            + (moe.top_k as u64 + moe.shared_experts as u64) * self.expert_params()
    }

    /// Tokens one expert accepts when `tokens` enter a mixture-of-experts layer together:
    /// `ceil(capacity_factor x tokens x top_k / experts)`. `None` for a dense model or a dropless
    /// one (no capacity factor).
    pub fn expert_capacity(&self, tokens: u64) -> Option<u64> {
        let moe = self.moe.as_ref()?;
        let factor = moe.capacity_factor?;
        let even = tokens as f64 * moe.top_k as f64 / moe.experts as f64;
        Some((factor * even).ceil() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::super::preset;
    use super::*;

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

    /// The dense formulas are the ones the workload has always used.
    #[test]
    fn a_dense_model_counts_as_before() {
        let m = preset::find("llama-3-8b").unwrap();
        let h = m.hidden as u64;
        let qkv = h + 2 * m.kv_heads as u64 * (h / m.heads as u64);
        let layer = h * qkv + h * h + h * 2 * m.ffn as u64 + m.ffn as u64 * h;
        assert_eq!(m.qkv_width(), qkv);
        assert_eq!(m.layer_params(), layer);
        assert_eq!(m.params(), m.layers as u64 * layer + 2 * m.vocab as u64 * h);
        assert_eq!(m.active_params(), m.params());
        assert_eq!(m.dense_layers(), m.layers);
        assert_eq!(m.moe_layers(), 0);
        assert_eq!(m.moe_layer_params(), 0);
        assert_eq!(m.expert_params(), 0);
        assert_eq!(m.expert_capacity(1000), None);
    }

    #[test]
    fn experts_count_in_total_but_only_top_k_are_active() {
        let mut m = Transformer::dense("toy", 4, 64, 4, 4, 256, true, 1000, 128, false);
        m.moe = Some(Moe {
            experts: 8,
            top_k: 2,
            shared_experts: 1,
            expert_ffn: 128,
            capacity_factor: Some(1.25),
            dense_layers: 1,
        });
        let expert = 3 * 64 * 128;
        assert_eq!(m.expert_params(), expert);
        assert_eq!(m.router_params(), 64 * 8);
        assert_eq!(m.layer_expert_params(), 8 * expert);
        let attention = 4 * 64 * 64;
        assert_eq!(m.attention_params(), attention);
        assert_eq!(m.moe_layer_params(), attention + 64 * 8 + 9 * expert);
        assert_eq!(m.moe_layer_active_params(), attention + 64 * 8 + 3 * expert);
        let dense = attention + 3 * 64 * 256;
        let embeddings = 2 * 1000 * 64;
        assert_eq!(
            m.params(),
            dense + 3 * (attention + 64 * 8 + 9 * expert) + embeddings
        );
        assert_eq!(
            m.active_params(),
            dense + 3 * (attention + 64 * 8 + 3 * expert) + embeddings
        );
        assert!(!m.is_moe_layer(0));
        assert!(m.is_moe_layer(1) && m.is_moe_layer(3) && !m.is_moe_layer(4));
        // 1000 tokens, 2 of 8 experts each: 250 per expert evenly, x1.25.
        assert_eq!(m.expert_capacity(1000), Some(313));
    }

    #[test]
    fn an_explicit_head_width_sets_the_projection_widths() {
        let mut m = Transformer::dense("toy", 1, 2048, 32, 4, 768, true, 1000, 128, false);
        assert_eq!(m.q_width(), 2048);
        m.head_dim_override = Some(128);
        assert_eq!(m.head_dim(), 128);
        assert_eq!(m.q_width(), 4096);
        assert_eq!(m.qkv_width(), 4096 + 2 * 4 * 128);
        assert_eq!(m.attention_params(), 2048 * (4096 + 1024) + 4096 * 2048);
    }

    #[test]
    fn latent_attention_counts_its_low_rank_projections() {
        let mla = Mla {
            q_lora_rank: Some(1536),
            kv_lora_rank: 512,
            qk_nope_head_dim: 128,
            qk_rope_head_dim: 64,
            v_head_dim: 128,
        };
        // DeepSeek-V3's, by hand: q_a, q_b, kv_a (with the rotary key), kv_b, o.
        let expected =
            7168 * 1536 + 1536 * 128 * 192 + 7168 * (512 + 64) + 512 * 128 * 256 + 128 * 128 * 7168;
        assert_eq!(mla.params(7168, 128), expected);
        let full_rank = Mla {
            q_lora_rank: None,
            ..mla
        };
        assert_eq!(
            full_rank.params(7168, 128),
            expected - 7168 * 1536 - 1536 * 128 * 192 + 7168 * 128 * 192
        );
    }
}
