//! `kind = "serving"` lowered: `[model]`, `[serving]`, `[workload]` and `[slo]` checked at their
//! keys (each default recorded), the fleet's replicas sized and priced on their hardware (one
//! kind on `[cluster]`, or a mixed fleet of `[[serving.group]]`s), the requests generated.
//! `placed.rs` lowers a placed fleet.

mod placed;

use crate::hw::host::HostSpec;
use crate::hw::{ComputeModel, Dtype, GpuSpec, gpu};
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::cluster::{self, Needs};
use crate::scenario::serving::{GroupSection, ServingSection};
use crate::workload::serving::config::{FleetConfig, Replicas, ServingConfig, Slo};
use crate::workload::serving::kind::{MemoryPolicy, ReplicaKind};
use crate::workload::serving::policy::{OffloadMode, Preemption, RouterKind, SchedulerKind};
use std::sync::Arc;

const GIB: f64 = (1u64 << 30) as f64;

/// The scenario's serving run, every key checked.
pub fn lower(s: &Scenario) -> Result<ServingConfig, ScenarioError> {
    let f = &s.file;
    let mut assumptions: Vec<String> = Vec::new();
    let serving = f.serving.clone().unwrap_or_default();
    let workload = f.workload.clone().ok_or_else(|| {
        s.error_at("workload", "a serving scenario needs a [workload] table")
            .with_help("add [workload] with requests, arrival and prompt_tokens / output_tokens")
    })?;
    let model = super::model::resolve_scenario(s, &mut assumptions)?;
    if s.file.model.elementwise.is_some() {
        return Err(s
            .error_at(
                "model.elementwise",
                "model.elementwise describes a training layer's kernels; serving prices its own",
            )
            .with_help("remove elementwise from [model]"));
    }
    if model.moe.is_some() {
        assumptions.push(
            "mixture of experts: tokens spread evenly over the experts, experts split by tensor \
             parallelism (no expert parallelism in serving)"
                .into(),
        );
    }
    let Engine {
        swap,
        pools,
        scheduler,
        max_batch_size,
        max_batch_tokens,
        router,
        memory,
        host,
    } = engine(s, &serving, &mut assumptions)?;
    let supports = |g: &GpuSpec, path: &str| -> Result<(), ScenarioError> {
        if g.peak_flops(model.dtype).is_none() {
            return Err(s
                .error_at(
                    path,
                    format!("{} has no {} arithmetic", g.name, model.dtype),
                )
                .with_help("choose a model.dtype the GPU supports"));
        }
        Ok(())
    };

    // The fleet's hardware: one kind of replica on `[cluster]`, or a mixed fleet of groups.
    let mut profile_name = None;
    let tier;
    let nodes;
    let kinds: Vec<ReplicaKind> = match &serving.group {
        None => {
            if serving.placement.is_some() {
                return Err(s
                    .error_at(
                        "serving.placement",
                        "a placement spreads layers over the servers of [[serving.group]] tables",
                    )
                    .with_help(
                        "add [[serving.group]] tables (gpu, replicas = servers, tp) and remove                          cluster.gpu",
                    ));
            }
            let disaggregated = pools.is_some();
            let tp = counted(s, serving.tp, "serving.tp", 1, &mut assumptions, "")?;
            let pp = counted(s, serving.pp, "serving.pp", 1, &mut assumptions, "")?;
            if pp > 1 && disaggregated {
                return Err(s.error_at(
                    "serving.pp",
                    "pipeline-parallel replicas in disaggregated pools are not modelled by this \
                     version",
                ));
            }
            let stages_cross_nodes = tp * pp > f.cluster.gpus_per_node.unwrap_or(8);
            let needs = Needs {
                sizes: false,
                inter_node: disaggregated || stages_cross_nodes,
            };
            let cluster = cluster::resolve(s, &mut assumptions, needs)?;
            let g = cluster.gpu;
            supports(&g, "model.dtype")?;
            let gpus_per_node = cluster.gpus_per_node;
            if tp > gpus_per_node {
                return Err(s.error_at(
                    "serving.tp",
                    format!("tp = {tp} is more than a node's {gpus_per_node} GPUs"),
                ));
            }
            let replicas = match (pools, serving.replicas) {
                (Some((p, q)), Some(r)) if r != p + q => {
                    return Err(s
                        .error_at(
                            "serving.replicas",
                            format!(
                                "replicas = {r}, but the disaggregated pools hold {p} + {q} = {}",
                                p + q
                            ),
                        )
                        .with_help(
                            "remove `replicas`, or make it prefill_replicas + decode_replicas",
                        ));
                }
                (Some((p, q)), _) => p + q,
                (None, r) => counted(s, r, "serving.replicas", 1, &mut assumptions, "one replica")?,
            };
            nodes = cluster.nodes;
            if replicas * tp * pp > nodes * gpus_per_node {
                return Err(s
                    .error_at(
                        "serving.replicas",
                        format!(
                            "{replicas} replicas of tp = {tp} x pp = {pp} need {} GPUs; the \
                             cluster has {}",
                            replicas * tp * pp,
                            nodes * gpus_per_node
                        ),
                    )
                    .with_help("raise cluster.nodes, or lower serving.replicas"));
            }
            tier = cluster.tier;
            let profile = cluster::resolve_profile(s, &g, model.dtype, &mut assumptions)?;
            let mut compute = cluster::compute_model(s, g.clone(), profile.as_ref())?;
            cluster::apply_attention_kernel(s, &mut compute, &mut assumptions)?;
            super::power_limit::apply(s, &mut compute, false, &mut assumptions)?;
            profile_name = profile.map(|p| p.name);
            let kind = ReplicaKind::new(
                g,
                (tp, pp),
                replicas,
                &model,
                memory,
                compute,
                (cluster.topology, tier, cluster.in_switch_reduction),
            );
            vec![kind]
        }
        Some(groups) => {
            refuse_in_mixed_fleet(s, &serving, pools, groups)?;
            tier = cluster::network_tier(s, &mut assumptions);
            let mut setups = Vec::new();
            for (i, group) in groups.iter().enumerate() {
                setups.push(group_setup(
                    s,
                    i,
                    group,
                    (model.dtype, tier),
                    &mut assumptions,
                )?);
            }
            if let Some(method) = serving.placement {
                let settings = placed::Settings {
                    method,
                    scheduler,
                    max_batch_size,
                    max_batch_tokens,
                    memory,
                    tier,
                };
                return placed::lower(s, model, setups, settings, assumptions);
            }
            let mut kinds = Vec::new();
            let mut group_nodes = 0;
            for g in setups {
                group_nodes += (g.replicas * g.tp * g.pp).div_ceil(g.gpus_per_node);
                kinds.push(ReplicaKind::new(
                    g.gpu.clone(),
                    (g.tp, g.pp),
                    g.replicas,
                    &model,
                    memory,
                    ComputeModel::new(g.gpu),
                    (g.node.topology, tier, g.node.in_switch_reduction),
                ));
            }
            nodes = group_nodes;
            kinds
        }
    };
    check_offload(s, &kinds, &memory, &host)?;

    let seed = f.sim.seed.unwrap_or(1);
    let requests = super::traffic::generate(&workload, seed, s.source.path.parent())
        .map_err(|e| e.locate(s))?;
    let pue = super::cost::prices(s)?.map_or(1.0, |p| p.pue);
    Ok(ServingConfig {
        scenario: s.name(),
        model,
        requests,
        seed,
        slo: slo(s),
        scheduler,
        max_batch_size,
        max_batch_tokens,
        memory,
        tier,
        fleet: FleetConfig::Replicas(Replicas {
            kinds,
            router,
            swap,
            pools,
            nodes,
            profile: profile_name,
            power_limit_watts: f.cluster.power_limit.map(|p| p.0),
            pue,
        }),
        assumptions,
    })
}

