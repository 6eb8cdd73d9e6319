//! Training frameworks as data: what each one turns on by itself where a scenario (or a
//! published case) does not say (`[parallel] framework` and `framework_version`).
//!
//! A scenario states its parallel degrees, but rarely the switches a framework turns on by
//! itself; they decide whether a layout fits (a sharded optimizer) and what its activations cost
//! (sequence parallelism). Only defaults written in the framework's own code or recipes are
//! listed here, one table per framework and era, each with its source. The validation reads a
//! case's framework from its `source` ([`Framework::of`]); frameworks whose defaults match the
//! simulator's (LLM Foundry, current DeepSpeed) change nothing.

use super::policy::ContextAlgorithm;
use crate::hw::attention_kernel::AttentionKernel;
use serde::Deserialize;

/// A framework a scenario may name (`[parallel] framework`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrameworkName {
    Megatron,
    Nemo,
    Deepspeed,
    Torchtitan,
    FmsFsdp,
}

impl FrameworkName {
    pub fn name(self) -> &'static str {
        match self {
            FrameworkName::Megatron => "megatron",
            FrameworkName::Nemo => "nemo",
            FrameworkName::Deepspeed => "deepspeed",
            FrameworkName::Torchtitan => "torchtitan",
            FrameworkName::FmsFsdp => "fms-fsdp",
        }
    }

    /// The framework's table at release `version` (major, minor; the newest when `None`):
    /// Megatron-LM before 3.0 is its 2021 code, 3.x its 2022 code, later Megatron-Core;
    /// DeepSpeed before 0.4 its first ZeRO-3 release.
    pub fn at(self, version: Option<(u32, u32)>) -> Framework {
        match (self, version) {
            (FrameworkName::Megatron, Some(v)) if v < (3, 0) => Framework::MegatronLm2021,
            (FrameworkName::Megatron, Some(v)) if v < (4, 0) => Framework::MegatronLm2022,
            (FrameworkName::Megatron, _) => Framework::MegatronCore,
            (FrameworkName::Nemo, _) => Framework::NeMo,
            (FrameworkName::Deepspeed, Some(v)) if v < (0, 4) => Framework::DeepSpeed2021,
            (FrameworkName::Deepspeed, _) => Framework::DeepSpeed,
            (FrameworkName::Torchtitan, _) => Framework::Torchtitan,
            (FrameworkName::FmsFsdp, _) => Framework::FmsFsdp,
        }
    }
}

/// A framework with defaults worth applying.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framework {
    /// NVIDIA NeMo (2.0 recipes, and the DGX Cloud benchmarking recipes built on them).
    NeMo,
    /// Megatron-LM as its SC21 paper ran it (Narayanan et al., spring 2021): before
    /// FlashAttention, before its distributed optimizer, tensor-parallel collectives blocking.
    MegatronLm2021,
    /// Megatron-LM as Korthikanti et al. 2022 ran it (v3.0): as in 2021, but the input-gradient
    /// collective of each column-split GEMM runs beside its weight-gradient GEMM.
    MegatronLm2022,
    /// torchtitan (PyTorch's FSDP2 with `torch.distributed.pipelining`).
    Torchtitan,
    /// DeepSpeed as a 2021 source ran it (the ZeRO-3 baseline of Narayanan et al. SC21, on
    /// Megatron-LM's model code): v0.3, the first release of ZeRO stage 3.
    DeepSpeed2021,
    /// Megatron-LM with Megatron-Core (2023 on): as in 2022 for the switches here; its
    /// distributed optimizer and sequence parallelism stay opt-in (`--use-distributed-optimizer`,
    /// `--sequence-parallel`).
    MegatronCore,
    /// DeepSpeed after 0.3: its defaults here are the simulator's (prefetched ZeRO-3 gathers, fp32
    /// gradient reduction).
    DeepSpeed,
    /// IBM's foundation-model-stack FSDP trainer (`fms-fsdp`): PyTorch FSDP over its own Llama
    /// code, in bf16 with bf16 gradient reduction (`MixedPrecision` `bfSixteen`).
    FmsFsdp,
}

