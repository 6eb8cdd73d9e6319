//! Rail-optimized networks (NVIDIA DGX SuperPOD style): NIC k of every node connects to a leaf of
//! rail k, so GPUs with the same local index on different servers are one leaf apart.
//!
//! Each rail has `ceil(nodes / leaf_downlinks)` leaves (rail k, leaf j serves nodes
//! `j * leaf_downlinks ..`); every rail leaf links to every spine, with uplinks totalling the
//! leaf's downlink capacity divided by `oversubscription` (see [`clos`]). With
//! `pods` > 1, each pod is a rail-optimized network of its own and the pods are joined by a core
//! ([`multi_pod`]).
//!
//! Routes: same rail and same leaf: GPU -> NIC -> rail leaf -> NIC -> GPU, no spine; across rails
//! (or across leaves of a rail): GPU -> NIC -> leaf -> spine -> leaf -> NIC -> GPU, the spine chosen
//! by the ECMP hash. Deliberately ignored: PXN (NCCL moving cross-rail traffic onto the right rail
//! over NVLink first); such traffic here crosses a spine. Units: bytes/s per direction, seconds.

use super::clos::{self, Clos, Placement};
use super::nic::Nics;
use super::spec::TopologySpec;
use super::{Builder, multi_pod};

pub(crate) fn build(b: &mut Builder, spec: &TopologySpec, nics: &Nics) -> Clos {
    if spec.pods > 1 {
        return multi_pod::build(b, spec, nics, Placement::Rails);
    }
    clos::build(b, spec, nics, Placement::Rails, 1, "", false)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{check_all_routes, names};
    use super::super::*;

    fn spec(nodes: u32) -> TopologySpec {
        TopologySpec {
            inter: InterKind::RailOptimized,
            leaf_downlinks: 4,
            ..TopologySpec::new(nodes, 4)
        }
    }

    fn touches_spine(t: &Topology, r: &Route) -> bool {
        r.links
            .iter()
            .any(|&e| t.graph[t.ends(e).1].kind == DeviceKind::Spine)
    }

    #[test]
    fn rails_and_spines() {
        let t = Topology::build(&spec(4)).unwrap();
        // 4 rails of one leaf each, 4 spines.
        assert_eq!(t.count(|k| *k == DeviceKind::Leaf), 4);
        assert_eq!(t.count(|k| *k == DeviceKind::Spine), 4);
        assert_eq!(t.graph.edge_count(), 2 * (16 + 16 + 16 + 16));
        // Same rail: GPU 1 of node 0 to GPU 1 of node 3.
        let r = t.route(1, 13);
        assert!(!touches_spine(&t, &r));
        assert_eq!(
            names(&t, &r),
            [
                "node0/gpu1",
                "node0/nic1",
                "rail1/leaf0",
                "node3/nic1",
                "node3/gpu1"
            ]
        );
        // Cross rail.
        let r = t.route(1, 14);
        assert!(touches_spine(&t, &r));
        assert_eq!(r.len(), 6);
        check_all_routes(&t);
    }

    #[test]
    fn several_leaves_per_rail() {
        let t = Topology::build(&spec(6)).unwrap();
        assert_eq!(t.count(|k| *k == DeviceKind::Leaf), 8);
        // Node 0 and node 5 are on leaves 0 and 1 of rail 2.
        let r = t.route(2, 22);
        let n = names(&t, &r);
        assert_eq!(n[2], "rail2/leaf0");
        assert_eq!(n[4], "rail2/leaf1");
        assert!(!touches_spine(&t, &t.route(2, 10)));
        check_all_routes(&t);
    }
}
