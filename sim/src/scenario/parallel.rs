//! `[parallel]`: how a training step is split over GPUs (Megatron-LM's names).

use super::quantity::Bytes;
use crate::workload::training::policy::{
    ContextAlgorithm, Optimizer, OptimizerOffload, ParamGather, Recompute, Schedule,
};
use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParallelSection {
    /// The training framework whose defaults fill what the section leaves out.
    pub framework: Option<crate::workload::training::framework::FrameworkName>,
    /// The framework's release ("3.0"), where its defaults changed between releases.
    pub framework_version: Option<String>,
    pub tp: Option<u32>,
    pub pp: Option<u32>,
    pub dp: Option<u32>,
    pub cp: Option<u32>,
    /// How context-parallel ranks share keys and values: "ring" or "all-gather".
    pub cp_algorithm: Option<ContextAlgorithm>,
    pub ep: Option<u32>,
    pub micro_batch: Option<u32>,
    pub global_batch: Option<u32>,
    pub schedule: Option<Schedule>,
    pub virtual_stages: Option<u32>,
    pub sequence_parallel: Option<bool>,
    pub recompute: Option<Recompute>,
    /// Full recomputation of only the first this many layers of each pipeline chunk, the others
    /// keeping their activations (Megatron-LM's `--recompute-method block`).
    pub recompute_layers: Option<u32>,
    pub zero: Option<u8>,
    /// Rank order of the parallel dimensions, innermost first, e.g. "tp-cp-dp-pp" (Megatron-LM's).
    pub order: Option<String>,
    /// Optimizer: "adam" (fp32 moments), "adam-8bit" (8-bit moments), "adafactor" (factored
    /// second moment, no first moment) or "galore" (Adam on a low-rank projection of each weight
    /// matrix's gradient).
    pub optimizer: Option<Optimizer>,
    /// GaLore: rank of the gradient projection (default: hidden / 4, the paper's 7B and 1B ratio).
    pub galore_rank: Option<u32>,
    /// GaLore: optimizer steps between two SVDs that refresh the projection (default 200).
    pub galore_interval: Option<u32>,
    /// Where the optimizer states live and the optimizer step runs: "gpu" (default), "host"
    /// (ZeRO-Offload: states in host memory, the step on the CPUs, gradients down and weights up
    /// over PCIe) or "network" (LuWu: an optimizer node beside the switch holds the states and
    /// the parameters and updates them as the gradients stream in; ZeRO-3 only).
    pub optimizer_offload: Option<OptimizerOffload>,
    /// Format of the gradients kept and reduced across data-parallel ranks: "fp32" (default,
    /// Megatron-LM's) or the model's 16-bit format (DeepSpeed's fp16/bf16 engines, GPT-NeoX), the
    /// optimizer then converting its shard to fp32 for the step.
    pub grad_dtype: Option<crate::hw::dtype::Dtype>,
    /// ZeRO-3: how each layer's parameters are gathered before it runs (`prefetch`, the default,
    /// or `on-demand`; see [`ParamGather`]).
    pub param_gather: Option<ParamGather>,
    /// fp8 runs: "per-call" (torchao) or "transformer-engine" (weights cast once a step).
    pub fp8_casts: Option<crate::workload::training::policy::Fp8Casts>,
    /// Memory per GPU that adaptive recomputation must fit within (default: the GPU's memory).
    pub memory_cap: Option<Bytes>,
    /// Overlap tensor-parallel collectives with the neighbouring GEMMs (as TransformerEngine's
    /// communication overlap does) instead of blocking the compute stream.
    pub tp_comm_overlap: Option<bool>,
    /// Run the input-gradient collective of each column-split GEMM's backward beside its
    /// weight-gradient GEMM (Megatron-LM's asynchronous tensor-parallel all-reduce, and its
    /// reduce-scatter under sequence parallelism), the other tensor-parallel collectives still
    /// blocking.
    pub tp_dgrad_overlap: Option<bool>,
    /// Local SGD across sites (DiLoCo): optimizer steps each site takes between two outer
    /// synchronisations of the whole model across sites (1 = every step, fully synchronous).
    pub local_steps: Option<u32>,
    /// Local SGD: the outer synchronisation runs beside the next `local_steps` steps, its result
    /// applied one round late (DiLoCoX's one-step-delayed overlap), instead of blocking them.
    pub outer_overlap: Option<bool>,
    /// Diffusion: Ulysses sequence-parallel degree (all-to-all of heads and tokens).
    pub ulysses: Option<u32>,
    /// Diffusion: ring-attention degree (keys and values passed around a ring).
    pub ring: Option<u32>,
    /// Diffusion: PipeFusion stages (layers split over GPUs, the latent in patches).
    pub pipefusion: Option<u32>,
    /// Diffusion: patches of the latent PipeFusion pipelines (default: the stage count).
    pub pipefusion_patches: Option<u32>,
    /// Diffusion: DSP degree (spatial-temporal models: the split switches between frames and
    /// positions).
    pub dsp: Option<u32>,
    /// Diffusion: latent parallelism degree (regions of the latent denoised apart).
    pub latent: Option<u32>,
    /// Diffusion: tokens a latent region borrows from each neighbour (default 1).
    pub latent_overlap: Option<u32>,
    /// Diffusion: classifier-free-guidance parallel degree (1, or 2: each branch on its own
    /// GPUs).
    pub cfg: Option<u32>,
}

