//! Workloads: what runs on the cluster, expressed as operations (compute with FLOPs and bytes,
//! collectives over groups of ranks). Workloads never see link speeds; the pricing layers do.

pub mod cluster;
pub mod collective;
pub mod compression;
pub mod cost;
pub mod diffusion;
pub mod federated;
pub mod jobs;
pub mod kernels;
pub mod serving;
pub mod training;
