//! The space of training layouts the planner searches: every combination of the degrees and
//! switches below, for the scenario's model, cluster and global batch (which stay fixed).
//!
//! - tensor parallelism: the divisors of the GPU count up to the model's heads;
//! - pipeline parallelism: the divisors of the GPU count up to the layers;
//! - context parallelism: 1, 2, 4, 8 and 16 where they divide the GPUs;
//! - expert parallelism (mixture-of-experts models only): the divisors of the expert count;
//! - data parallelism: what the GPUs leave (never searched on its own);
//! - micro-batch: 1, 2, 3, 4, 6, 8, 12, 16 sequences;
//! - schedule: 1F1B and GPipe, and interleaved 1F1B with 2, 3, 4, 6, 8, 12 or 16 virtual stages,
//!   when there is a pipeline;
//! - sequence parallelism on and off, when there is tensor parallelism;
//! - recomputation none and full; ZeRO 0 to 3. Selective recomputation is left out: attention is
//!   fused, so its scores are already recomputed inside the backward kernel and selective
//!   recomputation prices and weighs exactly as none does here.
//!
//! Combinations that the rules of `Layout::check` refuse are counted by reason, not hidden.
//! Deliberately fixed: the rank order, the optimizer, tensor-parallel overlap and the context-
//! parallel algorithm (the scenario's own), and the global batch.

use crate::workload::training::policy::{Recompute, Schedule};
use crate::workload::training::{Layout, TrainingConfig};

/// Micro-batch sizes tried, sequences.
const MICRO_BATCHES: [u32; 8] = [1, 2, 3, 4, 6, 8, 12, 16];
/// Virtual stages tried with the interleaved schedule.
const VIRTUAL_STAGES: [u32; 6] = [2, 3, 4, 6, 8, 12];
/// Context-parallel degrees tried.
const CONTEXT: [u32; 5] = [1, 2, 4, 8, 16];

/// The candidate layouts of a training set-up.
pub struct Space {
    pub tp: Vec<u32>,
    pub pp: Vec<u32>,
    pub cp: Vec<u32>,
    pub ep: Vec<u32>,
    pub micro_batch: Vec<u32>,
    /// Schedule and virtual stages together (virtual stages only mean something interleaved).
    pub schedules: Vec<(Schedule, u32)>,
    pub recompute: Vec<Recompute>,
    pub zero: Vec<u8>,
    gpus: u32,
    global_batch: u32,
}

fn divisors(n: u32, at_most: u32) -> Vec<u32> {
    (1..=n.min(at_most))
        .filter(|d| n.is_multiple_of(*d))
        .collect()
}

impl Space {
    /// The whole space for `base`'s model, cluster and global batch.
    pub fn training(base: &TrainingConfig) -> Space {
        let gpus = base.gpus();
        let m = &base.model;
        let mut schedules = vec![(Schedule::OneFOneB, 1), (Schedule::Gpipe, 1)];
        schedules.extend(VIRTUAL_STAGES.map(|v| (Schedule::Interleaved1F1B, v)));
        Space {
            tp: divisors(gpus, m.heads),
            pp: divisors(gpus, m.layers),
            cp: CONTEXT
                .into_iter()
                .filter(|c| gpus.is_multiple_of(*c))
                .collect(),
            ep: match &m.moe {
                Some(moe) => divisors(moe.experts, moe.experts),
                None => vec![1],
            },
            micro_batch: MICRO_BATCHES.to_vec(),
            schedules,
            recompute: vec![Recompute::None, Recompute::Full],
            zero: vec![0, 1, 2, 3],
            gpus,
            global_batch: base.global_batch,
        }
    }

    /// Every candidate, in a fixed order. Without a pipeline only 1F1B with one virtual stage is
    /// a distinct candidate, and without tensor parallelism only sequence parallelism off.
    pub fn layouts(&self) -> Vec<Layout> {
        let mut out = Vec::new();
        for &tp in &self.tp {
            for &pp in &self.pp {
                for &cp in &self.cp {
                    let dp = (self.gpus / (tp * pp * cp).max(1)).max(1);
                    for &ep in &self.ep {
                        for &micro_batch in &self.micro_batch {
                            for &(schedule, virtual_stages) in &self.schedules {
                                if pp == 1 && (schedule, virtual_stages) != (Schedule::OneFOneB, 1)
                                {
                                    continue;
                                }
                                for sequence_parallel in [false, true] {
                                    if tp == 1 && sequence_parallel {
                                        continue;
                                    }
                                    for &recompute in &self.recompute {
                                        for &zero in &self.zero {
                                            out.push(Layout {
                                                tp,
                                                pp,
                                                cp,
                                                dp,
                                                ep,
                                                micro_batch,
                                                global_batch: self.global_batch,
                                                schedule,
                                                virtual_stages,
                                                sequence_parallel,
                                                recompute,
                                                zero,
                                            });
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }
}
