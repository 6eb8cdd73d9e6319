//! What a device trains and uploads in a round of federated training: the trainable
//! coordinates of the transformer layers (all their weights, or LoRA adapters of rank r on every
//! projection) and of the embedding table (and of the output projection when it is not tied to
//! it): all rows, a subset of rows (partial embedding updates), or none; then the upload's bytes
//! at a number of bits per coordinate.
//!
//! Partial embedding updates (Xu et al. 2023) train a subset of rows and discard the other rows'
//! gradients. The subset is either a count the server fixes for the whole round (the same rows
//! for every device, as differential privacy and secure aggregation need) or, with
//! `embedding_rows = "seen"`, each device's distinct tokens: the expected number of distinct
//! tokens among the device's local tokens under a Zipf law of token frequencies over the
//! vocabulary, and a 4-byte row index uploaded with each row. Units: coordinates are counts,
//! bytes are bytes. Deliberately ignored: layer norms and biases (a few thousand coordinates),
//! entropy coding of the update, and the sparsity of any coordinates but whole rows.

use crate::model::Transformer;
use crate::stats::math::{exp, ln};

/// What trains in the transformer layers.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Body {
    Full,
    /// LoRA adapters of this rank on the query, key, value, output, (gate,) up and down
    /// projections of every layer, the layers' own weights frozen.
    Lora(u32),
}

impl Body {
    /// LoRA adapter coordinates over all layers (0 when the layers train in full).
    pub fn adapters(self, model: &Transformer) -> f64 {
        match self {
            Body::Full => 0.0,
            Body::Lora(rank) => model.layers as f64 * lora_params(model, rank),
        }
    }
}

/// Which rows of the embedding table (and untied output projection) train.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Rows {
    All,
    None,
    /// The same rows for every device of a round, chosen by the server.
    Count(u32),
    /// Each device's distinct tokens under a Zipf law with this exponent.
    Seen {
        zipf_exponent: f64,
    },
}

/// The trainable part of the model and what an update of it costs to send.
#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    /// Trainable coordinates of the transformer layers.
    pub body: f64,
    /// Rows trained per table, and the tables (1 when the output projection is tied to the
    /// embedding, else 2).
    pub rows: f64,
    pub tables: u32,
    /// Every trainable coordinate.
    pub coordinates: f64,
    /// Bytes of one device's upload.
    pub bytes: f64,
}

impl Update {
    /// The update of `model` with `body` and `rows` training, `tokens` local tokens per device
    /// and `bits` per uploaded coordinate.
    pub fn new(model: &Transformer, body: Body, rows: Rows, tokens: f64, bits: u32) -> Update {
        let h = model.hidden as f64;
        let body_coordinates = match body {
            Body::Full => (model.layers as u64 * model.layer_params()) as f64,
            Body::Lora(_) => body.adapters(model),
        };
        let tables = if model.tied_embeddings { 1 } else { 2 };
        let vocab = model.vocab as f64;
        let (trained_rows, indexed) = match rows {
            Rows::All => (vocab, false),
            Rows::None => (0.0, false),
            Rows::Count(n) => (n as f64, false),
            Rows::Seen { zipf_exponent } => {
                (distinct_tokens(model.vocab, zipf_exponent, tokens), true)
            }
        };
        let coordinates = body_coordinates + trained_rows * h * tables as f64;
        let index_bytes = if indexed {
            trained_rows * 4.0 * tables as f64
        } else {
            0.0
        };
        Update {
            body: body_coordinates,
            rows: trained_rows,
            tables,
            coordinates,
            bytes: coordinates * bits as f64 / 8.0 + index_bytes,
        }
    }
}

/// LoRA coordinates of one layer: `rank * (inputs + outputs)` per adapted projection (query,
/// key, value, output, and the MLP's gate, up and down), as PEFT adapts each separately.
pub fn lora_params(model: &Transformer, rank: u32) -> f64 {
    let h = model.hidden as f64;
    let q = model.q_width() as f64;
    let kv = (model.kv_heads as u64 * model.head_dim()) as f64;
    let ffn = model.ffn as f64;
    let ups = if model.gated { 2.0 } else { 1.0 };
    let sides = (h + q) + 2.0 * (h + kv) + (q + h) + ups * (h + ffn) + (ffn + h);
    rank as f64 * sides
}

/// Expected distinct tokens among `tokens` draws from a Zipf law over `vocab` tokens (the k-th
/// most frequent with probability proportional to `k^-s`): `sum_k 1 - (1 - p_k)^tokens`.
pub fn distinct_tokens(vocab: u32, s: f64, tokens: f64) -> f64 {
    let weight = |k: u32| exp(-s * ln(k as f64));
    let total: f64 = (1..=vocab).map(weight).sum();
    (1..=vocab)
        .map(|k| {
            let p = weight(k) / total;
            1.0 - exp(tokens * ln(1.0 - p))
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Transformer {
        Transformer::dense("t", 4, 512, 8, 8, 2048, false, 100_000, 64, true)
    }

    #[test]
    fn full_update_counts_every_weight() {
        let m = model();
        let u = Update::new(&m, Body::Full, Rows::All, 1e4, 32);
        assert_eq!(u.coordinates, m.params() as f64);
        assert_eq!(u.bytes, 4.0 * m.params() as f64);
    }

    #[test]
    fn partial_rows_and_lora_shrink_the_payload() {
        let m = model();
        let full = Update::new(&m, Body::Full, Rows::All, 1e4, 32);
        let partial = Update::new(&m, Body::Full, Rows::Count(10_000), 1e4, 32);
        let lora = Update::new(&m, Body::Lora(8), Rows::Count(10_000), 1e4, 32);
        // 90,000 rows of 512 fewer.
        assert_eq!(full.coordinates - partial.coordinates, 90_000.0 * 512.0);
        // Rank 8 on q, k, v, o and an ungated MLP: 8 * (4 * 1024 + 2 * 2560) per layer.
        assert_eq!(lora.body, 4.0 * 8.0 * (4.0 * 1024.0 + 2.0 * 2560.0));
        assert!(lora.bytes < partial.bytes / 3.0);
        let int8 = Update::new(&m, Body::Lora(8), Rows::Count(10_000), 1e4, 8);
        assert_eq!(int8.bytes * 4.0, lora.bytes);
    }

    #[test]
    fn distinct_tokens_grow_with_the_sample_and_stay_below_both_bounds() {
        assert!((distinct_tokens(10, 0.0, 1.0) - 1.0).abs() < 1e-12);
        let few = distinct_tokens(100_000, 1.0, 1_000.0);
        let many = distinct_tokens(100_000, 1.0, 100_000.0);
        assert!(few < 1_000.0 && few > 200.0, "{few}");
        assert!(many > few && many < 100_000.0, "{many}");
        // A uniform law over 1,000 tokens drawn 1,000 times covers 1 - 1/e of them.
        let uniform = distinct_tokens(1_000, 0.0, 1_000.0);
        assert!(
            (uniform - 1000.0 * (1.0 - (-1.0f64).exp())).abs() < 1.0,
            "{uniform}"
        );
    }

    #[test]
    fn seen_rows_carry_their_indices() {
        let m = model();
        let u = Update::new(
            &m,
            Body::Full,
            Rows::Seen { zipf_exponent: 1.0 },
            5_000.0,
            32,
        );
        let rows = distinct_tokens(100_000, 1.0, 5_000.0);
        assert!((u.rows - rows).abs() < 1e-9);
        assert!((u.bytes - (u.coordinates * 4.0 + rows * 4.0)).abs() < 1e-3);
    }
}