/// What every replica's engine takes from `[serving]`: preemption, disaggregated pools, the
/// scheduler and its batch limits, the router, the KV cache and weight offload (and the host
/// that keeps offloaded weights).
struct Engine {
    swap: bool,
    pools: Option<(u32, u32)>,
    scheduler: SchedulerKind,
    max_batch_size: u32,
    max_batch_tokens: u32,
    router: RouterKind,
    memory: MemoryPolicy,
    host: Option<HostSpec>,
}

fn engine(
    s: &Scenario,
    serving: &ServingSection,
    assumptions: &mut Vec<String>,
) -> Result<Engine, ScenarioError> {
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
        assumptions.push("vLLM scheduler (continuous batching)".into());
        SchedulerKind::Vllm
    });
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
        256,
        assumptions,
        "max_batch_size 256 (vLLM's default)",
    )?;
    let max_batch_tokens = counted(
        s,
        serving.max_batch_tokens,
        "serving.max_batch_tokens",
        8192,
        assumptions,
        "max_batch_tokens 8192",
    )?;
    let block_tokens = counted(
        s,
        serving.kv_block_tokens,
        "serving.kv_block_tokens",
        16,
        assumptions,
        "",
    )?;
    let fraction = serving.kv_memory_fraction.unwrap_or(0.9);
    if !(fraction > 0.0 && fraction <= 1.0) {
        return Err(s.error_at(
            "serving.kv_memory_fraction",
            "kv_memory_fraction must be in (0, 1]",
        ));
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
        OffloadMode::Prefetch | OffloadMode::Cpu => Some(super::host::resolve(s, assumptions)?),
    };
    let memory = MemoryPolicy {
        fraction,
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

/// A count at `path`, at least 1: `v`, or `default` when it is absent (recording `say` when
/// that is not empty).
fn counted(
    s: &Scenario,
    v: Option<u32>,
    path: &str,
    default: u32,
    assumptions: &mut Vec<String>,
    say: &str,
) -> Result<u32, ScenarioError> {
    let v = match v {
        Some(v) => v,
        None => {
            if !say.is_empty() {
                assumptions.push(say.to_string());
            }
            default
        }
    };
    cluster::positive(s, v, path)
}

/// `[slo]`'s targets in seconds (none without it).
pub(super) fn slo(s: &Scenario) -> Slo {
    let slo = s.file.slo.clone().unwrap_or_default();
    Slo {
        ttft_s: slo.ttft.map(|d| d.secs()),
        tpot_s: slo.tpot.map(|d| d.secs()),
        e2e_s: slo.e2e.map(|d| d.secs()),
    }
}

/// One `[[serving.group]]`, checked: its GPU, degrees, replicas and the node they sit in.
struct GroupSetup {
    pub gpu: Arc<GpuSpec>,
    pub tp: u32,
    pub pp: u32,
    pub replicas: u32,
    pub gpus_per_node: u32,
    pub node: crate::workload::cluster::ClusterSetup,
}

/// Group `i` of a mixed fleet, its keys checked at their places; `dtype` is the model's format,
/// `tier` prices the node's transfers.
fn group_setup(
    s: &Scenario,
    i: usize,
    group: &GroupSection,
    (dtype, tier): (Dtype, crate::net::tier::Tier),
    assumptions: &mut Vec<String>,
) -> Result<GroupSetup, ScenarioError> {
    let at = |key: &str| format!("serving.group.{key}");
    let name = group.gpu.as_deref().ok_or_else(|| {
        s.error_at("serving.group", format!("group {} has no `gpu`", i + 1))
            .with_help("e.g. gpu = \"A100-80GB\" (see `clustersim list gpus`)")
    })?;
    let g = gpu::find(name)
        .map(|g| Arc::new(g.clone()))
        .map_err(|close| {
            s.error_at(
                &at("gpu"),
                format!("unknown GPU \"{name}\" in group {}", i + 1),
            )
            .with_help(format!("closest catalog names: {}", close.join(", ")))
        })?;
    if g.peak_flops(dtype).is_none() {
        return Err(s
            .error_at(&at("gpu"), format!("{} has no {dtype} arithmetic", g.name))
            .with_help("choose a model.dtype the GPU supports"));
    }
    let positive = |v: Option<u32>, key: &str| cluster::positive(s, v.unwrap_or(1), &at(key));
    let tp = positive(group.tp, "tp")?;
    let pp = positive(group.pp, "pp")?;
    let replicas = positive(group.replicas, "replicas")?;
    let most = crate::net::topology::spec::MAX_GPUS;
    if replicas as u64 * tp as u64 * pp as u64 > most {
        return Err(s
            .error_at(
                &at("replicas"),
                format!(
                    "group {}: {replicas} replicas of tp x pp = {} x {pp} GPUs; a fleet holds \
                     at most {most} GPUs",
                    i + 1,
                    tp
                ),
            )
            .with_help("fewer replicas"));
    }
    let gpus_per_node = match group.gpus_per_node {
        Some(n) => cluster::positive(s, n, &at("gpus_per_node"))?,
        None => {
            assumptions.push(format!("group {}: 8 GPUs per node", i + 1));
            8
        }
    };
    if tp as u64 * pp as u64 > gpus_per_node as u64 {
        return Err(s.error_at(
            &at("tp"),
            format!(
                "group {}: tp x pp = {} is more than a node's {gpus_per_node} GPUs (a group's \
                 replicas stay within a node)",
                i + 1,
                tp as u64 * pp as u64
            ),
        ));
    }
    let node = cluster::datasheet_node(s, g.clone(), gpus_per_node, tier)?;
    assumptions.push(format!(
        "group {}: intra-node bandwidth {} GB/s per GPU per direction ({} datasheet)",
        i + 1,
        g.intra_bandwidth / 1e9,
        g.name
    ));
    Ok(GroupSetup {
        gpu: g,
        tp,
        pp,
        replicas,
        gpus_per_node,
        node,
    })
}

/// Refuses the keys of `[cluster]`, `[model]` and `[serving]` that do not apply to a mixed fleet
/// of `[[serving.group]]` tables.
fn refuse_in_mixed_fleet(
    s: &Scenario,
    serving: &ServingSection,
    pools: Option<(u32, u32)>,
    groups: &[GroupSection],
) -> Result<(), ScenarioError> {
    let f = &s.file;
    let refuse = |path: &str, what: &str| {
        Err(s
            .error_at(path, format!("{what} does not apply to a mixed fleet"))
            .with_help("each [[serving.group]] names its gpu, replicas, tp and gpus_per_node"))
    };
    if f.cluster.gpu.is_some() {
        return refuse("cluster.gpu", "cluster.gpu");
    }
    if f.cluster.accelerator.is_some() {
        return refuse("cluster.accelerator", "[cluster.accelerator]");
    }
    if f.cluster.nodes.is_some() {
        return refuse("cluster.nodes", "cluster.nodes");
    }
    if f.cluster.profile.is_some() {
        return refuse("cluster.profile", "a calibration profile (one GPU's)");
    }
    if f.model.attention_kernel.is_some() {
        return refuse("model.attention_kernel", "model.attention_kernel");
    }
    if serving.replicas.is_some() {
        return refuse("serving.replicas", "serving.replicas");
    }
    if serving.tp.is_some() {
        return refuse("serving.tp", "serving.tp");
    }
    if serving.pp.is_some() {
        return refuse("serving.pp", "serving.pp");
    }
    if pools.is_some() {
        return Err(s.error_at(
            "serving.disaggregation",
            "disaggregated pools in a mixed fleet are not modelled by this version",
        ));
    }
    if s.file.cluster.power_limit.is_some() {
        return Err(s
            .error_at(
                "cluster.power_limit",
                "a power limit in watts applies to a cluster of one GPU type, not to a \
                 mixed fleet",
            )
            .with_help("remove cluster.power_limit"));
    }
    if groups.is_empty() {
        return Err(s
            .error_at("serving.group", "a mixed fleet needs at least one group")
            .with_help("add [[serving.group]] with gpu, replicas and tp"));
    }
    Ok(())
}

/// Refuses weights to offload beyond a GPU's share, or beyond the host memory of a server.
fn check_offload(
    s: &Scenario,
    kinds: &[ReplicaKind],
    memory: &MemoryPolicy,
    host: &Option<HostSpec>,
) -> Result<(), ScenarioError> {
    if let Some(k) = kinds
        .iter()
        .find(|k| k.offloaded_bytes < memory.offload_bytes)
    {
        return Err(s
            .error_at(
                "serving.weights_offload",
                format!(
                    "{:.1} GiB to offload, but a {} GPU's share of the weights is {:.1} GiB",
                    memory.offload_bytes / GIB,
                    k.gpu.name,
                    k.offloaded_bytes / GIB
                ),
            )
            .with_help("offload at most a GPU's share of the weights"));
    }
    for (h, k) in host.iter().flat_map(|h| kinds.iter().map(move |k| (h, k))) {
        let per_server = memory.offload_bytes * k.offload_users as f64;
        if per_server > h.memory_bytes {
            return Err(s
                .error_at(
                    "serving.weights_offload",
                    format!(
                        "{} GPUs a server each keep {:.1} GiB in host memory: {:.1} GiB, more \
                         than the host's {:.1} GiB",
                        k.offload_users,
                        memory.offload_bytes / GIB,
                        per_server / GIB,
                        h.memory_bytes / GIB
                    ),
                )
                .with_help("offload less, or raise cluster.host.memory"));
        }
    }
    Ok(())
}
