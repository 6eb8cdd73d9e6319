//! The step's figures over sequences of unlike lengths: model and recomputed FLOPs, real
//! tokens, and the report's `sequences` section.

use super::super::setup::TrainingConfig;
use super::Sequences;
use serde_json::{Value, json};

/// Model FLOPs of one step (the module convention of `mod.rs`: GEMMs of real tokens, attention
/// non-causal, 4 s^2 h per layer and sequence, backward twice the forward), over every replica.
pub fn model_flops(s: &TrainingConfig, q: &Sequences) -> f64 {
    let m = &s.model;
    let h = m.hidden as f64;
    let layer_weights = (m.active_params() - m.embedding_params()) as f64;
    let per_replica: f64 = q
        .lengths
        .iter()
        .map(|&l| {
            let l = l as f64;
            2.0 * l * (layer_weights + m.vocab as f64 * h) + m.layers as f64 * 4.0 * l * l * h
        })
        .sum();
    3.0 * s.dp as f64 * per_replica
}

/// FLOPs of the recomputed forwards, every stage and replica: each recomputed micro-batch's
/// forward over the stage's layers (padding included, attention non-causal as in the model
/// FLOPs).
pub fn recomputed_flops(s: &TrainingConfig, q: &Sequences) -> f64 {
    let m = &s.model;
    let per_layer_weights = (m.active_params() - m.embedding_params()) as f64 / m.layers as f64;
    let h = m.hidden as f64;
    let mut total = 0.0;
    for stage in 0..s.pp {
        let layers = s.stage_layers(stage) as f64;
        for (i, mb) in q.micro_batches.iter().enumerate() {
            if s.recomputes(stage, i as u32) {
                let attention: f64 = mb
                    .segments
                    .iter()
                    .map(|g| 4.0 * g.tokens as f64 * (g.offset + g.tokens) as f64 * h)
                    .sum();
                total += layers * (2.0 * mb.tokens as f64 * per_layer_weights + attention);
            }
        }
    }
    s.dp as f64 * total
}

/// Tokens of real sequences per step, every replica.
pub fn tokens(s: &TrainingConfig, q: &Sequences) -> f64 {
    s.dp as f64 * q.lengths.iter().sum::<u64>() as f64
}

/// The report's `sequences` section.
pub fn report(s: &TrainingConfig, q: &Sequences) -> Value {
    let tokens: Vec<u64> = q.micro_batches.iter().map(|m| m.tokens).collect();
    let real: u64 = q.micro_batches.iter().map(|m| m.real_tokens()).sum();
    let padded: u64 = tokens.iter().sum::<u64>() - real;
    let split = q
        .lengths
        .iter()
        .filter(|&&l| l > q.micro_batch_tokens)
        .count();
    json!({
        "packing": q.packing.name(),
        "sequences": q.lengths.len(),
        "tokens": q.lengths.iter().sum::<u64>(),
        "longest": q.lengths.iter().max(),
        "mean_length": q.lengths.iter().sum::<u64>() as f64 / q.lengths.len() as f64,
        "micro_batch_tokens": q.micro_batch_tokens,
        "micro_batches": q.micro_batches.len(),
        "micro_batch_tokens_min": tokens.iter().min(),
        "micro_batch_tokens_max": tokens.iter().max(),
        "padding_tokens": padded,
        "split_sequences": split,
        "recomputed_micro_batches_by_stage": (0..s.pp)
            .map(|st| (0..q.micro_batches.len()).filter(|&i| s.recomputes(st, i as u32)).count())
            .collect::<Vec<_>>(),
    })
}
