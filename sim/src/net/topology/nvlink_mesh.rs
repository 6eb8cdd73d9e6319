//! NVLink meshes: servers whose GPUs are wired to each other directly, with no switch.
//!
//! - **Full mesh** (V100 hybrid cube-mesh simplified, AMD MI250X/MI300X Infinity Fabric): one link
//!   between every pair of GPUs of the server; each GPU's `intra_bandwidth` is split evenly over its
//!   `gpus_per_node - 1` peers, so each link carries `intra_bandwidth / (gpus_per_node - 1)` per
//!   direction, with `intra_latency`. Routes are the direct link: one hop.
//! - **Pairs** (A100 "pairwise NVLink" boxes, NVLink bridges on PCIe cards): GPUs 2i and 2i+1 are
//!   joined by NVLink at the full `intra_bandwidth`; every GPU also sits on the
//!   [`pcie`] tree (GPUs 2i and 2i+1 on PCIe switch i, switches under the host) at
//!   `pcie_bandwidth`, which carries traffic between pairs.
//!
//! Deliberately ignored: multi-hop forwarding through a peer GPU (a mesh route never relays), the
//! real V100 cube-mesh's uneven link counts. Units: bytes/s per direction, seconds.

use super::spec::TopologySpec;
use super::{Builder, LinkKind, pcie};
use petgraph::graph::EdgeIndex;

/// Direct links: `links[rank * gpus_per_node + local_dst]` is GPU `rank` -> GPU `local_dst` of
/// its node (`EdgeIndex::end()` on the diagonal).
#[derive(Clone, Debug)]
pub(crate) struct MeshRoutes {
    pub links: Vec<EdgeIndex>,
}

impl MeshRoutes {
    pub fn route(&self, gpus_per_node: u32, src: u32, dst: u32, out: &mut Vec<EdgeIndex>) {
        out.push(self.links[(src * gpus_per_node + dst % gpus_per_node) as usize]);
    }
}

pub(crate) fn build(b: &mut Builder, spec: &TopologySpec) -> super::routing::Intra {
    let g = spec.gpus_per_node;
    let mut links = vec![EdgeIndex::end(); (spec.nodes * g * g) as usize];
    let per_link = spec.intra_bandwidth / (g.max(2) - 1) as f64;
    for node in 0..spec.nodes {
        let first = node * g;
        let gpus: Vec<_> = (0..g).map(|l| b.gpu(first + l, node, l)).collect();
        for i in 0..g {
            for j in i + 1..g {
                let (ij, ji) = b.link(
                    gpus[i as usize],
                    gpus[j as usize],
                    LinkKind::NvLink,
                    per_link,
                    spec.intra_latency,
                );
                links[((first + i) * g + j) as usize] = ij;
                links[((first + j) * g + i) as usize] = ji;
            }
        }
    }
    super::routing::Intra::Mesh(MeshRoutes { links })
}

/// NVLink pairs over a PCIe tree.
pub(crate) fn build_pairs(b: &mut Builder, spec: &TopologySpec) -> super::routing::Intra {
    let mut r = pcie::tree(b, spec, spec.pcie_bandwidth);
    let g = spec.gpus_per_node;
    let mut nvlink = vec![EdgeIndex::end(); (spec.nodes * g) as usize];
    for node in 0..spec.nodes {
        for pair in 0..g / 2 {
            let (a, c) = (node * g + 2 * pair, node * g + 2 * pair + 1);
            let (ac, ca) = b.link(
                b.gpus[a as usize],
                b.gpus[c as usize],
                LinkKind::NvLink,
                spec.intra_bandwidth,
                spec.intra_latency,
            );
            nvlink[a as usize] = ac;
            nvlink[c as usize] = ca;
        }
    }
    // An odd last GPU is alone on its PCIe switch, so the same-switch lookup never reaches its
    // missing NVLink.
    r.nvlink = Some(nvlink);
    super::routing::Intra::Pcie(r)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{check_all_routes, names};
    use super::super::*;

    #[test]
    fn full_mesh_splits_bandwidth_over_peers() {
        let spec = TopologySpec {
            intra: IntraKind::NvLinkMesh,
            intra_bandwidth: 700e9,
            ..TopologySpec::new(2, 8)
        };
        let t = Topology::build(&spec).unwrap();
        // Per node: 8 GPUs, 28 links; plus 8 NICs per node and one leaf.
        let gpus = t.count(|k| matches!(k, DeviceKind::Gpu { .. }));
        assert_eq!(gpus, 16);
        let nvlinks = t
            .graph
            .edge_weights()
            .filter(|l| l.kind == LinkKind::NvLink)
            .count();
        assert_eq!(nvlinks, 2 * 28 * 2);
        let r = t.route(9, 14);
        assert_eq!(r.len(), 1);
        assert_eq!(t.route_bandwidth(&r), 100e9);
        assert_eq!(t.route_latency(&r), spec.intra_latency);
        check_all_routes(&t);
    }

    #[test]
    fn pairs_use_nvlink_inside_and_pcie_between() {
        let spec = TopologySpec {
            intra: IntraKind::NvLinkPairs,
            intra_bandwidth: 600e9,
            pcie_bandwidth: 32e9,
            ..TopologySpec::new(1, 8)
        };
        let t = Topology::build(&spec).unwrap();
        // 8 GPUs, 4 PCIe switches, 1 host; 8 + 4 PCIe links and 4 NVLinks.
        assert_eq!(t.graph.node_count(), 13);
        assert_eq!(t.graph.edge_count(), 2 * (8 + 4 + 4));
        let r = t.route(2, 3);
        assert_eq!(names(&t, &r), ["node0/gpu2", "node0/gpu3"]);
        assert_eq!(t.route_bandwidth(&r), 600e9);
        let r = t.route(3, 4);
        assert_eq!(
            names(&t, &r),
            [
                "node0/gpu3",
                "node0/pcie1",
                "node0/host",
                "node0/pcie2",
                "node0/gpu4"
            ]
        );
        assert_eq!(t.route_bandwidth(&r), 32e9);
        check_all_routes(&t);
        let odd = TopologySpec {
            gpus_per_node: 5,
            nics_per_node: 5,
            nodes: 2,
            ..spec
        };
        check_all_routes(&Topology::build(&odd).unwrap());
    }
}
