//! Lowering: a parsed scenario turned into the plain set-ups the workloads simulate. This layer
//! alone reads scenario sections below `run`: it applies each default (recorded as an assumption
//! with its source), places each refusal at its key's span, and hands the layers below owned
//! values (`workload::cluster::ClusterSetup`, `hw::host::HostSpec`, ...), never a `Scenario`.

pub mod accelerator;
pub mod capacity;
pub mod cluster;
pub mod collective;
pub mod compression;
pub mod cost;
pub mod diffusion;
pub mod federated;
pub mod host;
pub mod kernels;
pub mod model;
pub mod power_limit;
pub mod reliability;
pub mod serving;
pub mod topology;
pub mod traffic;
pub mod training;
