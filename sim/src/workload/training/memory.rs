//! Memory per GPU during a training step, in bytes, per pipeline stage ([`stage_memory`]; the
//! stage that needs the most: [`memory`]).
//!
//! Model state with mixed-precision Adam: 16-bit weights (2 bytes a parameter), fp32 gradients
//! (4), fp32 master weights and moments (12, or the optimizer's own), sharded by ZeRO 1/2/3 and
//! divided by tp. Activations are the tensors each layer saves for its backward, per micro-batch
//! of t tokens of width h (34th for GPT shapes, 32th without dropout's masks; attention fused),
//! divided by tensor, sequence and context parallelism as they split those tensors; full
//! recomputation keeps each layer's input (2th) plus one layer being rebuilt; the logits take 6tV
//! (vocab V).
//! Also counted when configured: local SGD's outer state, the async pipeline's weight stashes,
//! adaptive or operator-level recomputation's saved bytes, error-feedback buffers, and what
//! optimizer offload leaves on the GPU (what moves off it is reported as `host`, not in the peak).
//!
//! Ignored: the CUDA context and allocator fragmentation, and kernels' temporary workspaces.
//! Per-term formulas and sources: docs/TRAINING.md#memory

use super::activation_plan::{self, ActivationPlan};
use super::policy::{OptimizerOffload, ParamGather, Recompute, Schedule};
use super::schedule;
use super::setup::TrainingConfig;
use super::step::{BUCKET_BYTES, most_gathered_params};
use crate::report::training::{Memory, MemoryParts};

/// Bytes per GPU by purpose.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryUse {
    pub weights: f64,
    pub gradients: f64,
    pub optimizer: f64,
    pub activations: f64,
    pub logits: f64,
    pub buffers: f64,
    /// Local SGD's outer state: the model as of the last outer synchronisation and the outer
    /// optimizer's momentum, both fp32.
    pub outer: f64,
    /// Error-feedback buffers of compressed pipeline messages (Clapping), fp32.
    pub error_feedback: f64,
    /// With 16-bit gradients, the optimizer's fp32 copy of its gradient shard, made for the step
    /// (DeepSpeed's `single_grad_partition`, Megatron-Core's main grads): it lives only while the
    /// step runs, after the activations and logits are freed.
    pub step_copy: f64,
    /// Bytes of this GPU's share kept off the GPU by optimizer offload (host memory or the
    /// optimizer node); not part of the peak.
    pub host: f64,
}

impl MemoryUse {
    /// The most held at once: what stays all step, with the activations and logits of the
    /// passes or the optimizer step's gradient copy, whichever is larger.
    pub fn peak(&self) -> f64 {
        self.peak_holding(self.activations)
    }

    /// [`MemoryUse::peak`] with `activations` bytes of activations instead.
    pub fn peak_holding(&self, activations: f64) -> f64 {
        let passes = activations + self.logits;
        self.resident() + self.error_feedback + passes.max(self.step_copy)
    }

    /// What a GPU holds all step, error feedback aside.
    fn resident(&self) -> f64 {
        self.weights + self.gradients + self.optimizer + self.buffers + self.outer
    }

    /// What the forward and backward passes hold on top: activations and logits.
    fn passes(&self) -> f64 {
        self.activations + self.logits
    }

    /// Whether the optimizer step, not the passes, holds the most.
    fn step_is_peak(&self) -> bool {
        self.step_copy > self.passes()
    }

    /// The report's `memory` against `capacity` bytes, its parts as held at the peak (the
    /// gradient copy with the gradients when the optimizer step is the peak, the activations and
    /// logits otherwise); the stage, the largest micro-batch and the activation plan are the
    /// caller's to fill.
    pub fn report(&self, capacity: u64) -> Memory {
        let peak = self.peak().round() as u64;
        let bytes = |b: f64| b.round() as u64;
        let step = self.step_is_peak();
        let passes = |b: f64| if step { 0 } else { bytes(b) };
        Memory {
            peak_bytes_per_gpu: peak,
            capacity_bytes: capacity,
            fits: peak <= capacity,
            breakdown_bytes: MemoryParts {
                weights: bytes(self.weights),
                gradients: bytes(self.gradients + if step { self.step_copy } else { 0.0 }),
                optimizer: bytes(self.optimizer),
                activations: passes(self.activations),
                logits: passes(self.logits),
                buffers: bytes(self.buffers),
                outer_optimizer: bytes(self.outer),
                error_feedback: bytes(self.error_feedback),
            },
            stage: 0,
            largest_micro_batch: None,
            offloaded_bytes_per_gpu: (self.host > 0.0).then(|| bytes(self.host)),
            activation_plan: None,
        }
    }
}

