//! The cluster a workload runs on, as the lowering layer (`scenario/lower/cluster.rs`) resolves it:
//! the GPU, the node count and size, the fabric, the topology and the network tier that prices
//! transfers on it, and the calibration profile when one is named. Plain values; no defaults here.

use crate::hw::GpuSpec;
use crate::hw::profile::Profile;
use crate::net::Fabric;
use crate::net::Topology;
use crate::net::tier::Tier;
use crate::net::topology::spec::TopologySpec;
use std::sync::Arc;

/// A cluster, resolved.
#[derive(Clone, Debug)]
pub struct ClusterSetup {
    pub gpu: Arc<GpuSpec>,
    pub nodes: u32,
    pub gpus_per_node: u32,
    pub fabric: Fabric,
    pub spec: TopologySpec,
    pub topology: Topology,
    /// Network tier that prices transfers.
    pub tier: Tier,
    /// Whether the NVSwitches can reduce in the switch (NCCL's NVLS).
    pub in_switch_reduction: bool,
}

/// The blocks a collective holds on each `gpu` of servers joined by `intra`
/// (`collective::collective_blocks`), and the rate the kernels beside it keep
/// (`exec::Contention`); `None` where the GPU has too few SMs to share.
pub fn collective_contention(
    intra: crate::net::topology::IntraKind,
    gpu: &GpuSpec,
) -> (u32, Option<crate::exec::Contention>) {
    let blocks = crate::collective::collective_blocks(intra);
    (
        blocks,
        crate::exec::Contention::of_blocks(blocks, gpu.multiprocessors),
    )
}

/// A calibration profile and the name it was given by.
#[derive(Clone, Debug)]
pub struct ComputeProfile {
    /// `cluster.profile` as written: a shipped profile's name or a file path.
    pub name: String,
    pub profile: Arc<Profile>,
}
