//! `kind = "serving"` lowered: `[model]`, `[serving]`, `[workload]` and `[slo]` checked at their
//! keys (each default recorded), the fleet's replicas sized and priced on their hardware (one
//! kind on `[cluster]`, or a mixed fleet of `[[serving.group]]`s), the requests generated.
//! `group.rs` checks a mixed fleet's groups; `placed.rs` lowers a placed fleet.

mod engine;
mod group;
mod placed;

use engine::{Engine, engine};

use crate::hw::host::HostSpec;
use crate::model::Transformer;
use crate::net::tier::Tier;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::cluster::{self, Needs};
use crate::scenario::serving::ServingSection;
use crate::workload::serving::config::{FleetConfig, Replicas, ServingConfig, Slo};
use crate::workload::serving::kind::{EnginePolicy, ReplicaKind};

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
    super::model::refuse_training_keys(
        s,
        "model.elementwise describes a training layer's kernels; serving prices its own",
        "model.dropout is a training setting; inference runs without dropout",
    )?;
    if model.moe.is_some() {
        assumptions.push(
            "mixture of experts: tokens spread evenly over the experts, experts split by tensor \
             parallelism (no expert parallelism in serving)"
                .into(),
        );
    }
    let engine = engine(s, &serving, model.dtype, &mut assumptions)?;

    // The fleet's hardware: one kind of replica on `[cluster]`, or a mixed fleet of groups.
    let hardware = match &serving.group {
        None => one_kind(s, &serving, &engine, &model, &mut assumptions)?,
        Some(groups) => {
            group::refuse_in_mixed_fleet(s, &serving, engine.pools, groups)?;
            let tier = cluster::network_tier(s, &mut assumptions);
            let mut setups = Vec::new();
            for (i, group) in groups.iter().enumerate() {
                let setup = group::group_setup(s, i, group, (model.dtype, tier), &mut assumptions)?;
                tp_divides_heads(s, &model, setup.tp, &format!("serving.group.{i}.tp"))?;
                setups.push(setup);
            }
            if let Some(method) = serving.placement {
                let settings = placed::Settings {
                    method,
                    scheduler: engine.scheduler,
                    max_batch_size: engine.max_batch_size,
                    max_batch_tokens: engine.max_batch_tokens,
                    memory: engine.memory,
                    tier,
                };
                return placed::lower(s, model, setups, settings, assumptions);
            }
            group::hardware(setups, &model, engine.memory, tier)
        }
    };
    check_offload(s, &hardware.kinds, &engine.memory, &engine.host)?;

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
        scheduler: engine.scheduler,
        max_batch_size: engine.max_batch_size,
        max_batch_tokens: engine.max_batch_tokens,
        memory: engine.memory,
        tier: hardware.tier,
        fleet: FleetConfig::Replicas(Replicas {
            kinds: hardware.kinds,
            router: engine.router,
            swap: engine.swap,
            pools: engine.pools,
            nodes: hardware.nodes,
            profile: hardware.profile,
            power_limit_watts: f.cluster.power_limit.map(|p| p.0),
            pue,
        }),
        assumptions,
    })
}

/// A fleet of replicas: their kinds, the nodes they take, the network tier that prices their
/// transfers and the calibration profile's name, when there is one.
struct Hardware {
    kinds: Vec<ReplicaKind>,
    nodes: u32,
    tier: Tier,
    profile: Option<String>,
}

/// One kind of replica on `[cluster]`: its degrees and count checked against the cluster's GPUs.
fn one_kind(
    s: &Scenario,
    serving: &ServingSection,
    engine: &Engine,
    model: &Transformer,
    assumptions: &mut Vec<String>,
) -> Result<Hardware, ScenarioError> {
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
    let pools = engine.pools;
    let disaggregated = pools.is_some();
    let tp = counted(s, serving.tp, "serving.tp", 1, assumptions, "")?;
    let pp = counted(s, serving.pp, "serving.pp", 1, assumptions, "")?;
    if pp > 1 && disaggregated {
        return Err(s.error_at(
            "serving.pp",
            "pipeline-parallel replicas in disaggregated pools are not modelled by this \
             version",
        ));
    }
    let stages_cross_nodes =
        u64::from(tp) * u64::from(pp) > u64::from(s.file.cluster.gpus_per_node.unwrap_or(8));
    let needs = Needs {
        sizes: false,
        inter_node: disaggregated || stages_cross_nodes,
    };
    let cluster = cluster::resolve(s, assumptions, needs)?;
    let g = cluster.gpu;
    if g.peak_flops(model.dtype).is_none() {
        return Err(s
            .error_at(
                "model.dtype",
                format!("{} has no {} arithmetic", g.name, model.dtype),
            )
            .with_help("choose a model.dtype the GPU supports"));
    }
    let gpus_per_node = cluster.gpus_per_node;
    if tp > gpus_per_node {
        return Err(s.error_at(
            "serving.tp",
            format!("tp = {tp} is more than a node's {gpus_per_node} GPUs"),
        ));
    }
    tp_divides_heads(s, model, tp, "serving.tp")?;
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
                .with_help("remove `replicas`, or make it prefill_replicas + decode_replicas"));
        }
        (Some((p, q)), _) => p + q,
        (None, r) => counted(s, r, "serving.replicas", 1, assumptions, "one replica")?,
    };
    let nodes = cluster.nodes;
    // 64-bit: the product of three 32-bit keys.
    let (needed, has) = (
        u64::from(replicas) * u64::from(tp) * u64::from(pp),
        u64::from(nodes) * u64::from(gpus_per_node),
    );
    if needed > has {
        return Err(s
            .error_at(
                "serving.replicas",
                format!(
                    "{replicas} replicas of tp = {tp} x pp = {pp} need {needed} GPUs; the \
                     cluster has {has}"
                ),
            )
            .with_help("raise cluster.nodes, or lower serving.replicas"));
    }
    let tier = cluster.tier;
    let (compute, profile) =
        cluster::compute_model(s, g.clone(), model.dtype, (false, None), assumptions)?;
    let kind = ReplicaKind::new(
        g,
        (tp, pp),
        replicas,
        model,
        engine.memory,
        compute,
        (cluster.topology, tier, cluster.in_switch_reduction),
    );
    Ok(Hardware {
        kinds: vec![kind],
        nodes,
        tier,
        profile,
    })
}

/// A count at `path`, at least 1: `v`, or `default` when it is absent (recording `say` when
/// that is not empty).
pub(super) fn counted(
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

/// Refuses weights to offload beyond a GPU's share, or beyond the host memory of a server.
fn check_offload(
    s: &Scenario,
    kinds: &[ReplicaKind],
    memory: &EnginePolicy,
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

/// A replica's tensor-parallel degree splits the model's attention heads evenly, as serving
/// engines require.
fn tp_divides_heads(
    s: &Scenario,
    model: &Transformer,
    tp: u32,
    key: &str,
) -> Result<(), ScenarioError> {
    if model.heads.is_multiple_of(tp) {
        return Ok(());
    }
    Err(s
        .error_at(
            key,
            format!(
                "tp = {tp} does not divide {}'s {} attention heads",
                model.name, model.heads
            ),
        )
        .with_help("serving engines split the heads evenly over tensor-parallel GPUs: use a divisor of the heads"))
}
