//! A device's local training in one round: its arithmetic (FLOPs) and the memory it needs.
//!
//! FLOPs per sequence of `s` tokens follow the training convention of `workload::training`
//! (`model_flops`: 2 per weight per token for each GEMM, `4 s^2 h` per layer for attention):
//! the forward, the backward's input gradients (the same again), and weight gradients only for
//! what trains: all layer weights (the classic 3x forward) or the LoRA adapters (whose own
//! forward and backward add `2 s` per adapter coordinate each), and the trained rows of the
//! output projection. With noise-contrastive estimation (`nce_samples = k`) the output layer
//! scores `k + 1` tokens instead of the whole vocabulary (the sampling itself not counted).
//!
//! Memory: the weights, a gradient per trainable coordinate (local SGD: no optimizer state),
//! one step's activations (Korthikanti et al. 2022's per-layer count, 16h + 2 a s elements a
//! token without dropout masks, in the model's dtype) and the output layer's logits and their
//! gradient. Deliberately ignored: the framework and the operating system's share of memory,
//! recomputation, and the device's own kernel efficiency (its achieved FLOP/s is an input).

use super::update::{Body, Update};
use crate::model::Transformer;

/// The local work of one device in one round.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalWork {
    /// Sequences per local step, local steps per round.
    pub batch: u32,
    pub steps: u32,
    /// Tokens the output layer scores per position (the vocabulary, or NCE's k + 1).
    pub classes: f64,
}

impl LocalWork {
    /// Tokens trained on per round.
    pub fn tokens(&self, model: &Transformer) -> f64 {
        self.steps as f64 * self.batch as f64 * model.seq_len as f64
    }

    /// FLOPs of one round's local training.
    pub fn flops(&self, model: &Transformer, body: Body, update: &Update) -> f64 {
        let s = model.seq_len as f64;
        let h = model.hidden as f64;
        let layer_weights = (model.layers as u64 * model.layer_params()) as f64;
        let adapters = body.adapters(model);
        let gemm = 2.0 * s * (layer_weights + self.classes * h + adapters);
        let attention = model.layers as f64 * 4.0 * s * s * h;
        let forward = gemm + attention;
        let input_gradients = forward;
        let layer_weight_gradients = match body {
            Body::Full => 2.0 * s * layer_weights,
            Body::Lora(_) => 2.0 * s * adapters,
        };
        // The output projection's gradient, for the rows that train and that the output layer
        // scored.
        let output_rows = update.rows.min(self.classes);
        let output_gradients = 2.0 * s * output_rows * h;
        let per_sequence = forward + input_gradients + layer_weight_gradients + output_gradients;
        per_sequence * self.batch as f64 * self.steps as f64
    }

    /// Bytes a device needs for local training: `(weights, gradients, activations, logits)`.
    pub fn memory(&self, model: &Transformer, body: Body, update: &Update) -> (f64, f64, f64, f64) {
        let e = model.dtype.bytes();
        let s = model.seq_len as f64;
        let tokens = self.batch as f64 * s;
        let adapters = body.adapters(model);
        let weights = (model.params() as f64 + adapters) * e;
        let gradients = update.coordinates * e;
        let per_token = 16.0 * model.hidden as f64 + 2.0 * model.heads as f64 * s;
        let activations = tokens * model.layers as f64 * per_token * e;
        let logits = 2.0 * tokens * self.classes * e;
        (weights, gradients, activations, logits)
    }
}

#[cfg(test)]
mod tests {
    use super::super::update::Rows;
    use super::*;

    fn model() -> Transformer {
        let mut m = Transformer::dense("t", 4, 512, 8, 8, 2048, false, 100_000, 64, true);
        m.dtype = crate::hw::Dtype::Fp32;
        m
    }

    fn work(classes: f64) -> LocalWork {
        LocalWork {
            batch: 16,
            steps: 10,
            classes,
        }
    }

    #[test]
    fn full_training_is_three_forwards_of_the_gemms() {
        let m = model();
        let u = Update::new(&m, Body::Full, Rows::All, 1e4, 32);
        let w = work(100_000.0);
        let s = 64.0;
        let gemm = 2.0 * s * ((4 * m.layer_params()) as f64 + 100_000.0 * 512.0);
        let attention = 4.0 * 4.0 * s * s * 512.0;
        let expected = (3.0 * gemm + 2.0 * attention) * 160.0;
        assert!((w.flops(&m, Body::Full, &u) / expected - 1.0).abs() < 1e-12);
    }

    #[test]
    fn lora_nce_and_partial_rows_cut_the_arithmetic_and_the_logits() {
        let m = model();
        let full = Update::new(&m, Body::Full, Rows::All, 1e4, 32);
        let lora = Update::new(&m, Body::Lora(8), Rows::Count(10_000), 1e4, 32);
        let softmax = work(100_000.0);
        let nce = work(1_001.0);
        let f_full = softmax.flops(&m, Body::Full, &full);
        let f_lora = softmax.flops(&m, Body::Lora(8), &lora);
        let f_nce = nce.flops(&m, Body::Lora(8), &lora);
        assert!(
            f_lora < f_full && f_nce < f_lora / 2.0,
            "{f_full} {f_lora} {f_nce}"
        );
        let (_, g_full, _, l_full) = softmax.memory(&m, Body::Full, &full);
        let (_, g_lora, _, l_nce) = nce.memory(&m, Body::Lora(8), &lora);
        assert!(g_lora < g_full / 5.0);
        assert!((l_full / l_nce - 100_000.0 / 1_001.0).abs() < 1e-9);
    }
}
