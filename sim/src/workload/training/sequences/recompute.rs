//! Chunk-level checkpointing over packed micro-batches: which micro-batch each stage
//! recomputes, and the activation bytes a stage holds for the ones it keeps in flight.

use super::super::memory;
use super::super::policy::{Packing, Recompute};
use super::super::schedule;
use super::super::setup::TrainingConfig;
use super::packing::segment_flops;
use super::{MicroBatch, Sequences};

impl TrainingConfig {
    /// Whether the backward of micro-batch `micro` on pipeline stage `stage` recomputes its
    /// forward: the elastic policy's choice per stage and micro-batch, else full recomputation.
    pub fn recomputes(&self, stage: u32, micro: u32) -> bool {
        match &self.sequences {
            Some(q) if !q.recompute.is_empty() => {
                // (an asynchronous pipeline's steady state runs the step's micro-batches twice)
                let row = &q.recompute[stage as usize];
                row[micro as usize % row.len()]
            }
            _ => self.recompute == Recompute::Full,
        }
    }
}

/// Activation bytes one layer keeps for micro-batch `mb` (its tokens before context
/// parallelism), kept or recomputed.
fn held(s: &TrainingConfig, mb: &MicroBatch, recomputed: bool) -> f64 {
    let m = &s.model;
    let t = mb.tokens as f64 / s.cp as f64;
    if recomputed {
        let input = t * m.hidden as f64 * m.dtype.bytes();
        if s.sequence_parallel {
            input / s.tp as f64
        } else {
            input
        }
    } else {
        memory::layer_activations_tokens(s, t)
    }
}

/// Bytes one layer keeps of the keys and values of the earlier chunks of the sequences that
/// micro-batches `window` continue: for each such sequence, everything before its latest chunk
/// in the window (kept once, whichever of its chunks reads it).
fn earlier_keys(s: &TrainingConfig, q: &Sequences, window: std::ops::Range<usize>) -> f64 {
    let m = &s.model;
    let mut latest: std::collections::BTreeMap<u32, u64> = std::collections::BTreeMap::new();
    for mb in &q.micro_batches[window] {
        for g in mb.segments.iter().filter(|g| g.offset > 0) {
            let e = latest.entry(g.sequence).or_default();
            *e = (*e).max(g.offset);
        }
    }
    let tokens: u64 = latest.values().sum();
    2.0 * tokens as f64 * (m.kv_heads as u64 * m.head_dim()) as f64 * m.dtype.bytes() / s.tp as f64
}

/// The `in_flight` consecutive micro-batches that hold the most on stage `stage` (of `layers`
/// layers each), and their bytes: each kept or recomputed as chosen, with the keys and values
/// of earlier chunks their sequences need.
fn worst_window(
    s: &TrainingConfig,
    q: &Sequences,
    stage: u32,
    layers: f64,
    in_flight: usize,
) -> (f64, std::ops::Range<usize>) {
    let n = q.micro_batches.len();
    let w = in_flight.clamp(1, n);
    let bytes: Vec<f64> = q
        .micro_batches
        .iter()
        .enumerate()
        .map(|(i, mb)| layers * held(s, mb, s.recomputes(stage, i as u32)))
        .collect();
    (0..=n - w)
        .map(|start| {
            let window = start..start + w;
            let held: f64 = bytes[window.clone()].iter().sum();
            (held + layers * earlier_keys(s, q, window.clone()), window)
        })
        .fold((f64::NEG_INFINITY, 0..w), |best, next| {
            if next.0 > best.0 { next } else { best }
        })
}

