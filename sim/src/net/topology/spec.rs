//! What to build: [`TopologySpec`], a plain description of the cluster's wiring
//! (`scenario/lower/topology.rs` reads it from a scenario's `[cluster]` section).
//!
//! Units: bandwidths in bytes/s per direction, latencies in seconds. Defaults ([`TopologySpec::new`])
//! describe an H100 HGX server (NVSwitch, 450 GB/s per GPU, 8 NICs of 400 Gb/s) on a
//! non-blocking fat-tree.

use super::refusal::Refusal;
use crate::net::{Fabric, Transport};
use serde::Deserialize;
use std::path::PathBuf;

/// How the GPUs of one server are joined.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IntraKind {
    /// One up/down link pair per GPU to a non-blocking NVSwitch vertex.
    NvSwitch,
    /// Direct GPU-GPU NVLinks between every pair, each GPU's bandwidth split over its peers.
    NvLinkMesh,
    /// GPUs 2i and 2i+1 joined by NVLink; pairs talk over PCIe through the host.
    NvLinkPairs,
    /// PCIe only: two GPUs per PCIe switch, switches under the host.
    Pcie,
}

/// How servers are joined.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum InterKind {
    FatTree,
    RailOptimized,
    Torus2d,
    Torus3d,
    Wan,
    /// An explicit graph file; replaces the intra-node part too.
    Graph,
}

impl InterKind {
    /// Leaf/spine switching in one pod or several: a fat tree or a rail-optimized network.
    pub fn is_clos(self) -> bool {
        matches!(self, InterKind::FatTree | InterKind::RailOptimized)
    }

    /// Whether a flow's path is picked among equal ones (`routing` chooses how): a leaf/spine
    /// network, or a WAN's sites, each a fat tree.
    pub fn has_leaves_and_spines(self) -> bool {
        self.is_clos() || self == InterKind::Wan
    }

    pub fn name(self) -> &'static str {
        match self {
            InterKind::FatTree => "fat-tree",
            InterKind::RailOptimized => "rail-optimized",
            InterKind::Torus2d => "torus-2d",
            InterKind::Torus3d => "torus-3d",
            InterKind::Wan => "wan",
            InterKind::Graph => "graph",
        }
    }
}

impl IntraKind {
    pub fn name(self) -> &'static str {
        match self {
            IntraKind::NvSwitch => "nvswitch",
            IntraKind::NvLinkMesh => "nvlink-mesh",
            IntraKind::NvLinkPairs => "nvlink-pairs",
            IntraKind::Pcie => "pcie",
        }
    }
}

/// Where an explicit graph comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum GraphSource {
    /// A graph file's text, and the path it was read from (for messages).
    File { path: PathBuf, text: String },
    /// The file's text itself (tests, generated graphs).
    Inline(String),
}

/// How the switches of a leaf/spine (Clos) network choose among equal uplinks, which decides
/// whether two flows of a collective share a link on the way.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PathSelection {
    /// Ethernet's equal-cost multi-path: a fixed hash of each flow's (source, destination) ranks
    /// picks the spine (and core), so some flows land on the same link whatever the traffic's
    /// pattern (as RoCE fabrics hash a connection's packets).
    Ecmp,
    /// By destination, as an InfiniBand subnet manager fills the switches' forwarding tables
    /// (one path per destination, fat-tree routing spreading the destinations over the
    /// uplinks): the spine is the destination NIC's port on its leaf modulo the spines, and the
    /// core its leaf modulo the cores. Traffic into one leaf never shares a spine's downlink
    /// when there are as many spines as leaf ports; traffic out of a leaf shares an uplink only
    /// when its destinations share a port number.
    Destination,
    /// Every flow's packets spread over all the equal paths (AWS EFA's SRD; adaptive routing),
    /// so that flows do not pile onto one spine as hashing makes them: stood for by the
    /// per-destination choice, which keeps a permutation's flows on distinct spines.
    Spray,
}

/// The most GPUs (and NICs) a topology is built for: 2^18, above the largest clusters built so
/// far. Every device and link is built, and a collective over all of them is routed transfer by
/// transfer (about 6 s and 2 GB at 2^18 GPUs).
pub const MAX_GPUS: u64 = 1 << 18;

