//! The cluster a scenario describes, resolved once for every workload: the GPU (or an
//! accelerator defined by its figures, `scenario::lower::accelerator`), the node count
//! and size, the intra-node link, the inter-node network (`[cluster.intra_node]`,
//! `[cluster.inter_node]`), the topology built from them and the network tier that prices
//! transfers on it. Every default taken is recorded as an assumption; every bad key is refused at
//! its location.
//!
//! The calibration profile (`cluster.profile`) is resolved apart, by [`resolve_profile`], once a
//! workload knows its model's format. Deliberately ignored here: what runs on the GPUs.

use crate::hw::profile;
use crate::hw::{ComputeModel, Dtype, GpuSpec, gpu};
use crate::net::Topology;
use crate::net::tier::Tier;
use crate::net::topology::spec::IntraKind;
use crate::net::{Fabric, Transport};
use crate::scenario::cluster::IntraLink;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::topology::SpecError;
use crate::scenario::{NetworkTier, Scenario, suggest};
pub use crate::workload::cluster::{ClusterSetup, ComputeProfile};
use std::path::Path;
use std::sync::Arc;

fn require<T: Copy>(
    s: &Scenario,
    value: Option<T>,
    path: &str,
    example: &str,
) -> Result<T, ScenarioError> {
    value.ok_or_else(|| {
        let (table, key) = path.rsplit_once('.').unwrap_or(("", path));
        s.error_at(path, format!("missing key `{key}` in [{table}]"))
            .with_help(format!("add it, e.g. {example}"))
    })
}

/// `value`, refused at `path` when it is 0.
pub(crate) fn positive(s: &Scenario, value: u32, path: &str) -> Result<u32, ScenarioError> {
    if value == 0 {
        return Err(s.error_at(path, format!("`{path}` must be at least 1")));
    }
    Ok(value)
}

/// One node of `gpus_per_node` GPUs of type `gpu`, wired as its datasheet says, with the
/// `[cluster.intra_node]` keys applied (a group of a mixed serving fleet: its replicas stay
/// within a node, so nothing between nodes is modelled); `tier` prices its transfers.
pub fn datasheet_node(
    s: &Scenario,
    gpu: Arc<GpuSpec>,
    gpus_per_node: u32,
    tier: Tier,
) -> Result<ClusterSetup, ScenarioError> {
    let fabric = Fabric {
        nodes: 1,
        gpus_per_node,
        intra_bandwidth: gpu.intra_bandwidth,
        intra_latency: Fabric::INTRA_LATENCY_S,
        nic_bandwidth: 0.0,
        nics_per_node: gpus_per_node,
        oversubscription: 1.0,
        inter_latency: Fabric::INTER_LATENCY_S,
    };
    build(s, gpu, (1, fabric), tier, "cluster")
}

/// The cluster of `fabric` (whose `nodes` may be fewer than the cluster's `nodes` when nothing
/// between nodes is modelled) built as a topology; a spec the topology keys refuse is an error
/// at `spec_key`.
fn build(
    s: &Scenario,
    gpu: Arc<GpuSpec>,
    (nodes, fabric): (u32, Fabric),
    tier: Tier,
    spec_key: &str,
) -> Result<ClusterSetup, ScenarioError> {
    let spec = super::topology::spec(&s.file.cluster, &fabric, &gpu, s.source.path.parent())
        .map_err(|e| match e {
            SpecError::Key(e) => s.error_at(spec_key, e),
            SpecError::File(e) => s.error_at("cluster", e),
        })?;
    let topology = Topology::build(&spec).map_err(|e| s.error_at("cluster", e.message))?;
    let in_switch_reduction = gpu.in_switch_reduction && spec.intra == IntraKind::NvSwitch;
    Ok(ClusterSetup {
        gpu,
        nodes,
        gpus_per_node: fabric.gpus_per_node,
        fabric,
        spec,
        topology,
        tier,
        in_switch_reduction,
    })
}

/// The network tier `[sim] network` names; the analytical tier (recorded) when it names none.
pub fn network_tier(s: &Scenario, assumptions: &mut Vec<String>) -> Tier {
    match s.file.sim.network {
        Some(NetworkTier::Flow) => Tier::Flow,
        Some(NetworkTier::Analytical) => Tier::Analytical,
        None => {
            assumptions.push(
                "analytical network tier (links shared evenly within a phase, no dynamic rates)"
                    .into(),
            );
            Tier::Analytical
        }
    }
}

/// What a workload needs of `[cluster]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    /// `nodes` and `gpus_per_node` must be stated (training: the sizes decide the parallel
    /// layout); otherwise they default to one node of 8 GPUs, recorded as assumptions.
    pub sizes: bool,
    /// Traffic crosses nodes, so a cluster of several nodes must state its NICs. When it does
    /// not (serving replicas that each fit in a node) and no NIC is stated, the topology covers
    /// one node: nothing is priced between nodes.
    pub inter_node: bool,
}

