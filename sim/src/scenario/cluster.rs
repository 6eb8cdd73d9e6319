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
