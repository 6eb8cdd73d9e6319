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

pub(crate) mod packing;
mod recompute;
mod report;
mod shape;

pub use recompute::{choose_recompute, largest_tokens, stage_activations};
pub use report::{model_flops, recomputed_flops, report, tokens};
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