/// Activation bytes of one layer for one micro-batch on one tensor-parallel rank, kept for the
/// backward pass.
pub fn layer_activations(s: &TrainingConfig) -> f64 {
    let m = &s.model;
    layer_activations_tokens(s, (s.micro_batch * m.seq_len) as f64 / s.cp as f64)
}

/// [`layer_activations`] for a micro-batch of `t` tokens on each context-parallel rank.
pub fn layer_activations_tokens(s: &TrainingConfig, t: f64) -> f64 {
    let m = &s.model;
    let h = m.hidden as f64;
    let tp = s.tp as f64;
    // Split by tensor parallelism: Q, K, V, the attention output, the MLP intermediates.
    let split = 2.0 * t * m.qkv_width() as f64
        + 2.0 * t * h
        + 2.0 * t * m.up_width() as f64
        + 2.0 * t * m.ffn as f64;
    // Split only by sequence parallelism: QKV and MLP inputs, layer-norm inputs, and with
    // dropout its two one-byte masks.
    let masks = if s.dropout { 2.0 * t * h } else { 0.0 };
    let replicated = 2.0 * t * h + 2.0 * t * h + 4.0 * t * h + masks;
    let replicated = if s.sequence_parallel {
        replicated / tp
    } else {
        replicated
    };
    // Unfused attention keeps its softmax output, dropout mask and dropped probabilities
    // (5 a s^2 b bytes in 16-bit, split over the tensor-parallel heads; without dropout only the
    // softmax output, 2 a s^2 b) unless selective recomputation recomputes them.
    let per_score = if s.dropout { 5.0 } else { 2.0 };
    let scores = if s.unfused_attention && !s.recomputes_scores() {
        per_score * (s.micro_batch * m.heads) as f64 * (m.seq_len / s.cp) as f64 * m.seq_len as f64
            / tp
    } else {
        0.0
    };
    (split / tp + replicated) * m.dtype.bytes() / 2.0 + scores * m.dtype.bytes() / 2.0
}

/// Bytes of a layer's input for a micro-batch of `t` tokens on one GPU (split by sequence
/// parallelism): what recomputation keeps to rebuild the rest from.
fn layer_input(s: &TrainingConfig, t: f64) -> f64 {
    let input = t * s.model.hidden as f64 * s.model.dtype.bytes();
    if s.sequence_parallel {
        input / s.tp as f64
    } else {
        input
    }
}

/// Memory of the GPU of pipeline stage `stage`. With pipeline parallelism a stage keeps the
/// activations of the micro-batches in flight under its schedule (1F1B: pp - s for stage s;
/// GPipe: all of them; interleaved: its warm-up plus one, per model chunk of L / (pp v) layers),
/// the first stage holds the embedding and the last the output projection and the logits.
pub fn stage_memory(s: &TrainingConfig, stage: u32) -> MemoryUse {
    if s.recompute == Recompute::Adaptive {
        let plan = activation_plan::plan(s);
        stage_memory_as(s, stage, Recompute::Adaptive, Some(&plan))
    } else {
        stage_memory_as(s, stage, s.recompute, None)
    }
}

