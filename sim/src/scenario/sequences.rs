//! `[sequences]`: a training step over sequences of unlike lengths and how they become
//! micro-batches (`workload::training::sequences`).
//!
//! ```toml
//! [sequences]
//! lengths = { dist = "lognormal", mean = 12000, sigma = 1.2, min = 512, max = 131072 }
//! count = 64                 # sequences per data-parallel replica and step (with a distribution)
//! packing = "elastic"        # fixed | sequence-parallel | elastic
//! micro_batch_tokens = 32768 # fixed: the padded length; sequence-parallel: the cap; elastic: the cap and chunk size
//! micro_batches = 16         # elastic: how many balanced micro-batches (default: tokens / cap, at least pp)
//! ```
//! `lengths` may instead be a list, `[131072, 4096, 900, ...]`: the step's sequences as given.

use super::serving::LengthDistribution;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequencesSection {
    pub lengths: Option<SequenceLengths>,
    pub count: Option<u32>,
    pub packing: Option<Packing>,
    pub micro_batch_tokens: Option<u32>,
    pub micro_batches: Option<u32>,
}

/// The sequences' lengths: a list, or a distribution sampled `count` times with the scenario's
/// seed.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum SequenceLengths {
    List(Vec<u32>),
    Distribution(LengthDistribution),
}

/// How sequences become micro-batches.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Packing {
    /// Batch-level pipelining at a fixed shape: whole sequences packed first-fit decreasing into
    /// micro-batches of exactly `micro_batch_tokens` (padded).
    Fixed,
    /// The sequence-parallel baseline: whole sequences packed into micro-batches of up to
    /// `micro_batch_tokens`, each split over the context-parallel ranks.
    SequenceParallel,
    /// Elastic pipelining (InfiniPipe): sequences longer than `micro_batch_tokens` split into
    /// chunks (token level), the rest packed into micro-batches of balanced cost (batch level),
    /// each micro-batch's recomputation chosen per stage to fit memory.
    Elastic,
}

impl Packing {
    pub fn name(self) -> &'static str {
        match self {
            Packing::Fixed => "fixed",
            Packing::SequenceParallel => "sequence-parallel",
            Packing::Elastic => "elastic",
        }
    }
}
