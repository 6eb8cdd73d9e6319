//! NICs: `nics_per_node` network ports per server, rail-aligned. Local GPU `i` uses NIC
//! `i * nics_per_node / gpus_per_node` of its server (with one NIC per GPU, GPU i owns NIC i; with
//! 4 NICs for 8 GPUs, GPUs 0-1 share NIC 0, ...). NIC `k` of node `n` has the global index
//! `n * nics_per_node + k`, which the inter-node builders wire to their switches.
//!
//! Modelled: each GPU's PCIe link to its NIC (`pcie_bandwidth` per direction, latency 0: the NIC's
//! share of the latency is inside `inter_latency`, put on the NIC's network link). A NIC shared by
//! several GPUs has one PCIe link per GPU. Deliberately ignored: the PCIe switch between GPU and NIC
//! (the NIC hangs directly off its GPUs), GPUDirect RDMA versus bounce buffers, a GPU using more
//! than one NIC (with more NICs than GPUs, the extra NICs are built but carry no route).

use super::spec::TopologySpec;
use super::{Builder, DeviceKind, LinkKind};
use petgraph::graph::{EdgeIndex, NodeIndex};

#[derive(Clone, Debug)]
pub(crate) struct Nics {
    pub per_node: u32,
    /// Global NIC index of each GPU's NIC, by rank.
    pub of_gpu: Vec<u32>,
    /// GPU -> NIC and NIC -> GPU, by rank.
    pub up: Vec<EdgeIndex>,
    pub down: Vec<EdgeIndex>,
    /// NIC vertices by global index.
    pub vertices: Vec<NodeIndex>,
}

/// The local NIC of local GPU `gpu`.
pub fn nic_of(gpu: u32, gpus_per_node: u32, nics_per_node: u32) -> u32 {
    (gpu as u64 * nics_per_node as u64 / gpus_per_node as u64) as u32
}

pub(crate) fn build(b: &mut Builder, spec: &TopologySpec) -> Nics {
    let (g, k) = (spec.gpus_per_node, spec.nics_per_node);
    let total = (spec.nodes * g) as usize;
    let mut n = Nics {
        per_node: k,
        of_gpu: Vec::with_capacity(total),
        up: Vec::with_capacity(total),
        down: Vec::with_capacity(total),
        vertices: Vec::with_capacity((spec.nodes * k) as usize),
    };
    for node in 0..spec.nodes {
        for nic in 0..k {
            let v = b.device(DeviceKind::Nic, format!("node{node}/nic{nic}"), Some(node));
            n.vertices.push(v);
        }
        for local in 0..g {
            let rank = node * g + local;
            let nic = node * k + nic_of(local, g, k);
            let (u, d) = b.link(
                b.gpus[rank as usize],
                n.vertices[nic as usize],
                LinkKind::Pcie,
                spec.pcie_bandwidth,
                0.0,
            );
            n.of_gpu.push(nic);
            n.up.push(u);
            n.down.push(d);
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rail_aligned() {
        let of = |k| (0..8).map(|i| nic_of(i, 8, k)).collect::<Vec<_>>();
        assert_eq!(of(8), [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(of(4), [0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(of(1), [0; 8]);
        assert_eq!(of(16), [0, 2, 4, 6, 8, 10, 12, 14]);
    }
}
