//! `[serving]`'s engine settings: preemption, disaggregated pools, the scheduler and its batch
//! limits, the router, the KV cache's memory and format, weight offload and the time outside the
//! kernels. Where the scenario is silent, the named engine's table decides
//! (`workload::serving::engine`), each default recorded with its source.

use super::counted;
use crate::hw::Dtype;
use crate::hw::host::HostSpec;
use crate::release::parse as parse_version;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::serving::ServingSection;
use crate::workload::serving::engine::VLLM;
use crate::workload::serving::kind::EnginePolicy;
use crate::workload::serving::overhead::Overhead;
use crate::workload::serving::policy::{OffloadMode, Preemption, RouterKind, SchedulerKind};

/// What every replica's engine takes from `[serving]`: preemption, disaggregated pools, the
/// scheduler and its batch limits, the router, the KV cache and weight offload (and the host
/// that keeps offloaded weights).
pub(super) struct Engine {
    pub swap: bool,
    pub pools: Option<(u32, u32)>,
    pub scheduler: SchedulerKind,
    pub max_batch_size: u32,
    pub max_batch_tokens: u32,
    pub router: RouterKind,
    pub memory: EnginePolicy,
    pub host: Option<HostSpec>,
}

/// The engine of every replica: the scenario's settings, and where it is silent, the named
/// engine's table (`workload::serving::engine`; vLLM's when none is named). `weights` is the
/// model's format (an fp8 checkpoint's KV cache follows the engine).
pub(super) fn engine(
    s: &Scenario,
    serving: &ServingSection,
    weights: Dtype,
    assumptions: &mut Vec<String>,
) -> Result<Engine, ScenarioError> {
    let stack = match serving.engine {
        Some(kind) => kind.stack(),
        None => {
            assumptions.push(format!(
                "engine: {} (no serving.engine; \"vllm\", \"sglang\" or \"tensorrt-llm\" pick \
                 another engine's defaults)",
                VLLM.label
            ));
            &VLLM
        }
    };
    let by = stack.label;
    let swap = serving.preemption == Some(Preemption::Swap);
    let pools = match &serving.disaggregation {
        None => None,
        Some(d) => {
            let pool = |v: Option<u32>, key: &str| -> Result<u32, ScenarioError> {
                let path = format!("serving.disaggregation.{key}");
                match v {
                    None => Err(s
                        .error_at(
                            "serving.disaggregation",
                            format!("missing key `{key}` in [serving.disaggregation]"),
                        )
                        .with_help("a disaggregated fleet names both pools, e.g. prefill_replicas = 2 and decode_replicas = 6")),
                    Some(0) => Err(s.error_at(&path, format!("`{path}` must be at least 1"))),
                    Some(n) => Ok(n),
                }
            };
            Some((
                pool(d.prefill_replicas, "prefill_replicas")?,
                pool(d.decode_replicas, "decode_replicas")?,
            ))
        }
    };
    let scheduler = serving.scheduler.unwrap_or_else(|| {
        assumptions.push(format!(
            "scheduler = \"{}\": {by}'s, {}",
            stack.scheduler.name(),
            stack.scheduler_source
        ));
        stack.scheduler
    });
    let (seqs, tokens) = stack
        .limits
        .for_devices(devices(s).iter().map(|(n, b)| (n.as_str(), *b)));
    let whose = format!("{by}'s default on these GPUs ({})", stack.limits.source);
    if pools.is_some() && scheduler == SchedulerKind::Static {
        return Err(s
            .error_at(
                "serving.scheduler",
                "static batching with disaggregated pools is not modelled",
            )
            .with_help("use scheduler = \"vllm\" or \"sarathi\""));
    }
    let max_batch_size = counted(
        s,
        serving.max_batch_size,
        "serving.max_batch_size",
        seqs,
        assumptions,
        &format!("max_batch_size {seqs}: {whose}"),
    )?;
    let max_batch_tokens = counted(
        s,
        serving.max_batch_tokens,
        "serving.max_batch_tokens",
        tokens,
        assumptions,
        &format!("max_batch_tokens {tokens}: {whose}"),
    )?;
    let block_tokens = counted(
        s,
        serving.kv_block_tokens,
        "serving.kv_block_tokens",
        16,
        assumptions,
        "",
    )?;
    let kv_budget = match serving.kv_memory_fraction {
        Some(f) if !(f > 0.0 && f <= 1.0) => {
            return Err(s.error_at(
                "serving.kv_memory_fraction",
                "kv_memory_fraction must be in (0, 1]",
            ));
        }
        Some(f) => stack.kv_budget.with_fraction(f),
        None => {
            assumptions.push(format!(
                "KV cache memory: {} ({by}: {})",
                stack.kv_budget.describe(),
                stack.kv_source
            ));
            stack.kv_budget
        }
    };
    if weights == Dtype::Fp8 {
        assumptions.push(
            "fp8 linear layers quantize their 16-bit inputs in a pass of their own before each \
             GEMM (vLLM's, SGLang's and TensorRT-LLM's fp8 layers by default; fusing it into the \
             norm before is not modelled)"
                .into(),
        );
    }
    let router = serving.router.unwrap_or(RouterKind::LeastLoaded);
    let kv_dtype = match serving.kv_cache_dtype {
        Some(d @ (Dtype::Bf16 | Dtype::Fp16 | Dtype::Fp8)) => d,
        Some(other) => {
            return Err(s
                .error_at(
                    "serving.kv_cache_dtype",
                    format!("a KV cache in {other} is not modelled"),
                )
                .with_help("use \"bf16\", \"fp16\" or \"fp8\""));
        }
        None if weights == Dtype::Fp8 => {
            let kv = stack.fp8_checkpoint_kv;
            assumptions.push(format!(
                "KV cache in {kv}: what {by} keeps for an fp8 checkpoint ({})",
                stack.kv_source
            ));
            kv
        }
        None => {
            assumptions.push("KV cache in bf16".into());
            Dtype::Bf16
        }
    };
    let offload_mode = match (serving.weights_offload_mode, serving.weights_offload) {
        (Some(mode), None) => {
            return Err(s
                .error_at(
                    "serving.weights_offload_mode",
                    format!(
                        "weights_offload_mode = \"{}\" with no weights offloaded",
                        mode.name()
                    ),
                )
                .with_help("add weights_offload = \"<bytes per GPU>\", or remove the mode"));
        }
        (Some(mode), Some(_)) => mode,
        (None, Some(_)) => {
            assumptions.push(
                "offloaded weights read over PCIe before each iteration's kernels (serial, as vLLM)"
                    .into(),
            );
            OffloadMode::Serial
        }
        (None, None) => OffloadMode::Serial,
    };
    // The host is resolved only where something is computed on it or its capacity matters.
    let host = match offload_mode {
        OffloadMode::Serial => None,
        OffloadMode::Prefetch | OffloadMode::Cpu => {
            Some(crate::scenario::lower::host::resolve(s, assumptions)?)
        }
    };
    let version = match &serving.engine_version {
        None => None,
        Some(text) => Some(parse_version(text).map_err(|e| {
            s.error_at("serving.engine_version", e)
                .with_help("a release number such as \"0.11\", or remove the key for the newest")
        })?),
    };
    let era = stack.era(version).map_err(|e| {
        s.error_at("serving.engine_version", e)
            .with_help("name a release the tables cover, or remove the key for the newest")
    })?;
    // A device defined by its own figures runs no known engine's software: no CUDA graphs, no
    // Python loop whose costs the tables hold, unless the scenario names an engine.
    let overhead = if s.file.cluster.accelerator.is_some() && serving.engine.is_none() {
        assumptions.push(
            "time outside the kernels: none (a custom accelerator runs its own software; name \
             serving.engine to add an engine's)"
                .into(),
        );
        Overhead::NONE
    } else {
        assumptions.push(format!(
            "time outside the kernels: {}{} ({})",
            era.label,
            if version.is_none() {
                " (no serving.engine_version: the newest release)"
            } else {
                ""
            },
            era.source
        ));
        era.overhead
    };
    let memory = EnginePolicy {
        engine: stack.kind,
        kv_budget,
        overhead,
        block_tokens,
        kv_dtype,
        offload_bytes: serving.weights_offload.map_or(0.0, |b| b.0 as f64),
        offload_mode,
        host: host.filter(|_| offload_mode == OffloadMode::Cpu),
    };
    Ok(Engine {
        swap,
        pools,
        scheduler,
        max_batch_size,
        max_batch_tokens,
        router,
        memory,
        host,
    })
}

/// The fleet's devices, each by its name and memory: the groups' GPUs, or the cluster's GPU or
/// accelerator. A GPU the catalog does not know is left out (the set-up refuses it later).
fn devices(s: &Scenario) -> Vec<(String, u64)> {
    let f = &s.file;
    let gpu = |name: &str| {
        crate::hw::gpu::find(name)
            .ok()
            .map(|g| (g.name.to_string(), g.memory_bytes))
    };
    match (
        f.serving.as_ref().and_then(|v| v.group.as_ref()),
        &f.cluster.accelerator,
    ) {
        (Some(groups), _) => groups
            .iter()
            .filter_map(|g| g.gpu.as_deref().and_then(gpu))
            .collect(),
        (None, Some(a)) => vec![(a.name.clone(), a.memory.0)],
        (None, None) => f.cluster.gpu.as_deref().and_then(gpu).into_iter().collect(),
    }
}