/// The most GPUs in one node (one NVLink or PCIe domain).
pub const MAX_GPUS_PER_NODE: u32 = 1_024;

/// Everything [`Topology::build`](super::Topology::build) needs. Bandwidths are bytes/s per
/// direction, latencies seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct TopologySpec {
    pub nodes: u32,
    pub gpus_per_node: u32,

    pub intra: IntraKind,
    /// Per GPU: to its NVSwitch, or in total over its mesh links.
    pub intra_bandwidth: f64,
    /// GPU to GPU inside a server.
    pub intra_latency: f64,
    /// The fraction of the intra-node line rate bulk transfers reach there, where the GPU's link
    /// states its own (`GpuSpec::intra_efficiency`); None: NVLink's (`tier::Efficiency`).
    pub intra_efficiency: Option<f64>,
    /// Per GPU: its PCIe link to a PCIe switch or to its NIC.
    pub pcie_bandwidth: f64,
    /// Per GPU: the rate its kernels stream a local copy at, bytes/s of traffic (memory bandwidth
    /// x the device's memory fraction, `GpuSpec::copy_bandwidth`): the copies that end some
    /// collectives (`collective::buffer_copy`).
    pub gpu_copy_bandwidth: f64,

    pub inter: InterKind,
    /// Per NIC.
    pub nic_bandwidth: f64,
    pub nics_per_node: u32,
    /// Leaf downlink capacity over uplink capacity (1.0 = non-blocking).
    pub oversubscription: f64,
    /// Server to server through one leaf (or to the neighbouring torus router).
    pub inter_latency: f64,
    /// Added by every hop between switches (leaf-spine, spine-core, router-router).
    pub switch_latency: f64,
    /// NIC ports per leaf switch.
    pub leaf_downlinks: u32,
    /// Spine switches per pod; `None`: one per leaf uplink port, ceil(leaf_downlinks / oversubscription).
    pub spines: Option<u32>,
    /// How a Clos network's switches choose among their equal uplinks.
    pub routing: PathSelection,
    /// What carries the NICs' traffic: the share of line rate the network links achieve.
    pub transport: Transport,
    /// Pods of a fat-tree or rail-optimized network (1 = no core layer).
    pub pods: u32,
    /// Pod spine downlink capacity over uplink capacity to the core.
    pub pod_oversubscription: f64,
    /// Nodes along each torus dimension; `None`: the most square (cubic) factorisation.
    pub torus_dims: Option<Vec<u32>>,
    /// Each torus router-to-router link; `None`: nics_per_node x nic_bandwidth / (2 x dimensions).
    pub torus_link_bandwidth: Option<f64>,
    /// WAN sites.
    pub sites: u32,
    pub wan_bandwidth: f64,
    pub wan_latency: f64,
    /// Required by [`InterKind::Graph`].
    pub graph: Option<GraphSource>,
}

/// Default PCIe bandwidth per GPU: PCIe Gen5 x16, about 64 GB/s per direction.
pub const DEFAULT_PCIE_BANDWIDTH: f64 = 64e9;
/// The copy rate of `new`'s GPU, an H100 SXM: 0.85 of its 3.35 TB/s (datasheet), bytes/s.
pub const DEFAULT_GPU_COPY_BANDWIDTH: f64 = 0.85 * 3350e9;
/// Default leaf radix towards NICs.
pub const DEFAULT_LEAF_DOWNLINKS: u32 = 32;
/// Default latency per switch-to-switch hop: a switch traversal and a few metres of cable.
pub const DEFAULT_SWITCH_LATENCY_S: f64 = 0.25e-6;
/// Default WAN link: 400 Gb/s.
pub const DEFAULT_WAN_BANDWIDTH: f64 = 50e9;
/// Default WAN latency: about 200 km of fibre at 5 us/km.
pub const DEFAULT_WAN_LATENCY_S: f64 = 1e-3;

