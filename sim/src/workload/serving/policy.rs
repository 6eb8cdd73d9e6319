//! Serving's policies: how an engine schedules its batches, how the router picks a replica,
//! what preemption does, how offloaded weights are used, how a placed fleet spreads the layers.
//! The fleet (`workload::serving`) runs by them; the scenario file's `[serving]` names them.

use serde::Deserialize;

/// How offloaded weights reach the computation (`[serving] weights_offload_mode`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OffloadMode {
    Serial,
    Prefetch,
    Cpu,
}

impl OffloadMode {
    pub fn name(self) -> &'static str {
        match self {
            OffloadMode::Serial => "serial",
            OffloadMode::Prefetch => "prefetch",
            OffloadMode::Cpu => "cpu",
        }
    }
}

/// How a placed fleet spreads the model's layers over its servers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementMethod {
    /// The placement of greatest max-flow the search finds (Helix).
    MaxFlow,
    /// Equal stages, each server on the weakest stage (SWARM parallelism).
    Swarm,
    /// Pipelines of one GPU type each.
    SeparatePipelines,
}

impl PlacementMethod {
    pub const ALL: [PlacementMethod; 3] = [
        PlacementMethod::MaxFlow,
        PlacementMethod::Swarm,
        PlacementMethod::SeparatePipelines,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PlacementMethod::MaxFlow => "max-flow",
            PlacementMethod::Swarm => "swarm",
            PlacementMethod::SeparatePipelines => "separate-pipelines",
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchedulerKind {
    /// Iteration-level continuous batching; prefills run whole, ahead of decodes (vLLM).
    Vllm,
    /// Continuous batching with chunked prefill under a token budget, decodes first
    /// (Sarathi-Serve).
    Sarathi,
    /// A batch runs to completion before the next one starts.
    Static,
}

impl SchedulerKind {
    pub fn name(self) -> &'static str {
        match self {
            SchedulerKind::Vllm => "vllm",
            SchedulerKind::Sarathi => "sarathi",
            SchedulerKind::Static => "static",
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RouterKind {
    RoundRobin,
    /// Fewest outstanding tokens, weighed by each replica's speed (in a fleet of one GPU type,
    /// simply the fewest outstanding tokens).
    LeastLoaded,
    /// Of two replicas drawn at random, the less loaded (weighed as `least-loaded`).
    PowerOfTwo,
    /// Requests dealt in proportion to each replica's speed (smooth weighted round-robin): the
    /// whole-replica case of Helix's routing in proportion to capacity.
    Weighted,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preemption {
    /// Drop the request's KV cache and recompute it when resumed (vLLM's default).
    Recompute,
    /// Copy the request's KV cache to host memory over PCIe and back.
    Swap,
}