/// Activation bytes of stage `stage` that holds `in_flight` micro-batches of `layers` layers
/// each: its worst run of `in_flight` consecutive micro-batches (schedule order) as they are
/// kept, with the earlier chunks' keys and values, and while one is recomputed, one layer of the
/// largest recomputed one in full.
pub fn stage_activations(
    s: &TrainingConfig,
    q: &Sequences,
    stage: u32,
    layers: f64,
    in_flight: usize,
) -> f64 {
    let (window, _) = worst_window(s, q, stage, layers, in_flight);
    let rebuilt = q
        .micro_batches
        .iter()
        .enumerate()
        .filter(|(i, _)| s.recomputes(stage, *i as u32))
        .map(|(_, mb)| held(s, mb, false))
        .fold(0.0, f64::max);
    window + rebuilt
}

/// Micro-batches a stage keeps in flight under the schedule.
fn in_flight(s: &TrainingConfig, stage: u32) -> usize {
    let total = s.accumulation * s.virtual_stages;
    if s.pp > 1 {
        (schedule::warmup(s.schedule, s.pp, s.virtual_stages, s.accumulation, stage) + 1).min(total)
            as usize
    } else {
        1
    }
}

/// Tokens of the largest micro-batch (its logits are the largest).
pub fn largest_tokens(q: &Sequences) -> u64 {
    q.micro_batches.iter().map(|m| m.tokens).max().unwrap_or(0)
}

/// Fills `s.sequences.recompute`: the scenario's recomputation for every micro-batch under the
/// fixed and sequence-parallel policies, and under the elastic one with recompute = "full";
/// otherwise under the elastic one, per stage, kept unless the
/// stage's memory (its capacity less what is not activations) cannot hold its in-flight
/// micro-batches, the kept micro-batch freeing the most bytes per recomputed FLOP recomputed
/// first until they fit (or all are recomputed).
pub fn choose_recompute(s: &mut TrainingConfig) {
    let Some(q) = s.sequences.clone() else {
        return;
    };
    let n = q.micro_batches.len();
    let uniform = s.recompute == Recompute::Full;
    let mut choice = vec![vec![uniform; n]; s.pp as usize];
    if q.packing == Packing::Elastic && !uniform {
        s.assumptions.push(
            "elastic packing: each stage keeps or recomputes each micro-batch to fit its memory \
             (chunk-level checkpointing; recompute = \"full\" recomputes them all)"
                .into(),
        );
        choice = vec![vec![false; n]; s.pp as usize];
        for stage in 0..s.pp {
            if let Some(seq) = s.sequences.as_mut() {
                seq.recompute = choice.clone();
            }
            let mem = memory::stage_memory(s, stage);
            let budget = s.memory_cap - (mem.peak() - mem.activations);
            let layers = per_chunk_layers(s, stage);
            let window = in_flight(s, stage);
            loop {
                if let Some(seq) = s.sequences.as_mut() {
                    seq.recompute = choice.clone();
                }
                if stage_activations(s, &q, stage, layers, window) <= budget {
                    break;
                }
                // The kept micro-batch of the worst window that frees the most bytes per FLOP
                // rerun.
                let (_, worst) = worst_window(s, &q, stage, layers, window);
                let best = worst
                    .filter(|&i| !choice[stage as usize][i])
                    .map(|i| {
                        let mb = &q.micro_batches[i];
                        let freed = held(s, mb, false) - held(s, mb, true);
                        let flops: f64 = mb
                            .segments
                            .iter()
                            .map(|g| segment_flops(&s.model, g.tokens, g.offset))
                            .sum::<f64>()
                            + 2.0
                                * (mb.tokens - mb.real_tokens()) as f64
                                * s.model.layer_params() as f64;
                        (i, freed / flops.max(1.0))
                    })
                    .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
                match best {
                    Some((i, _)) => choice[stage as usize][i] = true,
                    None => break,
                }
            }
        }
    }
    if let Some(seq) = s.sequences.as_mut() {
        seq.recompute = choice;
    }
}

/// Layers of the stage's largest model chunk.
fn per_chunk_layers(s: &TrainingConfig, stage: u32) -> f64 {
    (0..s.virtual_stages)
        .map(|c| s.chunk_layers(c * s.pp + stage).len())
        .max()
        .unwrap_or(0) as f64
}