/// Resolves `[cluster]` for a workload that `needs` what it says.
pub fn resolve(
    s: &Scenario,
    assumptions: &mut Vec<String>,
    needs: Needs,
) -> Result<ClusterSetup, ScenarioError> {
    let sizes_required = needs.sizes;
    let f = &s.file;
    let gpu = device(s, assumptions)?;
    let nodes = match (f.cluster.nodes, sizes_required) {
        (Some(n), _) => n,
        (None, true) => require(s, None, "cluster.nodes", "nodes = 4")?,
        (None, false) => {
            assumptions.push("one node".into());
            1
        }
    };
    let nodes = positive(s, nodes, "cluster.nodes")?;
    let gpus_per_node = match (f.cluster.gpus_per_node, sizes_required) {
        (Some(n), _) => n,
        (None, true) => require(s, None, "cluster.gpus_per_node", "gpus_per_node = 8")?,
        (None, false) => {
            assumptions.push("8 GPUs per node".into());
            8
        }
    };
    let gpus_per_node = positive(s, gpus_per_node, "cluster.gpus_per_node")?;
    wire(
        s,
        gpu,
        (nodes, gpus_per_node),
        (needs.inter_node, None),
        assumptions,
    )
}

/// The device of `[cluster]`: the catalog GPU `gpu` names, or the accelerator
/// `[cluster.accelerator]` defines (`workload::accelerator`); not both.
pub fn device(s: &Scenario, assumptions: &mut Vec<String>) -> Result<Arc<GpuSpec>, ScenarioError> {
    let f = &s.file;
    if let Some(a) = &f.cluster.accelerator {
        if f.cluster.gpu.is_some() {
            return Err(s
                .error_at(
                    "cluster.accelerator",
                    "[cluster.accelerator] defines the device, so `cluster.gpu` must go",
                )
                .with_help("keep either gpu = \"...\" (a catalog GPU) or [cluster.accelerator]"));
        }
        return super::accelerator::resolve(s, a, assumptions);
    }
    let gpu_name = f.cluster.gpu.clone().ok_or_else(|| {
        s.error_at("cluster", "missing key `gpu` in [cluster]")
            .with_help(
                "add it, e.g. gpu = \"H100\" (see `clustersim list gpus`), or define a device \
                 in [cluster.accelerator]",
            )
    })?;
    gpu::find(&gpu_name)
        .map(|g| Arc::new(g.clone()))
        .map_err(|close| {
            s.error_at("cluster.gpu", format!("unknown GPU \"{gpu_name}\""))
                .with_help(format!(
                    "closest catalog names: {}; `clustersim list gpus` shows them all",
                    close.join(", ")
                ))
        })
}

/// The network between the servers of a fleet placed layer by layer (`serving.placement`): one
/// node per server, each reached through one GPU and one NIC (`[cluster.inter_node]`), on the
/// `[cluster]` topology (a fat-tree, or sites joined by WAN links, ...). `gpu` only fills in the
/// unused inside of a node.
pub fn server_network(
    s: &Scenario,
    gpu: Arc<GpuSpec>,
    servers: u32,
    tier: Tier,
    assumptions: &mut Vec<String>,
) -> Result<ClusterSetup, ScenarioError> {
    assumptions.push(
        "placed fleet: each server a node of its own, hand-offs through one GPU and one NIC".into(),
    );
    wire(s, gpu, (servers, 1), (true, Some(tier)), assumptions)
}

