//! PCIe-only servers (L4, L40S, A100-PCIe boxes): GPUs on PCIe switches under the host's root
//! complex. GPUs 2i and 2i+1 share PCIe switch i; every switch has one link to the host vertex;
//! traffic between GPUs of different switches goes GPU -> switch -> host -> switch -> GPU.
//!
//! Modelled: each GPU's PCIe link and each switch's single uplink to the host, both at
//! `intra_bandwidth` (one x16 link: the two GPUs of a switch share its uplink), each hop
//! `intra_latency / 2` (so GPUs on one switch are `intra_latency` apart, across the host twice
//! that). Also used, at `pcie_bandwidth`, under the NVLink pairs of
//! [`nvlink_mesh`](super::nvlink_mesh). Deliberately ignored: CPU sockets and the inter-socket
//! link (one host vertex per server), PCIe protocol overheads, peer-to-peer being disabled by
//! some platforms (traffic through the host is always allowed). Units: bytes/s per direction,
//! seconds.

use super::spec::TopologySpec;
use super::{Builder, DeviceKind, LinkKind};
use petgraph::graph::{EdgeIndex, NodeIndex};

/// GPUs per PCIe switch.
pub const GPUS_PER_SWITCH: u32 = 2;

/// The PCIe tree's edges, and the NVLink to each GPU's pair partner where there is one.
#[derive(Clone, Debug)]
pub(crate) struct PcieRoutes {
    /// GPU -> its switch, switch -> GPU, by rank.
    pub up: Vec<EdgeIndex>,
    pub down: Vec<EdgeIndex>,
    /// Switch -> host, host -> switch, by node * switches_per_node + switch.
    pub sw_up: Vec<EdgeIndex>,
    pub sw_down: Vec<EdgeIndex>,
    pub switches_per_node: u32,
    /// GPU -> its pair partner over NVLink, by rank (`EdgeIndex::end()` for an unpaired GPU).
    pub nvlink: Option<Vec<EdgeIndex>>,
}

impl PcieRoutes {
    pub fn route(&self, gpus_per_node: u32, src: u32, dst: u32, out: &mut Vec<EdgeIndex>) {
        let (ls, ld) = (src % gpus_per_node, dst % gpus_per_node);
        let (ss, sd) = (ls / GPUS_PER_SWITCH, ld / GPUS_PER_SWITCH);
        if ss == sd {
            if let Some(nv) = &self.nvlink {
                out.push(nv[src as usize]);
            } else {
                out.push(self.up[src as usize]);
                out.push(self.down[dst as usize]);
            }
            return;
        }
        let base = (src / gpus_per_node) * self.switches_per_node;
        out.push(self.up[src as usize]);
        out.push(self.sw_up[(base + ss) as usize]);
        out.push(self.sw_down[(base + sd) as usize]);
        out.push(self.down[dst as usize]);
    }
}

/// Builds the GPUs of every node and their PCIe tree, every PCIe link at `bandwidth`.
pub(crate) fn tree(b: &mut Builder, spec: &TopologySpec, bandwidth: f64) -> PcieRoutes {
    let g = spec.gpus_per_node;
    let spn = g.div_ceil(GPUS_PER_SWITCH);
    let total = (spec.nodes * g) as usize;
    let mut r = PcieRoutes {
        up: Vec::with_capacity(total),
        down: Vec::with_capacity(total),
        sw_up: Vec::with_capacity((spec.nodes * spn) as usize),
        sw_down: Vec::with_capacity((spec.nodes * spn) as usize),
        switches_per_node: spn,
        nvlink: None,
    };
    let hop = spec.intra_latency / 2.0;
    for node in 0..spec.nodes {
        let host = b.device(DeviceKind::Host, format!("node{node}/host"), Some(node));
        let mut sw = NodeIndex::end();
        for local in 0..g {
            if local % GPUS_PER_SWITCH == 0 {
                let s = local / GPUS_PER_SWITCH;
                sw = b.device(
                    DeviceKind::PcieSwitch,
                    format!("node{node}/pcie{s}"),
                    Some(node),
                );
                let (u, d) = b.link(sw, host, LinkKind::Pcie, bandwidth, hop);
                r.sw_up.push(u);
                r.sw_down.push(d);
            }
            let gpu = b.gpu(node * g + local, node, local);
            let (u, d) = b.link(gpu, sw, LinkKind::Pcie, bandwidth, hop);
            r.up.push(u);
            r.down.push(d);
        }
    }
    r
}

pub(crate) fn build(b: &mut Builder, spec: &TopologySpec) -> super::routing::Intra {
    super::routing::Intra::Pcie(tree(b, spec, spec.intra_bandwidth))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{check_all_routes, names};
    use super::super::*;

    fn spec(nodes: u32, g: u32) -> TopologySpec {
        TopologySpec {
            intra: IntraKind::Pcie,
            intra_bandwidth: 32e9,
            ..TopologySpec::new(nodes, g)
        }
    }

    #[test]
    fn counts_and_paths() {
        let t = Topology::build(&spec(1, 8)).unwrap();
        // 8 GPUs, 4 switches, 1 host; 8 + 4 links.
        assert_eq!(t.graph.node_count(), 13);
        assert_eq!(t.graph.edge_count(), 24);
        assert_eq!(
            names(&t, &t.route(0, 1)),
            ["node0/gpu0", "node0/pcie0", "node0/gpu1"]
        );
        let r = t.route(1, 6);
        assert_eq!(
            names(&t, &r),
            [
                "node0/gpu1",
                "node0/pcie0",
                "node0/host",
                "node0/pcie3",
                "node0/gpu6"
            ]
        );
        assert!((t.route_latency(&r) - 2.0 * t.spec.intra_latency).abs() < 1e-15);
        check_all_routes(&t);
    }

    #[test]
    fn odd_gpu_counts_and_several_nodes() {
        let t = Topology::build(&spec(3, 3)).unwrap();
        check_all_routes(&t);
    }
}
