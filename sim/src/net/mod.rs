//! The network: how bytes move between GPUs. `topology` builds the cluster's graph and routes;
//! `tier` prices phases of transfers with the analytical or the flow-level (`flow`) model;
//! `fabric` is the two-level summary the training workload's closed-form pricing reads;
//! `transport` the link profile between servers (InfiniBand, RoCE, EFA, TCPX).

pub(crate) mod fabric;
pub(crate) mod flow;
pub mod tier;
pub mod topology;
pub(crate) mod transport;

pub use fabric::Fabric;
pub use topology::Topology;
pub use transport::Transport;