/// `nodes` nodes of `gpus_per_node` GPUs wired as `[cluster.intra_node]` and
/// `[cluster.inter_node]` say; `inter_node`: traffic crosses nodes (see [`Needs`]); `tier`: the
/// network tier when already resolved, else `[sim] network`'s.
fn wire(
    s: &Scenario,
    gpu: Arc<GpuSpec>,
    (nodes, gpus_per_node): (u32, u32),
    (inter_node, tier): (bool, Option<Tier>),
    assumptions: &mut Vec<String>,
) -> Result<ClusterSetup, ScenarioError> {
    let f = &s.file;
    let intra = f.cluster.intra_node.clone().unwrap_or_default();
    if let Some(link) = intra.link {
        let usual = match gpu.intra_link {
            gpu::IntraLinkKind::NvSwitch => IntraLink::Nvswitch,
            gpu::IntraLinkKind::Mesh => IntraLink::NvlinkMesh,
            gpu::IntraLinkKind::Pcie => IntraLink::Pcie,
        };
        if link != usual && intra.bandwidth.is_none() {
            return Err(s
                .error_at(
                    "cluster.intra_node.link",
                    "a link other than the GPU's usual one needs its bandwidth",
                )
                .with_help(
                    "add cluster.intra_node.bandwidth, e.g. bandwidth = \"32 GB/s\" for PCIe Gen4",
                ));
        }
    }
    let intra_bandwidth = match intra.bandwidth {
        Some(b) => b.0,
        None => {
            if gpus_per_node > 1 {
                assumptions.push(format!(
                    "intra-node bandwidth {} GB/s per GPU per direction ({} datasheet)",
                    gpu.intra_bandwidth / 1e9,
                    gpu.name
                ));
            }
            gpu.intra_bandwidth
        }
    };
    let inter = f.cluster.inter_node.clone().unwrap_or_default();
    let mut topology_nodes = nodes;
    let nic_bandwidth = match (inter.nic_bandwidth, nodes) {
        (Some(b), _) => b.0,
        (None, 1) => 0.0,
        (None, _) if !inter_node => {
            topology_nodes = 1;
            0.0
        }
        (None, _) => {
            return Err(s
                .error_at(
                    "cluster.inter_node",
                    "a cluster of several nodes needs `nic_bandwidth` in [cluster.inter_node]",
                )
                .with_help("add [cluster.inter_node] with nic_bandwidth = \"400 Gb/s\""));
        }
    };
    let nics_per_node = match inter.nics_per_node {
        Some(n) => {
            let key = "cluster.inter_node.nics_per_node";
            let n = positive(s, n, key)?;
            if nodes > 1 {
                crate::net::topology::nic::check(gpus_per_node, n)
                    .map_err(|e| s.error_at(key, e.message))?;
            }
            n
        }
        None => {
            if nodes > 1 && gpus_per_node > 1 {
                assumptions.push(format!("{gpus_per_node} NICs per node (one per GPU)"));
            }
            gpus_per_node
        }
    };
    let transport = match inter.transport {
        Some(t) => t,
        None => {
            if topology_nodes > 1 {
                assumptions.push(
                    "between servers an RDMA fabric at InfiniBand's rate and latency, its flows \
                     hashed over equal paths (ECMP): `transport` not stated in \
                     [cluster.inter_node]"
                        .into(),
                );
            }
            Transport::default()
        }
    };
    let oversubscription = inter.oversubscription.unwrap_or(1.0);
    if !(oversubscription >= 1.0 && oversubscription.is_finite()) {
        return Err(s
            .error_at(
                "cluster.inter_node.oversubscription",
                format!("oversubscription {oversubscription} must be 1.0 (non-blocking) or more"),
            )
            .with_help("e.g. oversubscription = 4.0 for a 1:4 oversubscribed leaf"));
    }
    let fabric = Fabric {
        nodes: topology_nodes,
        gpus_per_node,
        intra_bandwidth,
        intra_latency: intra.latency.map_or(Fabric::INTRA_LATENCY_S, |d| d.secs()),
        nic_bandwidth,
        nics_per_node,
        oversubscription,
        inter_latency: inter.latency.map_or(transport.latency_s(), |d| d.secs()),
    };

    let tier = tier.unwrap_or_else(|| network_tier(s, assumptions));
    build(s, gpu, (nodes, fabric), tier, "cluster.inter_node")
}

/// The compute model of `g` on `[cluster]`: its calibration profile (and that profile's name),
/// attention kernel (`reference` where the scenario names none) and power limit; `sustained` as
/// `power_limit::apply` takes it.
pub(crate) fn compute_model(
    s: &Scenario,
    g: Arc<GpuSpec>,
    dtype: Dtype,
    (sustained, reference): (bool, Option<ReferenceKernel>),
    assumptions: &mut Vec<String>,
) -> Result<(ComputeModel, Option<String>), ScenarioError> {
    let profile = resolve_profile(s, &g, dtype, assumptions)?;
    let mut compute = with_profile(s, g, profile.as_ref())?;
    apply_attention_kernel(s, &mut compute, reference, assumptions)?;
    super::power_limit::apply(s, &mut compute, sustained, assumptions)?;
    Ok((compute, profile.map(|p| p.name)))
}

