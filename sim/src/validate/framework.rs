//! The training framework a published case ran on, read from its `source`, and that framework's
//! documented defaults for the choices the case leaves unstated.
//!
//! A case states its parallel degrees, but rarely the switches a framework turns on by itself;
//! they decide whether a layout fits (a sharded optimizer) and what its activations cost
//! (sequence parallelism). Only defaults written in the framework's own recipes are listed here,
//! and each applies to every case of that framework, never to one case. Frameworks whose
//! defaults match the simulator's (DeepSpeed, LLM Foundry, torchtitan: each of their cases states
//! its sharding and attention) have no entry.

/// A framework with defaults worth applying.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framework {
    /// NVIDIA NeMo (2.0 recipes, and the DGX Cloud benchmarking recipes built on them).
    NeMo,
    /// Megatron-LM as its 2021-2022 papers ran it (Narayanan et al. SC21, Korthikanti et al.
    /// 2022): before FlashAttention, and before its distributed optimizer.
    MegatronLm2022,
}

impl Framework {
    /// The framework a source names, if it is one with defaults here.
    pub fn of(source: &str) -> Option<Framework> {
        let s = source.to_lowercase();
        if s.contains("nemo") || s.contains("dgx cloud benchmarking") || s.contains("dgxc") {
            Some(Framework::NeMo)
        } else if s.contains("narayanan et al") || s.contains("korthikanti et al") {
            Some(Framework::MegatronLm2022)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Framework::NeMo => "NeMo",
            Framework::MegatronLm2022 => "Megatron-LM (2021-22)",
        }
    }

    /// The attention kernel the framework ran when the case names none: Megatron-LM materialised
    /// the scores (batched GEMMs around its fused scale-mask-softmax and dropout; FlashAttention
    /// was published in May 2022 and joined Megatron-LM later). Korthikanti et al.'s selective
    /// recomputation exists to recompute exactly those score matrices.
    pub fn attention_kernel(self) -> Option<&'static str> {
        match self {
            Framework::NeMo => None,
            Framework::MegatronLm2022 => Some("unfused"),
        }
    }

    /// Whether the optimizer states are sharded over the data-parallel ranks by default (ZeRO-1,
    /// Megatron-Core's distributed optimizer): NeMo's recipes build their optimizer with
    /// `use_distributed_optimizer=True`.
    pub fn distributed_optimizer(self) -> bool {
        match self {
            Framework::NeMo => true,
            Framework::MegatronLm2022 => false,
        }
    }

    /// Whether tensor-parallel layers run with sequence parallelism by default: NeMo's recipes set
    /// `sequence_parallel=True` whenever tensor parallelism is on.
    pub fn sequence_parallel(self) -> bool {
        match self {
            Framework::NeMo => true,
            Framework::MegatronLm2022 => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_framework_from_the_source() {
        assert_eq!(
            Framework::of(
                "NVIDIA DGX Cloud benchmarking recipes (dgxc-benchmarking README 'Expected Performance')"
            ),
            Some(Framework::NeMo)
        );
        assert_eq!(
            Framework::of("NeMo Megatron GPT3 175B recipe"),
            Some(Framework::NeMo)
        );
        let megatron = Framework::of("Narayanan et al., SC21 (arXiv:2104.04473)").unwrap();
        assert!(!megatron.distributed_optimizer());
        assert_eq!(megatron.attention_kernel(), Some("unfused"));
        assert_eq!(
            Framework::of("Korthikanti et al. 2022"),
            Some(Framework::MegatronLm2022)
        );
        assert_eq!(Framework::of("pytorch/torchtitan benchmarks"), None);
    }
}