impl Framework {
    /// The framework a case ran on, if it is one with defaults here: from its source, or from
    /// its sharding when that names DeepSpeed (a 2021 source: DeepSpeed v0.3).
    pub fn of(source: &str, sharding: &str) -> Option<Framework> {
        let s = source.to_lowercase();
        if sharding.to_lowercase().contains("deepspeed") {
            let of_2021 = s.contains("sc21") || s.contains("2021") || s.contains("arxiv:21");
            of_2021.then_some(Framework::DeepSpeed2021)
        } else if s.contains("nemo") || s.contains("dgx cloud benchmarking") || s.contains("dgxc") {
            Some(Framework::NeMo)
        } else if s.contains("narayanan et al") {
            Some(Framework::MegatronLm2021)
        } else if s.contains("korthikanti et al") {
            Some(Framework::MegatronLm2022)
        } else if s.contains("fms-fsdp") {
            Some(Framework::FmsFsdp)
        } else if s.contains("torchtitan") {
            Some(Framework::Torchtitan)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Framework::NeMo => "NeMo",
            Framework::MegatronLm2021 => "Megatron-LM (2021)",
            Framework::MegatronLm2022 => "Megatron-LM (2022)",
            Framework::DeepSpeed2021 => "DeepSpeed (v0.3, 2021)",
            Framework::Torchtitan => "torchtitan",
            Framework::MegatronCore => "Megatron-LM (Megatron-Core)",
            Framework::DeepSpeed => "DeepSpeed",
            Framework::FmsFsdp => "fms-fsdp",
        }
    }

    /// The attention kernel the framework ran when the case names none, and why: Megatron-LM
    /// materialised the scores (batched GEMMs around its fused scale-mask-softmax and dropout;
    /// FlashAttention was published in May 2022 and joined Megatron-LM later), and Korthikanti et
    /// al.'s selective recomputation exists to recompute exactly those score matrices. torchtitan
    /// calls PyTorch's `scaled_dot_product_attention`, whose flash backend is FlashAttention 2;
    /// its cuDNN backend was made opt-in after the 2.5 release (pytorch/pytorch#138522), and a
    /// December 2024 nightly still chose the flash backend on H100 (pytorch/pytorch#142132).
    pub fn attention_kernel(self) -> Option<(AttentionKernel, &'static str)> {
        match self {
            Framework::NeMo | Framework::MegatronCore | Framework::DeepSpeed => None,
            Framework::Torchtitan | Framework::FmsFsdp => Some((
                AttentionKernel::FlashAttention2,
                "PyTorch's scaled_dot_product_attention, whose flash backend is FlashAttention 2 \
                 (its cuDNN backend opt-in since PyTorch 2.5.1)",
            )),
            Framework::MegatronLm2021 | Framework::MegatronLm2022 | Framework::DeepSpeed2021 => {
                Some((
                    AttentionKernel::Unfused,
                    "scores materialised around a fused softmax, before FlashAttention",
                ))
            }
        }
    }