impl TopologySpec {
    /// An H100 HGX cluster of `nodes` x `gpus_per_node` on a non-blocking fat-tree.
    pub fn new(nodes: u32, gpus_per_node: u32) -> TopologySpec {
        TopologySpec {
            nodes,
            gpus_per_node,
            intra: IntraKind::NvSwitch,
            intra_bandwidth: 450e9,
            intra_latency: Fabric::INTRA_LATENCY_S,
            intra_efficiency: None,
            pcie_bandwidth: DEFAULT_PCIE_BANDWIDTH,
            gpu_copy_bandwidth: DEFAULT_GPU_COPY_BANDWIDTH,
            inter: InterKind::FatTree,
            nic_bandwidth: 50e9,
            nics_per_node: gpus_per_node,
            oversubscription: 1.0,
            inter_latency: Fabric::INTER_LATENCY_S,
            switch_latency: DEFAULT_SWITCH_LATENCY_S,
            leaf_downlinks: DEFAULT_LEAF_DOWNLINKS,
            spines: None,
            routing: PathSelection::Ecmp,
            transport: Transport::Infiniband,
            pods: 1,
            pod_oversubscription: 1.0,
            torus_dims: None,
            torus_link_bandwidth: None,
            sites: 2,
            wan_bandwidth: DEFAULT_WAN_BANDWIDTH,
            wan_latency: DEFAULT_WAN_LATENCY_S,
            graph: None,
        }
    }

    /// The spec of an analytical [`Fabric`] (its sizes, bandwidths and latencies), with `intra`
    /// and `inter` wiring and the defaults of [`TopologySpec::new`] for the rest.
    pub fn from_fabric(f: &Fabric, intra: IntraKind, inter: InterKind) -> TopologySpec {
        TopologySpec {
            intra,
            intra_bandwidth: f.intra_bandwidth,
            intra_latency: f.intra_latency,
            inter,
            nic_bandwidth: f.nic_bandwidth,
            nics_per_node: f.nics_per_node,
            oversubscription: f.oversubscription,
            inter_latency: f.inter_latency,
            ..TopologySpec::new(f.nodes, f.gpus_per_node)
        }
    }

    /// A readable name, e.g. "nvswitch + rail-optimized (4 pods)".
    pub fn name(&self) -> String {
        if self.inter == InterKind::Graph {
            return "graph".to_string();
        }
        let mut s = format!("{} + {}", self.intra.name(), self.inter.name());
        if self.pods > 1 && self.inter.is_clos() {
            s += &format!(" ({} pods)", self.pods);
        }
        if self.inter == InterKind::Wan {
            s += &format!(" ({} sites)", self.sites);
        }
        match self.routing {
            _ if self.nodes < 2 || !self.inter.has_leaves_and_spines() => {}
            PathSelection::Ecmp => {}
            PathSelection::Destination => s += ", routed by destination",
            PathSelection::Spray => s += ", sprayed over every path",
        }
        s
    }