/// The attention kernel a workload's reference code runs where `[model] attention_kernel` is
/// silent, and why.
pub type ReferenceKernel = (crate::hw::attention_kernel::AttentionKernel, &'static str);

/// Applies `[model] attention_kernel` to `compute` (see `hw::attention_kernel`), recording the
/// figure used; a kernel without a figure for the GPU is an error at the key. Where the key is
/// silent, the `reference` kernel applies when it has a figure for the GPU, else the roofline's
/// default; either is recorded.
pub fn apply_attention_kernel(
    s: &Scenario,
    compute: &mut crate::hw::ComputeModel,
    reference: Option<ReferenceKernel>,
    assumptions: &mut Vec<String>,
) -> Result<(), ScenarioError> {
    let Some(kernel) = s.file.model.attention_kernel else {
        if let Some((kernel, why)) = reference {
            assumptions.push(match kernel.apply(compute) {
                Some(source) => format!("{} (not stated; {why}): {source}", kernel.name()),
                None => format!(
                    "the roofline's default attention efficiency: {} (not stated; {why}) has no \
                     figure on {}",
                    kernel.name(),
                    compute.gpu.name
                ),
            });
        }
        return Ok(());
    };
    match kernel.apply(compute) {
        Some(source) => {
            assumptions.push(source);
            Ok(())
        }
        None => Err(s
            .error_at(
                "model.attention_kernel",
                format!("no figure for {} on {}", kernel.name(), compute.gpu.name),
            )
            .with_help(
                "flash-attention-1 and -2 have figures for Ampere and Hopper GPUs, flash-attention-3 for \
                 Hopper (it runs there only), unfused runs anywhere; remove the key to use the \
                 roofline's default",
            )),
    }
}

/// The compute model of `gpu`: `profile`'s measurements first when there is one, the roofline
/// for the rest.
pub fn with_profile(
    s: &Scenario,
    gpu: Arc<GpuSpec>,
    profile: Option<&ComputeProfile>,
) -> Result<ComputeModel, ScenarioError> {
    match profile {
        Some(p) => ComputeModel::with_profile(gpu, p.profile.clone())
            .map_err(|e| s.error_at("cluster.profile", e.to_string())),
        None => Ok(ComputeModel::new(gpu)),
    }
}

/// `cluster.profile`: a shipped profile by name, or a profile file relative to the scenario.
/// Without it the roofline prices every kernel, and the assumptions say so.
pub fn resolve_profile(
    s: &Scenario,
    gpu: &GpuSpec,
    dtype: Dtype,
    assumptions: &mut Vec<String>,
) -> Result<Option<ComputeProfile>, ScenarioError> {
    let shipped = profile::shipped_names();
    let for_this_gpu = || profile::shipped_for(gpu);
    let Some(value) = &s.file.cluster.profile else {
        let available = for_this_gpu();
        assumptions.push(if available.is_empty() {
            "roofline compute tier (no calibration profile)".into()
        } else {
            format!(
                "roofline compute tier (no calibration profile; shipped for {}: {})",
                gpu.name,
                available.join(", ")
            )
        });
        return Ok(None);
    };
    let is_path = value.ends_with(".toml") || value.contains('/') || value.contains('\\');
    let profile = match profile::shipped_profile(value) {
        Some(p) => p,
        None if is_path => {
            let base = s.source.path.parent().unwrap_or(Path::new(""));
            crate::files::profile(&base.join(value)).map_err(|e| {
                s.error_at("cluster.profile", format!("cannot use the profile: {e}"))
                    .with_help("docs/PROFILES.md describes the format")
            })?
        }
        None => {
            let hint = suggest::closest(value, shipped.iter().copied())
                .map(|c| format!("did you mean \"{c}\"? "))
                .unwrap_or_default();
            return Err(s
                .error_at("cluster.profile", format!("unknown profile \"{value}\""))
                .with_help(format!(
                    "{hint}shipped profiles: {}; or a profile file ending in .toml, relative to \
                     the scenario",
                    shipped.join(", ")
                )));
        }
    };
    if profile.gpu != gpu.name {
        let available = for_this_gpu();
        let help = if available.is_empty() {
            format!(
                "no shipped profile was measured on {}; remove `profile` to price kernels by \
                 roofline, or measure one (docs/PROFILES.md)",
                gpu.name
            )
        } else {
            format!(
                "use a profile of {}: {}; or remove `profile`",
                gpu.name,
                available.join(", ")
            )
        };
        return Err(s
            .error_at(
                "cluster.profile",
                format!(
                    "profile \"{value}\" was measured on {}, but cluster.gpu is {}",
                    profile.gpu, gpu.name
                ),
            )
            .with_help(help));
    }
    match profile.gemm_dtype_for(gpu, dtype) {
        Some(d) if d == dtype => {}
        Some(d) => assumptions.push(format!(
            "{dtype} GEMMs priced from the profile's {d} measurements (same element size and \
             datasheet peak on {})",
            gpu.name
        )),
        None if !profile.gemm.is_empty() => assumptions.push(format!(
            "the profile has no GEMM measurements usable for {dtype}; the roofline prices GEMMs"
        )),
        None => {}
    }
    Ok(Some(ComputeProfile {
        name: value.clone(),
        profile: Arc::new(profile),
    }))
}