    /// What "selective" activation checkpointing means in the framework: Korthikanti et al.'s
    /// (recompute the attention scores) everywhere but torchtitan, whose Llama configurations set
    /// `selective_ac_option = "op"` (its per-operator policy, `recompute = "op"`).
    pub fn selective_recompute(self) -> &'static str {
        match self {
            Framework::Torchtitan => "op",
            _ => "selective",
        }
    }

    /// Whether the layer's elementwise operations run as eager PyTorch's separate kernels for a
    /// case whose techniques read `techniques`: torchtitan's model code runs eager unless
    /// `torch.compile` is named (its configurations default to `compile = false`), and so does
    /// fms-fsdp's (`use_torch_compile` defaults to false).
    pub fn runs_eager(self, techniques: &str) -> bool {
        matches!(self, Framework::Torchtitan | Framework::FmsFsdp)
            && !techniques.to_lowercase().contains("compile")
    }

    /// Whether "selective" activation checkpointing means whole blocks checkpointed, but only a
    /// fraction of them: fms-fsdp's `selective_checkpointing` (`policies/ac_handler.py`; default
    /// 1, every block), `recompute = "full"` with `recompute_layers`.
    pub fn selective_checkpoints_blocks(self) -> bool {
        matches!(self, Framework::FmsFsdp)
    }

    /// Micro-batches a step's local batch is split into under pipeline parallelism of `pp`
    /// stages when the case does not say: torchtitan's `pipeline_parallel_microbatches` defaults
    /// to the number of stages.
    pub fn pipeline_micro_batches(self, pp: u32) -> Option<u32> {
        matches!(self, Framework::Torchtitan).then_some(pp)
    }

    /// Whether tensor-parallel collectives overlap their GEMMs (`parallel.tp_comm_overlap`) for
    /// a case whose techniques read `techniques`: torchtitan's AsyncTP, when named, decomposes
    /// each all-gather and reduce-scatter into steps run beside the GEMM's chunks.
    pub fn tp_comm_overlap(self, techniques: &str) -> bool {
        matches!(self, Framework::Torchtitan) && techniques.to_lowercase().contains("asynctp")
    }

    /// Whether the optimizer states are sharded over the data-parallel ranks by default (ZeRO-1,
    /// Megatron-Core's distributed optimizer): NeMo's recipes build their optimizer with
    /// `use_distributed_optimizer=True`.
    pub fn distributed_optimizer(self) -> bool {
        matches!(self, Framework::NeMo)
    }

    /// Whether tensor-parallel layers run with sequence parallelism by default: NeMo's recipes set
    /// `sequence_parallel=True` whenever tensor parallelism is on, and torchtitan's tensor-parallel
    /// plan shards the norms over the sequence (`SequenceParallel()` on each block's norms).
    pub fn sequence_parallel(self) -> bool {
        matches!(self, Framework::NeMo | Framework::Torchtitan)
    }

    /// ZeRO-3's parameter gathering (`parallel.param_gather`) when the framework's differs from
    /// the simulator's prefetching: DeepSpeed v0.3 gathered each parameter when its module was
    /// about to run, after `torch.cuda.synchronize()`, with the list form of
    /// `torch.distributed.all_gather`, and reduce-scattered gradients per parameter from lists
    /// (deepspeed/runtime/zero/partition_parameters.py of that release).
    pub fn param_gather(self) -> Option<&'static str> {
        match self {
            Framework::DeepSpeed2021 => Some("on-demand"),
            _ => None,
        }
    }

    /// Whether the backward's input-gradient collective of each column-split GEMM runs beside
    /// its weight-gradient GEMM (`parallel.tp_dgrad_overlap`): Megatron-LM's
    /// `LinearWithGradAccumulationAndAsyncCommunication` (v3.0, 2022, and Megatron-Core under
    /// NeMo) starts the all-reduce, or with sequence parallelism the reduce-scatter, of the input
    /// gradient asynchronously and computes the weight gradient meanwhile.
    pub fn tp_dgrad_overlap(self) -> bool {
        matches!(
            self,
            Framework::NeMo | Framework::MegatronLm2022 | Framework::MegatronCore
        )
    }

    /// Whether FSDP keeps the gathered parameters for the whole step when pipeline parallelism
    /// is on: torchtitan does not reshard after forward with PP ("to avoid per-microbatch
    /// all-gathers, which can be expensive and non-overlapped", `apply_fsdp`), and
    /// `torch.distributed.pipelining` turns gradient synchronisation off for every micro-batch's
    /// backward but the last. That is ZeRO-1's traffic and memory: whole parameters and
    /// gradients during the step, optimizer states sharded.
    pub fn fsdp_keeps_params_with_pp(self) -> bool {
        matches!(self, Framework::Torchtitan)
    }

    /// How fp8 GEMMs get their operands: Transformer Engine's cached weight casts under NeMo and
    /// Megatron-Core (their fp8 recipes run through TE's `Linear` layers, which Megatron-Core
    /// calls with `is_first_microbatch`), torchao's casts at every call under torchtitan.
    pub fn fp8_casts(self) -> Option<crate::workload::training::policy::Fp8Casts> {
        use crate::workload::training::policy::Fp8Casts;
        match self {
            Framework::NeMo | Framework::MegatronCore => Some(Fp8Casts::TransformerEngine),
            Framework::Torchtitan => Some(Fp8Casts::PerCall),
            _ => None,
        }
    }

    /// Whether gradients are kept and reduced in the model's 16-bit format rather than fp32:
    /// DeepSpeed's fp16 engine reduces the fp16 gradients (its communication type defaults to
    /// the model's); NeMo's performance recipes, which its published tables and the DGX Cloud
    /// benchmarks run, set `plugins.grad_reduce_in_fp32 = False` (each model's
    /// `pretrain_performance_optimizations`, and the benchmarking scripts for fp8).
    pub fn half_precision_gradients(self) -> bool {
        matches!(
            self,
            Framework::DeepSpeed2021 | Framework::NeMo | Framework::FmsFsdp
        )
    }

    /// Whether the framework's models train with dropout (and so keep its masks): not NeMo's
    /// (`LlamaConfig`, `NemotronConfig`, `GPTConfig175B` set `hidden_dropout` and
    /// `attention_dropout` to 0; its smaller GPT configs keep 0.1, which only their memory would
    /// show) nor torchtitan's (its Llama has no dropout layer); Megatron-LM's `--hidden-dropout`
    /// and `--attention-dropout` default to 0.1, as DeepSpeed's Megatron models inherit. fms's
    /// Llama's `p_dropout` defaults to 0.
    pub fn trains_with_dropout(self) -> bool {
        !matches!(
            self,
            Framework::NeMo | Framework::Torchtitan | Framework::FmsFsdp
        )
    }

    /// How context parallelism exchanges keys and values where the case does not say, when the
    /// framework's way is not the simulator's ring, with the assumption to report: torchtitan's
    /// `context_parallel_rotate_method` defaults to "allgather", PyTorch's context parallelism's
    /// own default (`_cp_options.rotate_method = ALL_GATHER`); Megatron-Core and NeMo pass
    /// blocks around a ring (Transformer Engine's `cp_comm_type = "p2p"`).
    pub fn context_algorithm(self) -> Option<(ContextAlgorithm, String)> {
        matches!(self, Framework::Torchtitan).then(|| {
            let why = format!(
                "keys and values all-gathered for context parallelism (not stated; {}'s \
                 context_parallel_rotate_method = \"allgather\", PyTorch's default)",
                self.name()
            );
            (ContextAlgorithm::AllGather, why)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_framework_from_the_source() {
        assert_eq!(
            Framework::of(
                "NVIDIA DGX Cloud benchmarking recipes (dgxc-benchmarking README 'Expected Performance')",
                ""
            ),
            Some(Framework::NeMo)
        );
        assert_eq!(
            Framework::of("NeMo Megatron GPT3 175B recipe", ""),
            Some(Framework::NeMo)
        );
        let megatron = Framework::of("Narayanan et al., SC21 (arXiv:2104.04473)", "").unwrap();
        assert!(!megatron.distributed_optimizer());
        assert!(!megatron.tp_dgrad_overlap());
        assert_eq!(
            megatron.attention_kernel().map(|(k, _)| k),
            Some(AttentionKernel::Unfused)
        );
        let megatron_2022 = Framework::of("Korthikanti et al. 2022", "").unwrap();
        assert_eq!(megatron_2022, Framework::MegatronLm2022);
        assert!(megatron_2022.tp_dgrad_overlap());
        let titan = Framework::of("pytorch/torchtitan benchmarks", "").unwrap();
        assert!(titan.fsdp_keeps_params_with_pp() && !titan.distributed_optimizer());
        assert_eq!(titan.selective_recompute(), "op");
        assert!(titan.runs_eager("BF16") && !titan.runs_eager("Float8 + compile + AsyncTP"));
        assert!(titan.tp_comm_overlap("Float8 + compile + AsyncTP") && !titan.tp_comm_overlap(""));
        assert_eq!(titan.pipeline_micro_batches(8), Some(8));
        assert_eq!(megatron.pipeline_micro_batches(8), None);
        assert!(!megatron.runs_eager("BF16"));
        assert_eq!(megatron.selective_recompute(), "selective");
        assert_eq!(Framework::of("mosaicml/llm-foundry README", ""), None);
        let fms = Framework::of("foundation-model-stack/fms-fsdp README.md", "FSDP").unwrap();
        assert!(fms.selective_checkpoints_blocks() && !titan.selective_checkpoints_blocks());
        assert!(fms.runs_eager("bf16, eager") && !fms.runs_eager("bf16 + torch.compile"));
        assert!(fms.half_precision_gradients() && !fms.trains_with_dropout());
        // The sharding names the framework of a paper's baseline, and the source its era.
        let deepspeed = Framework::of(
            "Narayanan et al., SC21 (arXiv:2104.04473)",
            "ZeRO-3 (DeepSpeed), no model parallelism",
        )
        .unwrap();
        assert_eq!(deepspeed, Framework::DeepSpeed2021);
        assert_eq!(deepspeed.param_gather(), Some("on-demand"));
        assert!(deepspeed.half_precision_gradients());
        assert!(Framework::NeMo.half_precision_gradients());
        assert!(!Framework::MegatronCore.half_precision_gradients());
        assert_eq!(Framework::of("a 2024 report", "DeepSpeed ZeRO-3"), None);
    }

    #[test]
    fn a_name_and_release_pick_the_table() {
        let at = |n: FrameworkName, v: Option<(u32, u32)>| n.at(v);
        assert_eq!(
            at(FrameworkName::Megatron, Some((2, 5))),
            Framework::MegatronLm2021
        );
        assert_eq!(
            at(FrameworkName::Megatron, Some((3, 0))),
            Framework::MegatronLm2022
        );
        assert_eq!(at(FrameworkName::Megatron, None), Framework::MegatronCore);
        assert_eq!(
            at(FrameworkName::Deepspeed, Some((0, 3))),
            Framework::DeepSpeed2021
        );
        assert_eq!(
            at(FrameworkName::Deepspeed, Some((0, 16))),
            Framework::DeepSpeed
        );
        assert_eq!(at(FrameworkName::Nemo, None), Framework::NeMo);
        assert_eq!(at(FrameworkName::Torchtitan, None), Framework::Torchtitan);
        assert_eq!(at(FrameworkName::FmsFsdp, None), Framework::FmsFsdp);
    }
}
