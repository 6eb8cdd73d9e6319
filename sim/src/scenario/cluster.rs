//! `[cluster]`: which GPUs, how many, and how they are wired.

use super::quantity::{Bandwidth, Duration};
use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSection {
    /// Catalog name or alias of the GPU (`clustersim list gpus`).
    pub gpu: Option<String>,
    pub nodes: Option<u32>,
    pub gpus_per_node: Option<u32>,
    pub intra_node: Option<IntraNodeSection>,
    pub inter_node: Option<InterNodeSection>,
    /// Calibration profile of measured kernel times that prices kernels before the roofline: a
    /// shipped profile's name (e.g. "h100-sxm5-80gb-vidur") or a profile file, relative to the
    /// scenario file (docs/PROFILES.md). Default: none, the roofline prices every kernel.
    pub profile: Option<String>,
}

/// Links inside one server. Defaults come from the GPU's usual server.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntraNodeSection {
    pub link: Option<IntraLink>,
    /// Per GPU, per direction.
    pub bandwidth: Option<Bandwidth>,
    /// One-way latency of a message between two GPUs of the server.
    pub latency: Option<Duration>,
    /// With `link = "nvlink-mesh"`: which GPUs NVLink joins (default `"full"`, every pair).
    pub mesh: Option<MeshShape>,
    /// Per GPU, per direction, of its PCIe link (to its NIC, to a PCIe switch). Default: the GPU's
    /// datasheet host-link bandwidth.
    pub pcie_bandwidth: Option<Bandwidth>,
}

/// Which GPUs of a server an NVLink mesh joins.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MeshShape {
    /// Every GPU to every other, its bandwidth split evenly over its peers.
    Full,
    /// GPUs 2i and 2i+1 joined by NVLink; pairs talk over PCIe through the host.
    Pairs,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IntraLink {
    Nvswitch,
    NvlinkMesh,
    Pcie,
}

/// Links between servers.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterNodeSection {
    pub topology: Option<Topology>,
    /// Per NIC, per direction.
    pub nic_bandwidth: Option<Bandwidth>,
    pub nics_per_node: Option<u32>,
    /// Ratio of downlink to uplink capacity at the leaf switches (1.0 = non-blocking).
    pub oversubscription: Option<f64>,
    /// One-way latency of a message between two servers (NIC, switches and cables).
    pub latency: Option<Duration>,
    /// NIC ports one leaf switch serves (default 32).
    pub leaf_downlinks: Option<u32>,
    /// Spine switches per pod (default: one per leaf uplink port, downlinks / oversubscription).
    pub spines: Option<u32>,
    /// Fat-tree and rail-optimized: number of pods, each with its own leaves and spines, joined by
    /// a core layer (default 1, no core).
    pub pods: Option<u32>,
    /// Ratio of a pod spine's downlink to its uplink capacity towards the core (default 1.0).
    pub pod_oversubscription: Option<f64>,
    /// Torus: nodes along each dimension, e.g. `[4, 4]` (default: the most square factorisation of
    /// the node count).
    pub torus_dims: Option<Vec<u32>>,
    /// Torus: bandwidth of each router-to-router link, per direction (default: the node's NIC
    /// bandwidth spread over its 2 x dimensions torus ports).
    pub torus_link_bandwidth: Option<Bandwidth>,
    /// Wan: number of sites the nodes are split into (default 2).
    pub sites: Option<u32>,
    /// Wan: bandwidth of the link between two sites, per direction (default 400 Gb/s).
    pub wan_bandwidth: Option<Bandwidth>,
    /// Wan: one-way latency of the link between two sites (default 1 ms, about 200 km of fibre).
    pub wan_latency: Option<Duration>,
    /// Graph: the TOML file listing devices and links, relative to the scenario file.
    pub graph_file: Option<String>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    FatTree,
    RailOptimized,
    #[serde(rename = "torus-2d")]
    Torus2d,
    #[serde(rename = "torus-3d")]
    Torus3d,
    Wan,
    Graph,
}

impl Topology {
    pub fn name(self) -> &'static str {
        match self {
            Topology::FatTree => "fat-tree",
            Topology::RailOptimized => "rail-optimized",
            Topology::Torus2d => "torus-2d",
            Topology::Torus3d => "torus-3d",
            Topology::Wan => "wan",
            Topology::Graph => "graph",
        }
    }
}
