//! A training step over sequences of unlike lengths (`[sequences]`, [`Sequences`]): the step's
//! sequences (a list, or a seeded sample of a distribution), how a packing policy
//! (`policy::Packing`) makes them into micro-batches of unlike shapes, and their costs and bytes.
//!
//! - `fixed`: whole sequences packed first-fit decreasing into padded micro-batches of
//!   `micro_batch_tokens`; GEMMs run the padded length, attention only each sequence's own.
//! - `sequence-parallel`: packed alike, unpadded, each split over the context-parallel ranks.
//! - `elastic`: long sequences split into chunks (each attending to the chunks before it), the
//!   rest packed whole, balanced by cost across micro-batches; per stage, micro-batches that do
//!   not fit are recomputed in full, those freeing the most bytes per recomputed FLOP first.
//!
//! Each micro-batch is priced by its own shape (GEMMs by tokens, attention per sequence or chunk);
//! memory holds each stage's worst run of in-flight micro-batches. Ignored: chunk k's backward's
//! dependence on chunk k + 1's, the packing solver's cost, replicas drawing different samples.
//! Policies in detail and sources: docs/TRAINING.md#variable-length-sequences

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
