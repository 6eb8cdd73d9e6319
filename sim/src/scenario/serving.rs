//! `[serving]`, `[workload]` and `[slo]`: a fleet serving a model, the traffic it gets, and the
//! latency targets it is held to (vLLM's and Sarathi-Serve's names).

use super::quantity::{Bytes, Duration, Rate};
use crate::workload::serving::engine::EngineKind;
use crate::workload::serving::policy::{
    OffloadMode, PlacementMethod, Preemption, RouterKind, SchedulerKind,
};
use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServingSection {
    /// The engine whose defaults fill what the section leaves out (vLLM's when absent).
    pub engine: Option<EngineKind>,
    /// The engine's release ("0.11"), for its time outside the kernels (the newest when absent).
    pub engine_version: Option<String>,
    pub replicas: Option<u32>,
    pub tp: Option<u32>,
    pub pp: Option<u32>,
    pub scheduler: Option<SchedulerKind>,
    /// Most requests in one iteration's batch.
    pub max_batch_size: Option<u32>,
    /// Most tokens in one iteration (Sarathi-Serve's token budget; vLLM's max_num_batched_tokens).
    pub max_batch_tokens: Option<u32>,
    /// Tokens per KV-cache block (vLLM's block size).
    pub kv_block_tokens: Option<u32>,
    /// Fraction of GPU memory the engine may use for weights, activations and the KV cache.
    pub kv_memory_fraction: Option<f64>,
    pub router: Option<RouterKind>,
    /// What happens to a running request when the KV cache is full.
    pub preemption: Option<Preemption>,
    /// Format of the KV cache: "bf16" (default) or "fp8".
    pub kv_cache_dtype: Option<crate::hw::Dtype>,
    /// Weight bytes of each GPU kept in host memory and read over PCIe every iteration (vLLM's
    /// `--cpu-offload-gb`).
    pub weights_offload: Option<Bytes>,
    /// How the offloaded weights are used each iteration (`workload::serving::offload`):
    /// "serial" (default: read over PCIe before the layers run, vLLM), "prefetch" (each layer's
    /// streamed while the previous layer computes, FlexGen, DeepSpeed ZeRO-Inference) or "cpu"
    /// (as prefetch, and a share of each layer's operators computed on the host CPUs where the
    /// weights lie, TwinPilots).
    pub weights_offload_mode: Option<OffloadMode>,
    pub disaggregation: Option<DisaggregationSection>,
    /// A mixed fleet: replicas of several GPU types (`[[serving.group]]`), instead of
    /// `cluster.gpu` with `replicas` and `tp`.
    pub group: Option<Vec<GroupSection>>,
    /// Place the model's layers over the groups' servers (Helix) instead of whole replicas.
    pub placement: Option<PlacementMethod>,
}

/// One kind of replica in a mixed fleet: `replicas` replicas of `tp` GPUs of type `gpu`, on
/// servers of `gpus_per_node` GPUs.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSection {
    pub gpu: Option<String>,
    pub replicas: Option<u32>,
    pub tp: Option<u32>,
    pub pp: Option<u32>,
    pub gpus_per_node: Option<u32>,
}

/// Separate prefill and decode pools (DistServe, Splitwise).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DisaggregationSection {
    pub prefill_replicas: Option<u32>,
    pub decode_replicas: Option<u32>,
}

/// `[workload]`: the requests.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSection {
    pub requests: Option<u32>,
    pub arrival: Option<ArrivalKind>,
    /// Mean arrival rate (poisson, gamma).
    pub rate: Option<Rate>,
    /// Coefficient of variation of inter-arrival times (gamma; 1 is Poisson).
    pub cv: Option<f64>,
    /// CSV trace of arrival times and lengths (arrival = "trace").
    pub trace: Option<String>,
    /// Rate steps over time (arrival = "piecewise").
    pub schedule: Option<Vec<RateStep>>,
    pub prompt_tokens: Option<LengthSpec>,
    pub output_tokens: Option<LengthSpec>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArrivalKind {
    /// Every request at time zero.
    Offline,
    Poisson,
    Gamma,
    Trace,
    /// Poisson with a rate that changes over time (`schedule`).
    Piecewise,
}

/// One step of a piecewise arrival rate: from `at` on, requests arrive at `rate` (until the next
/// step).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    pub at: Duration,
    pub rate: Rate,
}

/// A token count: fixed, or drawn from a distribution.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum LengthSpec {
    Fixed(u32),
    Distribution(LengthDistribution),
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LengthDistribution {
    pub dist: DistributionKind,
    pub mean: Option<f64>,
    pub sigma: Option<f64>,
    pub min: Option<u32>,
    pub max: Option<u32>,
    /// One length per line (dist = "empirical").
    pub file: Option<String>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DistributionKind {
    Uniform,
    Lognormal,
    Empirical,
}

/// `[slo]`: latency targets; a request meets the SLO when it meets every one given.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SloSection {
    /// Time to first token.
    pub ttft: Option<Duration>,
    /// Time per output token after the first.
    pub tpot: Option<Duration>,
    /// End-to-end latency.
    pub e2e: Option<Duration>,
}
