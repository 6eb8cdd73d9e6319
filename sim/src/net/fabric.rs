//! The cluster's wiring as a scenario states it, before a topology is built: per-GPU intra-node
//! bandwidth and latency, NICs per node with their line rate, leaf oversubscription and the
//! inter-node latency. `topology::spec` turns it into a graph.

use super::transport::Transport;

/// Bandwidths in bytes/s per direction; latencies in seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Fabric {
    pub nodes: u32,
    pub gpus_per_node: u32,
    /// Per GPU, per direction.
    pub intra_bandwidth: f64,
    /// One-way latency between two GPUs of a node.
    pub intra_latency: f64,
    /// Per NIC, per direction.
    pub nic_bandwidth: f64,
    pub nics_per_node: u32,
    pub oversubscription: f64,
    /// One-way latency between two nodes on one leaf (NICs, cables, the switch).
    pub inter_latency: f64,
}

impl Fabric {
    /// One-way link latencies when a scenario gives none: 0.5 us between GPUs through NVSwitch and,
    /// between nodes through NICs and a leaf switch, the default transport's (InfiniBand's
    /// 2.5 us, `net::transport`). These are the wires' share; NCCL's
    /// per-step latencies (at least 0.47 us over NVLink and 2.7 us over the network for its LL
    /// protocol, `collective::protocol`) include them, and a step takes the larger of the two.
    pub const INTRA_LATENCY_S: f64 = 0.5e-6;
    pub const INTER_LATENCY_S: f64 = Transport::Infiniband.latency_s();

    pub fn gpus(&self) -> u32 {
        self.nodes * self.gpus_per_node
    }
}
