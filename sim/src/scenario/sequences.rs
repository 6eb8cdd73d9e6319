//! `[sequences]`: a training step over sequences of unlike lengths and how they become
//! micro-batches (`workload::training::sequences`).
//!
//! ```toml
//! [sequences]
//! lengths = { dist = "lognormal", mean = 12000, sigma = 1.2, min = 512, max = 131072 }
//! count = 64                 # sequences per data-parallel replica and step (with a distribution; at most 2^20)
//! packing = "elastic"        # fixed | sequence-parallel | elastic
//! micro_batch_tokens = 32768 # fixed: the padded length; sequence-parallel: the cap; elastic: the cap and chunk size
//! micro_batches = 16         # elastic: how many balanced micro-batches (default: tokens / cap, at least pp)
//! ```
//! `lengths` may instead be a list, `[131072, 4096, 900, ...]`: the step's sequences as given.

use super::serving::LengthDistribution;
use crate::workload::training::policy::Packing;
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
