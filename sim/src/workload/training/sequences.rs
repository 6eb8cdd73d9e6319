//! A training step over sequences of unlike lengths (`[sequences]`): the step's sequences (a
//! list, or a seeded sample of a distribution), how a packing policy turns them into
//! micro-batches of unlike shapes, and what each micro-batch costs and holds.
//!
//! Policies (`policy::Packing`):
//! - `fixed`: batch-level pipelining at one shape. Whole sequences packed first-fit decreasing
//!   into micro-batches of exactly `micro_batch_tokens` (the rest padding); every micro-batch's
//!   GEMMs run the padded length, its attention only over its own sequences (masked per document).
//! - `sequence-parallel`: whole sequences packed the same way, unpadded, each micro-batch split
//!   over the context-parallel ranks (ring attention or all-gather, `parallel.cp`); the baseline
//!   InfiniPipe compares against.
//! - `elastic` (InfiniPipe's elastic pipeline parallelism): a sequence longer than
//!   `micro_batch_tokens` is split into equal chunks (token-level pipelining; chunk k attends to
//!   its own tokens causally and to the k chunks before it in full), the rest packed whole
//!   (batch-level); sequences go to `micro_batches` micro-batches dearest first onto the cheapest
//!   micro-batch with room (cost: GEMM FLOPs linear in tokens, attention FLOPs quadratic in each
//!   sequence's length, a chunk's with the keys before it), the chunks of a sequence on
//!   successive micro-batches in order. Then, per pipeline stage, each micro-batch is
//!   kept or recomputed in full (chunk-level adaptive checkpointing): while the stage's
//!   in-flight micro-batches do not fit, the kept one that frees the most bytes per recomputed
//!   FLOP is recomputed, so stages that hold more micro-batches (the first, under 1F1B)
//!   recompute more, and short packed micro-batches (cheap to rerun) go before long chunks.
//!
//! Each micro-batch is priced by its own shape: GEMMs and elementwise kernels by its tokens,
//! attention as the sum of one kernel per sequence or chunk (`Shape::attention`), so a packed
//! micro-batch of short sequences costs far less attention than one long sequence of the same
//! tokens. Memory holds, per stage, the worst run of consecutive micro-batches its schedule
//! keeps in flight, with the keys and values of the earlier chunks of the sequences they
//! continue (kept on the same stage, so nothing is sent). Ignored: the dependence of chunk k's backward on
//! chunk k + 1's (the gradient of its keys and values; each chunk's backward runs in micro-batch
//! order here); the cost of the packing solver; data-parallel
//! replicas drawing different samples (every replica is assumed to get a sample like this one).

mod packing;
mod recompute;
mod report;
mod resolve;
mod shape;

pub use recompute::{choose_recompute, largest_tokens, stage_activations};
pub use report::{model_flops, recomputed_flops, report, tokens};
pub use resolve::resolve;
pub(super) use shape::{Shape, parts_cost};

use super::policy::Packing;

/// Part of one sequence in a micro-batch: `tokens` of it, after `offset` tokens of the same
/// sequence that earlier chunks carried.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub sequence: u32,
    pub tokens: u64,
    pub offset: u64,
}

/// One micro-batch: its sequences or chunks, and the tokens its GEMMs run (with padding).
#[derive(Clone, Debug, PartialEq)]
pub struct MicroBatch {
    pub segments: Vec<Segment>,
    pub tokens: u64,
}

impl MicroBatch {
    /// Tokens of real sequences (no padding).
    pub fn real_tokens(&self) -> u64 {
        self.segments.iter().map(|s| s.tokens).sum()
    }
}

/// The step's sequences and micro-batches.
#[derive(Clone, Debug)]
pub struct Sequences {
    pub packing: Packing,
    /// Lengths of one data-parallel replica's sequences this step.
    pub lengths: Vec<u64>,
    pub micro_batch_tokens: u64,
    pub micro_batches: Vec<MicroBatch>,
    /// Per stage and micro-batch: recomputed in full in the backward (true) or kept. Filled by
    /// [`choose_recompute`].
    pub recompute: Vec<Vec<bool>>,
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;
    use serde_json::Value;
    use std::path::Path;

    /// A Llama 2 7B scenario on 4 A100 in 4 stages with `extra` appended (a `[sequences]`
    /// table, or `[parallel]` batch keys).
    pub(super) fn text(parallel: &str, extra: &str) -> String {
        format!(
            r#"
kind = "training"
[cluster]
gpu = "A100-80GB"
nodes = 1
gpus_per_node = 4
[model]
preset = "llama-2-7b"
seq_len = 8192
[parallel]
pp = 4
schedule = "1f1b"
recompute = "full"
{parallel}
{extra}
"#
        )
    }

    pub(super) fn report(text: &str) -> Value {
        let s = Scenario::parse(Path::new("t.toml"), text.to_string(), &[])
            .unwrap_or_else(|e| panic!("{e}"));
        crate::run::training(&s)
            .unwrap_or_else(|e| panic!("{e}"))
            .report
    }

    pub(super) fn error(text: &str) -> String {
        let s = Scenario::parse(Path::new("t.toml"), text.to_string(), &[])
            .unwrap_or_else(|e| panic!("{e}"));
        match crate::run::training(&s) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn like_lengths_give_the_fixed_path_to_the_picosecond() {
        let fixed = report(&text("micro_batch = 1\nglobal_batch = 8", ""));
        let list = report(&text(
            "",
            "[sequences]\nlengths = [8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192]\npacking = \"fixed\"\nmicro_batch_tokens = 8192",
        ));
        for key in ["iteration_time_s", "tokens_per_s", "tflops_per_gpu", "hfu"] {
            assert_eq!(fixed[key], list[key], "{key}");
        }
        assert_eq!(fixed["breakdown_s"], list["breakdown_s"]);
        assert_eq!(
            fixed["memory"]["peak_bytes_per_gpu"],
            list["memory"]["peak_bytes_per_gpu"]
        );
        assert_eq!(list["sequences"]["micro_batches"], 8);
    }

    #[test]
    fn an_asynchronous_pipeline_repeats_the_step_s_micro_batches() {
        let lengths = "lengths = [16384, 2048, 2048, 4096, 8192, 1024]";
        let t = text(
            "",
            &format!("[sequences]\n{lengths}\npacking = \"elastic\"\nmicro_batch_tokens = 8192"),
        );
        let flushed = report(&t);
        let steady = report(&t.replace("\"1f1b\"", "\"async-1f1b\""));
        let it = |r: &Value| r["iteration_time_s"].as_f64().unwrap();
        // No flush between steps: the steady state is shorter than a step from empty.
        assert!(it(&steady) > 0.0 && it(&steady) < it(&flushed));
    }
}
