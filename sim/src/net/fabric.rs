//! The cluster's wiring as the analytical tier sees it: two levels, inside a server and between
//! servers, each with a bandwidth, a latency and the fraction of line rate that collectives achieve.
//!
//! Modelled: per-GPU intra-server bandwidth (NVSwitch, NVLink, PCIe), NICs per server and their line
//! rate, leaf oversubscription (dividing inter-server bandwidth), one latency per level. Ignored here:
//! contention between simultaneous collectives, routing, and the shape of the inter-server
//! topology beyond oversubscription; the flow-level tier models those.

/// Bandwidths in bytes/s per direction; latencies in seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Fabric {
    pub nodes: u32,
    pub gpus_per_node: u32,
    /// Per GPU, per direction.
    pub intra_bandwidth: f64,
    pub intra_latency: f64,
    /// Fraction of intra-server line rate a collective's data transfer achieves.
    pub intra_efficiency: f64,
    /// Per NIC, per direction.
    pub nic_bandwidth: f64,
    pub nics_per_node: u32,
    pub oversubscription: f64,
    pub inter_latency: f64,
    pub inter_efficiency: f64,
}

impl Fabric {
    /// First estimates of the achieved fraction of line rate, shared by every case:
    /// NCCL's ring all-reduce on 8 H100 behind NVSwitch reaches about 367 GB/s bus bandwidth of
    /// 450 GB/s per direction (NVIDIA's published nccl-tests figures), 0.82; InfiniBand and RoCE
    /// transfers of large messages reach about 0.92 of line rate after headers and flow control.
    pub const NVLINK_EFFICIENCY: f64 = 0.82;
    pub const NETWORK_EFFICIENCY: f64 = 0.92;
    /// Per-step latencies of a collective: about 1.5 us through NVSwitch and 5 us through NICs and a
    /// leaf switch (first estimates from small-message nccl-tests latencies).
    pub const INTRA_LATENCY_S: f64 = 1.5e-6;
    pub const INTER_LATENCY_S: f64 = 5e-6;

    pub fn gpus(&self) -> u32 {
        self.nodes * self.gpus_per_node
    }

    /// Bandwidth one ring crossing servers gets per direction, when `per_node` GPUs of each server
    /// take part: each GPU drives its own NIC (rail), so up to `nics_per_node` NICs carry the
    /// ring's channels, divided by the leaf oversubscription.
    pub fn inter_bandwidth(&self, per_node: u32) -> f64 {
        let nics = per_node.min(self.nics_per_node).max(1) as f64;
        nics * self.nic_bandwidth * self.inter_efficiency / self.oversubscription
    }
}

/// Where the members of a communicator sit.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GroupShape {
    pub size: u32,
    /// Servers the group spans.
    pub nodes: u32,
    /// Most members on any one server.
    pub per_node: u32,
}

impl GroupShape {
    /// The shape of a group of global ranks (rank r sits on server r / gpus_per_node).
    pub fn of(ranks: &[u32], gpus_per_node: u32) -> GroupShape {
        let mut nodes: Vec<u32> = ranks.iter().map(|r| r / gpus_per_node).collect();
        nodes.sort_unstable();
        let mut per_node = 0;
        let mut distinct = 0;
        let mut i = 0;
        while i < nodes.len() {
            let j = nodes[i..].iter().take_while(|&&n| n == nodes[i]).count();
            per_node = per_node.max(j as u32);
            distinct += 1;
            i += j;
        }
        GroupShape {
            size: ranks.len() as u32,
            nodes: distinct,
            per_node,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_shapes() {
        let g = GroupShape::of(&(0..16).collect::<Vec<_>>(), 8);
        assert_eq!((g.size, g.nodes, g.per_node), (16, 2, 8));
        let strided: Vec<u32> = (0..4).map(|i| i * 8).collect();
        let g = GroupShape::of(&strided, 8);
        assert_eq!((g.size, g.nodes, g.per_node), (4, 4, 1));
    }
}
