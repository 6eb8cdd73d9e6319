//! Lowering: a parsed scenario turned into the plain set-ups the workloads simulate. This layer
//! alone reads scenario sections below `run`: it applies each default (recorded as an assumption
//! with its source), places each refusal at its key's span, and hands the layers below owned
//! values (`workload::cluster::ClusterSetup`, `hw::host::HostSpec`, ...), never a `Scenario`.

pub(crate) mod accelerator;
pub(crate) mod capacity;
pub(crate) mod cluster;
pub mod collective;
pub(crate) mod compression;
pub(crate) mod cost;
pub mod diffusion;
pub mod federated;
pub(crate) mod host;
pub mod jobs;
pub mod kernels;
pub mod model;
pub(crate) mod power_limit;
pub(crate) mod reliability;
pub mod serving;
pub(crate) mod topology;
pub mod traffic;
pub mod training;

use crate::net::Topology;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;

/// The topology of `[cluster]` as a workload that does not lay ranks out builds it: the whole
/// cluster when it states its network between nodes, one node's worth otherwise. (A training
/// run's topology is `training::resolve`'s, which its layout decides.)
pub fn cluster_topology(s: &Scenario) -> Result<Topology, ScenarioError> {
    let mut notes = Vec::new();
    let whole = cluster::Needs {
        sizes: false,
        inter_node: true,
    };
    cluster::resolve(s, &mut notes, whole)
        .or_else(|_| {
            let one = cluster::Needs {
                inter_node: false,
                ..whole
            };
            cluster::resolve(s, &mut notes, one)
        })
        .map(|c| c.topology)
}