/// [`stage_memory`] under recomputation `recompute` (adaptive with `plan`, which it needs).
pub fn stage_memory_as(
    s: &TrainingConfig,
    stage: u32,
    recompute: Recompute,
    plan: Option<&ActivationPlan>,
) -> MemoryUse {
    let m = &s.model;
    let params = s.stage_params(stage);
    // ZeRO shards over the ranks that reduce together: data x context parallel (a site's, under
    // local SGD).
    let dp = s.gradient_ranks() as f64;
    let t = (s.micro_batch * m.seq_len) as f64 / s.cp as f64;
    let layer = layer_activations(s);
    // Layers of the stage's largest chunk: the in-flight micro-batches hold one chunk each.
    let per_chunk = (0..s.virtual_stages)
        .map(|c| s.chunk_layers(c * s.pp + stage).len())
        .max()
        .unwrap_or(0) as f64;
    let total = s.accumulation * s.virtual_stages;
    let in_flight = if s.pp > 1 {
        (schedule::warmup(s.schedule, s.pp, s.virtual_stages, s.accumulation, stage) + 1).min(total)
    } else {
        1
    } as f64;
    let layers_held = in_flight * per_chunk;
    // Micro-batches of unlike shapes: the largest the stage keeps in flight
    // (`sequences/recompute.rs`).
    let packed = s.sequences.as_ref().map(|q| {
        let held = super::sequences::stage_activations(s, q, stage, per_chunk, in_flight as usize);
        let tokens = super::sequences::largest_tokens(q) as f64 / s.cp as f64;
        (held, tokens)
    });
    let t = packed.map_or(t, |(_, tokens)| tokens);
    let activations = match recompute {
        _ if packed.is_some() => packed.map_or(0.0, |(held, _)| held),
        Recompute::None | Recompute::Selective => layers_held * layer,
        Recompute::Adaptive => {
            let plan = plan.expect("adaptive recomputation has a plan");
            layers_held * plan.stored_bytes() + if plan.drops() { layer } else { 0.0 }
        }
        Recompute::Full => {
            // `recompute_layers`: the chunk's first layers keep their inputs, the rest all.
            let rerun = s
                .recompute_layers
                .map_or(per_chunk, |n| per_chunk.min(n as f64));
            in_flight * (rerun * layer_input(s, t) + (per_chunk - rerun) * layer) + layer
        }
        Recompute::Op => {
            layers_held * super::op_checkpoint::most_saved_bytes(s, layer_input(s, t)) + layer
        }
    };
    let last = stage == s.pp - 1;
    // ZeRO-3 keeps 1/dp of the weights, plus the gathered layer in use and the one prefetched
    // (gathered on demand: the matrices of `on_demand::most_gathered_params`), and one layer's
    // unsharded gradients before their reduce-scatter.
    // The largest layer: the last, or the last with attention when the last ones skip it.
    let largest_layers = [m.layers - 1, m.attention_layers() - 1];
    let layer_params = largest_layers
        .iter()
        .map(|&l| s.layer_params_here(l))
        .fold(0.0, f64::max);
    let gathered = if s.param_gather == ParamGather::OnDemand {
        let full = recompute == Recompute::Full;
        largest_layers
            .iter()
            .map(|&l| most_gathered_params(s, l, full))
            .fold(0.0, f64::max)
    } else {
        2.0 * layer_params
    };
    let g = s.grad_bytes;
    let (weights, gradients) = match s.zero {
        3 => (
            params * m.dtype.bytes() / dp + gathered * m.dtype.bytes(),
            g * params / dp + g * layer_params,
        ),
        2 => (params * m.dtype.bytes(), g * params / dp),
        _ => (params * m.dtype.bytes(), g * params),
    };
    // 16-bit gradients: the optimizer's fp32 copy of its shard for the step, sharded like the
    // optimizer states.
    let fp32_shard = if g < 4.0 {
        4.0 * params / if s.zero >= 1 { dp } else { 1.0 }
    } else {
        0.0
    };
    let optimizer = if s.zero >= 1 {
        s.optimizer.state_bytes(s, stage) / dp
    } else {
        s.optimizer.state_bytes(s, stage)
    };
    // Optimizer offload moves the states, and the gradient shard where ZeRO shards it, off the
    // GPU; the in-network optimizer takes the weights' shard as well.
    let (weights, gradients, optimizer, host) = match s.optimizer_offload {
        OptimizerOffload::Gpu => (weights, gradients, optimizer, 0.0),
        OptimizerOffload::Host => {
            let kept = match s.zero {
                3 => g * layer_params,
                2 => 0.0,
                _ => gradients,
            };
            (weights, kept, 0.0, optimizer + gradients - kept)
        }
        OptimizerOffload::Network => {
            let gathered = gathered * m.dtype.bytes();
            let kept = g * layer_params;
            (
                gathered,
                kept,
                0.0,
                optimizer + gradients - kept + weights - gathered,
            )
        }
    };
    let stash = if s.schedule == Schedule::Async1F1B {
        (in_flight - 1.0) * params * m.dtype.bytes()
    } else {
        0.0
    };
    MemoryUse {
        weights: weights + stash,
        gradients,
        optimizer,
        activations,
        logits: if last {
            6.0 * t * m.vocab as f64 / s.tp as f64
        } else {
            0.0
        },
        buffers: if s.dp > 1 { 2.0 * BUCKET_BYTES } else { 0.0 },
        // Sharded like the optimizer states (DiLoCoX keeps the outer optimizer distributed).
        outer: match (s.local_steps > 1, s.zero >= 1) {
            (false, _) => 0.0,
            (true, true) => 8.0 * params / dp,
            (true, false) => 8.0 * params,
        },
        error_feedback: error_feedback(s, stage),
        step_copy: match s.optimizer_offload {
            OptimizerOffload::Gpu => fp32_shard,
            _ => 0.0,
        },
        host,
    }
}