    /// Checks what every builder relies on; each builder checks its own shape.
    pub fn validate(&self) -> Result<(), Refusal> {
        if self.nodes == 0 || self.gpus_per_node == 0 {
            return Err(Refusal::shape(format!(
                "a cluster needs at least one node of at least one GPU, not {} x {}",
                self.nodes, self.gpus_per_node
            )));
        }
        if self.gpus_per_node > MAX_GPUS_PER_NODE {
            return Err(Refusal::shape(format!(
                "{} GPUs in a node; a node holds at most {MAX_GPUS_PER_NODE}",
                self.gpus_per_node
            )));
        }
        let gpus = self.nodes as u64 * self.gpus_per_node as u64;
        if gpus > MAX_GPUS {
            return Err(Refusal::shape(format!(
                "{gpus} GPUs ({} x {}); the topology is built device by device, for at most \
                 {MAX_GPUS} GPUs",
                self.nodes, self.gpus_per_node
            )));
        }
        let nics = self.nodes as u64 * self.nics_per_node as u64;
        if self.nodes > 1 && nics > MAX_GPUS {
            return Err(Refusal::shape(format!(
                "{nics} NICs ({} x {}); the topology is built device by device, for at most \
                 {MAX_GPUS} NICs",
                self.nodes, self.nics_per_node
            )));
        }
        if self.inter == InterKind::Graph {
            return match self.graph {
                Some(_) => Ok(()),
                None => Err(Refusal::shape(
                    "a graph topology needs a graph file".to_string(),
                )),
            };
        }
        let positive = |what: &str, v: f64| {
            if v > 0.0 && v.is_finite() {
                Ok(())
            } else {
                Err(Refusal::shape(format!(
                    "{what} must be positive and finite, not {v}"
                )))
            }
        };
        let non_negative = |what: &str, v: f64| {
            if v >= 0.0 && v.is_finite() {
                Ok(())
            } else {
                Err(Refusal::shape(format!(
                    "{what} must be non-negative and finite, not {v}"
                )))
            }
        };
        if self.gpus_per_node > 1 {
            positive("the intra-node bandwidth", self.intra_bandwidth)?;
        }
        non_negative("the intra-node latency", self.intra_latency)?;
        if matches!(self.intra, IntraKind::Pcie | IntraKind::NvLinkPairs) || self.nodes > 1 {
            positive("the PCIe bandwidth", self.pcie_bandwidth)?;
        }
        if self.nodes == 1 {
            return Ok(());
        }
        positive("the NIC bandwidth", self.nic_bandwidth)?;
        if self.nics_per_node == 0 {
            return Err(Refusal::shape(
                "a cluster of several nodes needs at least one NIC per node".to_string(),
            ));
        }
        super::nic::check(self.gpus_per_node, self.nics_per_node)?;
        if !(self.oversubscription >= 1.0 && self.oversubscription.is_finite()) {
            return Err(Refusal::shape(format!(
                "oversubscription {} must be 1.0 (non-blocking) or more",
                self.oversubscription
            )));
        }
        if !(self.pod_oversubscription >= 1.0 && self.pod_oversubscription.is_finite()) {
            return Err(Refusal::shape(format!(
                "pod_oversubscription {} must be 1.0 (non-blocking) or more",
                self.pod_oversubscription
            )));
        }
        non_negative("the inter-node latency", self.inter_latency)?;
        non_negative("the switch latency", self.switch_latency)?;
        if self.leaf_downlinks == 0 {
            return Err(Refusal::shape(
                "a leaf switch needs at least one downlink".to_string(),
            ));
        }
        if self.spines == Some(0) {
            return Err(Refusal::shape(
                "spines = 0: a pod of several leaves needs at least one spine".to_string(),
            ));
        }
        if self.pods == 0 {
            return Err(Refusal::shape("pods must be at least 1".to_string()));
        }
        if self.inter.is_clos() && self.pods > self.nodes {
            return Err(Refusal::shape(format!(
                "{} pods need at least {} nodes, the cluster has {}",
                self.pods, self.pods, self.nodes
            )));
        }
        if self.inter == InterKind::Wan {
            if self.sites < 2 {
                return Err(Refusal::shape(format!(
                    "a WAN needs at least 2 sites, not {}",
                    self.sites
                )));
            }
            if self.sites > self.nodes {
                return Err(Refusal::shape(format!(
                    "{} sites need at least {} nodes, the cluster has {}",
                    self.sites, self.sites, self.nodes
                )));
            }
            positive("the WAN bandwidth", self.wan_bandwidth)?;
            non_negative("the WAN latency", self.wan_latency)?;
        }
        if let Some(b) = self.torus_link_bandwidth {
            positive("the torus link bandwidth", b)?;
        }
        Ok(())
    }
}

/// Splits `n` things into `parts` contiguous blocks whose sizes differ by at most one: block `i`
/// is `start(i)..start(i + 1)`.
pub(crate) fn block_start(n: u32, parts: u32, i: u32) -> u32 {
    (n as u64 * i as u64 / parts as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_balanced() {
        let sizes: Vec<u32> = (0..3)
            .map(|i| block_start(10, 3, i + 1) - block_start(10, 3, i))
            .collect();
        assert_eq!(sizes, vec![3, 3, 4]);
    }
}
