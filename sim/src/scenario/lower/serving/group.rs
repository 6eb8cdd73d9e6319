//! A mixed fleet of `[[serving.group]]` tables: the keys that do not apply to one refused, each
//! group checked at its keys, and the replicas of each group.

use super::Hardware;
use crate::hw::{ComputeModel, Dtype, GpuSpec, gpu};
use crate::model::Transformer;
use crate::net::tier::Tier;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::cluster;
use crate::scenario::serving::{GroupSection, ServingSection};
use crate::workload::serving::kind::{EnginePolicy, ReplicaKind};
use std::sync::Arc;

/// One `[[serving.group]]`, checked: its GPU, degrees, replicas and the node they sit in.
pub(super) struct GroupSetup {
    pub gpu: Arc<GpuSpec>,
    pub tp: u32,
    pub pp: u32,
    pub replicas: u32,
    pub gpus_per_node: u32,
    pub node: crate::workload::cluster::ClusterSetup,
}

/// Group `i` of a mixed fleet, its keys checked at their places; `dtype` is the model's format,
/// `tier` prices the node's transfers.
pub(super) fn group_setup(
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
    let g = gpu::find(name).map(Arc::<GpuSpec>::from).map_err(|close| {
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
pub(super) fn refuse_in_mixed_fleet(
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

/// The replicas of each group of a mixed fleet, and the nodes the groups take.
pub(super) fn hardware(
    setups: Vec<GroupSetup>,
    model: &Transformer,
    memory: EnginePolicy,
    tier: Tier,
) -> Hardware {
    let mut kinds = Vec::new();
    let mut group_nodes = 0;
    for g in setups {
        group_nodes += (g.replicas * g.tp * g.pp).div_ceil(g.gpus_per_node);
        kinds.push(ReplicaKind::new(
            g.gpu.clone(),
            (g.tp, g.pp),
            g.replicas,
            model,
            memory,
            ComputeModel::new(g.gpu.clone()),
            (g.node.topology, tier, g.node.in_switch_reduction),
        ));
    }
    Hardware {
        kinds,
        nodes: group_nodes,
        tier,
        profile: None,
    }
}