/// Error-feedback buffers of stage `stage` (`error_feedback` in `[compression.pipeline]`): one
/// fp32 buffer of a message's size (a micro-batch's activations or their gradient, the GPU's 1/tp
/// share) for every message it sends in a step: forward from each chunk but the model's last,
/// backward from each but its first, for each of the step's micro-batches. The error of a
/// message is carried to the same micro-batch's message at the next step (Clapping's lazy
/// sampling reuses a batch's samples, so no buffer per sample of the data set). 0 without.
pub fn error_feedback(s: &TrainingConfig, stage: u32) -> f64 {
    if !s.compression.pipeline_error_feedback || s.compression.pipeline.is_none() || s.pp == 1 {
        return 0.0;
    }
    let m = &s.model;
    let t = (s.micro_batch * m.seq_len) as f64 / s.cp as f64;
    let message = 4.0 * t * m.hidden as f64 / s.tp as f64;
    let chunks = s.pp * s.virtual_stages;
    let sends: u32 = (0..s.virtual_stages)
        .map(|c| c * s.pp + stage)
        .map(|chunk| u32::from(chunk + 1 < chunks) + u32::from(chunk > 0))
        .sum();
    sends as f64 * s.accumulation as f64 * message
}

/// The largest micro-batch whose peak memory fits in `capacity` bytes on every stage, the layout
/// otherwise unchanged (the same micro-batches in flight): activations, logits and error-feedback
/// buffers grow in proportion to the micro-batch, the rest does not. 0 when even the model state does not fit.
pub fn largest_micro_batch(s: &TrainingConfig, capacity: f64) -> u64 {
    (0..s.pp)
        .map(|st| {
            let mem = stage_memory(s, st);
            let b = s.micro_batch as f64;
            let (passes, feedback) = (mem.passes() / b, mem.error_feedback / b);
            // The passes at b micro-batch rows, and the optimizer step beside b rows' feedback.
            let room = capacity - mem.resident();
            let in_passes = room / (passes + feedback);
            let in_step = if feedback > 0.0 {
                (room - mem.step_copy) / feedback
            } else if room >= mem.step_copy {
                f64::INFINITY
            } else {
                0.0
            };
            in_passes.min(in_step).max(0.0).floor() as u64
        })
        .min()
        .expect("at least one stage")
}

/// The stage that needs the most memory, and its memory.
pub fn memory(s: &TrainingConfig) -> (u32, MemoryUse) {
    (0..s.pp)
        .map(|st| (st, stage_memory(s, st)))
        .max_by(|a, b| a.1.peak().total_cmp(&b.1.peak()))
        .expect("at least one stage")
}