impl ParallelSection {
    /// The keys of diffusion's parallelisms that are set.
    pub fn diffusion_keys(&self) -> Vec<&'static str> {
        [
            (self.ulysses.is_some(), "ulysses"),
            (self.ring.is_some(), "ring"),
            (self.pipefusion.is_some(), "pipefusion"),
            (self.pipefusion_patches.is_some(), "pipefusion_patches"),
            (self.dsp.is_some(), "dsp"),
            (self.latent.is_some(), "latent"),
            (self.latent_overlap.is_some(), "latent_overlap"),
            (self.cfg.is_some(), "cfg"),
        ]
        .into_iter()
        .filter_map(|(set, key)| set.then_some(key))
        .collect()
    }

    /// The keys of training's parallelisms that are set.
    pub fn training_keys(&self) -> Vec<&'static str> {
        [
            (self.framework.is_some(), "framework"),
            (self.framework_version.is_some(), "framework_version"),
            (self.pp.is_some(), "pp"),
            (self.dp.is_some(), "dp"),
            (self.cp.is_some(), "cp"),
            (self.cp_algorithm.is_some(), "cp_algorithm"),
            (self.ep.is_some(), "ep"),
            (self.micro_batch.is_some(), "micro_batch"),
            (self.global_batch.is_some(), "global_batch"),
            (self.schedule.is_some(), "schedule"),
            (self.virtual_stages.is_some(), "virtual_stages"),
            (self.sequence_parallel.is_some(), "sequence_parallel"),
            (self.recompute.is_some(), "recompute"),
            (self.recompute_layers.is_some(), "recompute_layers"),
            (self.zero.is_some(), "zero"),
            (self.order.is_some(), "order"),
            (self.optimizer.is_some(), "optimizer"),
            (self.galore_rank.is_some(), "galore_rank"),
            (self.galore_interval.is_some(), "galore_interval"),
            (self.memory_cap.is_some(), "memory_cap"),
            (self.optimizer_offload.is_some(), "optimizer_offload"),
            (self.grad_dtype.is_some(), "grad_dtype"),
            (self.param_gather.is_some(), "param_gather"),
            (self.fp8_casts.is_some(), "fp8_casts"),
            (self.tp_comm_overlap.is_some(), "tp_comm_overlap"),
            (self.tp_dgrad_overlap.is_some(), "tp_dgrad_overlap"),
            (self.local_steps.is_some(), "local_steps"),
            (self.outer_overlap.is_some(), "outer_overlap"),
        ]
        .into_iter()
        .filter_map(|(set, key)| set.then_some(key))
        .collect()
    }
}
