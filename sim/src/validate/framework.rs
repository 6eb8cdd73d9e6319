//! The training framework a published case ran on, read from its `source`, and that framework's
//! documented defaults for the choices the case leaves unstated.
//!
//! A case states its parallel degrees, but rarely the switches a framework turns on by itself;
//! they decide whether a layout fits (a sharded optimizer) and what its activations cost
//! (sequence parallelism). Only defaults written in the framework's own recipes are listed here,
//! and each applies to every case of that framework, never to one case. Frameworks whose
//! defaults match the simulator's (Megatron-LM before its distributed optimizer, DeepSpeed,
//! LLM Foundry, torchtitan: each of their cases states its sharding) have no entry.

/// A framework with defaults worth applying.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framework {
    /// NVIDIA NeMo (2.0 recipes, and the DGX Cloud benchmarking recipes built on them).
    NeMo,
}

impl Framework {
    /// The framework a source names, if it is one with defaults here.
    pub fn of(source: &str) -> Option<Framework> {
        let s = source.to_lowercase();
        (s.contains("nemo") || s.contains("dgx cloud benchmarking") || s.contains("dgxc"))
            .then_some(Framework::NeMo)
    }

    pub fn name(self) -> &'static str {
        match self {
            Framework::NeMo => "NeMo",
        }
    }

    /// Whether the optimizer states are sharded over the data-parallel ranks by default (ZeRO-1,
    /// Megatron-Core's distributed optimizer): NeMo's recipes build their optimizer with
    /// `use_distributed_optimizer=True`.
    pub fn distributed_optimizer(self) -> bool {
        match self {
            Framework::NeMo => true,
        }
    }

    /// Whether tensor-parallel layers run with sequence parallelism by default: NeMo's recipes set
    /// `sequence_parallel=True` whenever tensor parallelism is on.
    pub fn sequence_parallel(self) -> bool {
        match self {
            Framework::NeMo => true,
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
        assert_eq!(
            Framework::of("Narayanan et al., SC21 (arXiv:2104.04473)"),
            None,
            "Megatron-LM's paper predates its distributed optimizer"
        );
        assert_eq!(Framework::of("pytorch/torchtitan benchmarks"), None);
    }
}
