//! NICs: `nics_per_node` network ports per server, rail-aligned, each GPU using the NICs its PCIe
//! switch holds. With k NICs for g GPUs:
//! - k >= g (k a multiple of g): local GPU `i` owns NICs `i * k / g ..` (`k / g` of them, its
//!   *lanes*), as on servers with two or four NICs per GPU (AWS p5en, p5); a transfer between
//!   servers is spread evenly over its GPU's lanes, lane j of one GPU talking to lane j of the
//!   other (NCCL spreads its channels over every NIC, so the bandwidths add up);
//! - k < g (g a multiple of k): GPUs `i * k / g` share a NIC (with 4 NICs for 8 GPUs, GPUs 0-1
//!   share NIC 0, ...), each over its own PCIe link to it.
//!
//! NIC `k` of node `n` has the global index `n * nics_per_node + k`, which the inter-node builders
//! wire to their switches. Modelled: the GPU's PCIe link to its NICs (`pcie_bandwidth` per
//! direction, split evenly over its lanes, as the lanes share the GPU's link to its PCIe switch;
//! latency 0: the NIC's share of the latency is inside `inter_latency`, put on the NIC's network
//! link). Ignored: the PCIe switch itself, GPUDirect RDMA versus bounce buffers.

use super::refusal::Refusal;
use super::spec::TopologySpec;
use super::{Builder, DeviceKind, LinkKind};
use petgraph::graph::{EdgeIndex, NodeIndex};

#[derive(Clone, Debug)]
pub(crate) struct Nics {
    pub per_node: u32,
    /// NICs each GPU spreads its traffic over (1 when GPUs share or own one NIC).
    pub lanes: u32,
    /// Global NIC index of each GPU's first NIC, by rank.
    pub of_gpu: Vec<u32>,
    /// GPU -> NIC and NIC -> GPU, by rank x lanes + lane.
    pub up: Vec<EdgeIndex>,
    pub down: Vec<EdgeIndex>,
    /// NIC vertices by global index.
    pub vertices: Vec<NodeIndex>,
}

impl Nics {
    /// The global index of the NIC that `lane` of GPU `rank` uses, and its up and down links.
    pub fn lane(&self, rank: u32, lane: u32) -> (u32, EdgeIndex, EdgeIndex) {
        let l = lane % self.lanes;
        let at = (rank * self.lanes + l) as usize;
        (self.of_gpu[rank as usize] + l, self.up[at], self.down[at])
    }
}

/// The local NIC of local GPU `gpu` (its first, when it owns several).
pub fn nic_of(gpu: u32, gpus_per_node: u32, nics_per_node: u32) -> u32 {
    (gpu as u64 * nics_per_node as u64 / gpus_per_node as u64) as u32
}

/// NICs a GPU spreads its traffic over: `nics_per_node / gpus_per_node`, at least 1.
pub fn lanes(gpus_per_node: u32, nics_per_node: u32) -> u32 {
    (nics_per_node / gpus_per_node.max(1)).max(1)
}

/// Why `nics_per_node` NICs cannot be shared among `gpus_per_node` GPUs, if they cannot: one
/// count must divide the other, so that every GPU has the same share.
/// NICs one GPU spreads its traffic over at most: twice the four of the densest servers built
/// (AWS p5: 32 NICs for 8 GPUs). Every transfer between servers is a flow per lane.
pub const MAX_LANES: u32 = 8;

pub fn check(gpus_per_node: u32, nics_per_node: u32) -> Result<(), Refusal> {
    let (g, k) = (gpus_per_node.max(1), nics_per_node);
    if k as u64 > MAX_LANES as u64 * g as u64 {
        return Err(Refusal::nics(format!(
            "{k} NICs for {g} GPUs a node: a GPU spreads its traffic over at most {MAX_LANES} NICs \
             ({} a node)",
            MAX_LANES as u64 * g as u64
        )));
    }
    if k == 0 || (k >= g && k % g == 0) || (k < g && g % k == 0) {
        return Ok(());
    }
    let mut valid: Vec<u32> = (1..=g).filter(|d| g % d == 0).collect();
    valid.extend([2 * g, 4 * g]);
    let valid: Vec<String> = valid.iter().map(u32::to_string).collect();
    Err(Refusal::nics(format!(
        "{k} NICs do not divide among {g} GPUs a node (each GPU uses the NICs its PCIe switch \
         holds, so one count must divide the other): valid counts are {}, ...",
        valid.join(", ")
    )))
}

pub(crate) fn build(b: &mut Builder, spec: &TopologySpec) -> Nics {
    let (g, k) = (spec.gpus_per_node, spec.nics_per_node);
    let m = lanes(g, k);
    let total = (spec.nodes * g) as usize;
    let mut n = Nics {
        per_node: k,
        lanes: m,
        of_gpu: Vec::with_capacity(total),
        up: Vec::with_capacity(total * m as usize),
        down: Vec::with_capacity(total * m as usize),
        vertices: Vec::with_capacity((spec.nodes * k) as usize),
    };
    for node in 0..spec.nodes {
        for nic in 0..k {
            let v = b.device(DeviceKind::Nic, format!("node{node}/nic{nic}"), Some(node));
            n.vertices.push(v);
        }
        for local in 0..g {
            let rank = node * g + local;
            let first = node * k + nic_of(local, g, k);
            for lane in 0..m {
                let (u, d) = b.link(
                    b.gpus[rank as usize],
                    n.vertices[(first + lane) as usize],
                    LinkKind::Pcie,
                    spec.pcie_bandwidth / m as f64,
                    0.0,
                );
                n.up.push(u);
                n.down.push(d);
            }
            n.of_gpu.push(first);
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
        assert_eq!(
            [lanes(8, 16), lanes(8, 32), lanes(8, 8), lanes(8, 4)],
            [2, 4, 1, 1]
        );
    }

    #[test]
    fn counts_that_do_not_divide_are_refused_naming_valid_ones() {
        for (g, k) in [(8, 8), (8, 16), (8, 32), (8, 4), (8, 1), (4, 2), (1, 4)] {
            assert!(check(g, k).is_ok(), "{g} GPUs, {k} NICs");
        }
        for (g, k) in [(8, 12), (8, 3), (8, 6), (4, 6)] {
            let e = check(g, k).unwrap_err();
            assert_eq!(e.part, super::super::Part::Nics);
            let e = e.message;
            assert!(
                e.contains(&format!("{k} NICs")) && e.contains("valid counts"),
                "{e}"
            );
        }
        assert!(
            check(8, 12)
                .unwrap_err()
                .message
                .contains("1, 2, 4, 8, 16, 32")
        );
    }
}
