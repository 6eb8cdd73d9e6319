//! `[parallel]`: how a training step is split over GPUs (Megatron-LM's names).

use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParallelSection {
    pub tp: Option<u32>,
    pub pp: Option<u32>,
    pub dp: Option<u32>,
    pub cp: Option<u32>,
    pub ep: Option<u32>,
    pub micro_batch: Option<u32>,
    pub global_batch: Option<u32>,
    pub schedule: Option<Schedule>,
    pub virtual_stages: Option<u32>,
    pub sequence_parallel: Option<bool>,
    pub recompute: Option<Recompute>,
    pub zero: Option<u8>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Schedule {
    Gpipe,
    #[serde(rename = "1f1b")]
    OneFOneB,
    #[serde(rename = "interleaved-1f1b")]
    Interleaved1F1B,
}

/// Activation recomputation, as Korthikanti et al. 2022 define it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Recompute {
    None,
    Selective,
    Full,
}

impl Recompute {
    pub fn name(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
        }
    }
}
