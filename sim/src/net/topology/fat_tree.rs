//! Fat-tree: a two-level leaf/spine Clos network (see [`clos`] for the shared
//! machinery and link figures).
//!
//! NIC placement is node-major: the NICs of consecutive nodes fill leaf 0, then leaf 1, ... up to
//! `leaf_downlinks` NICs per leaf, so a leaf holds whole servers when `leaf_downlinks` is a
//! multiple of `nics_per_node`. Every leaf links to every spine; the uplinks total the leaf's
//! downlink capacity divided by `oversubscription`. With `pods` > 1 the network becomes a
//! [`multi_pod`] Clos.
//!
//! Routes: GPU -> NIC -> leaf -> NIC -> GPU when both NICs share a leaf, else GPU -> NIC -> leaf ->
//! spine -> leaf -> NIC -> GPU with the spine chosen by the ECMP hash of (source, destination).
//! Deliberately ignored: which GPU's NIC sits where inside a leaf's ports, spine radix limits.
//! Units: bytes/s per direction, seconds.

use super::clos::{self, Clos, Placement};
use super::nic::Nics;
use super::spec::TopologySpec;
use super::{Builder, multi_pod};

pub(crate) fn build(b: &mut Builder, spec: &TopologySpec, nics: &Nics) -> Clos {
    if spec.pods > 1 {
        return multi_pod::build(b, spec, nics, Placement::NodeMajor);
    }
    clos::build(b, spec, nics, Placement::NodeMajor, 1, "", false)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{check_all_routes, names};
    use super::super::*;

    fn spec(nodes: u32, ovs: f64) -> TopologySpec {
        TopologySpec {
            leaf_downlinks: 8,
            oversubscription: ovs,
            ..TopologySpec::new(nodes, 4)
        }
    }

    #[test]
    fn counts() {
        // 4 nodes x 4 GPUs, 4 NICs each: 16 NICs on 2 leaves of 8; 8 spines.
        let t = Topology::build(&spec(4, 1.0)).unwrap();
        assert_eq!(t.count(|k| matches!(k, DeviceKind::Gpu { .. })), 16);
        assert_eq!(t.count(|k| *k == DeviceKind::NvSwitch), 4);
        assert_eq!(t.count(|k| *k == DeviceKind::Nic), 16);
        assert_eq!(t.count(|k| *k == DeviceKind::Leaf), 2);
        assert_eq!(t.count(|k| *k == DeviceKind::Spine), 8);
        assert_eq!(t.graph.node_count(), 16 + 4 + 16 + 2 + 8);
        // GPU-NVSwitch 16, GPU-NIC 16, NIC-leaf 16, leaf-spine 16; two edges each.
        assert_eq!(t.graph.edge_count(), 2 * (16 + 16 + 16 + 16));
        check_all_routes(&t);
    }

    #[test]
    fn single_leaf_has_no_spine() {
        let t = Topology::build(&spec(2, 1.0)).unwrap();
        assert_eq!(t.count(|k| *k == DeviceKind::Spine), 0);
        let r = t.route(0, 4);
        assert_eq!(
            names(&t, &r),
            [
                "node0/gpu0",
                "node0/nic0",
                "leaf0",
                "node1/nic0",
                "node1/gpu0"
            ]
        );
        assert!((t.route_latency(&r) - t.spec.inter_latency).abs() < 1e-15);
        check_all_routes(&t);
    }

    #[test]
    fn oversubscription_halves_uplinks() {
        let t = Topology::build(&spec(8, 2.0)).unwrap();
        let leaf = t.find("leaf0").unwrap();
        let (mut down, mut up) = (0.0, 0.0);
        for e in t.graph.edges_directed(leaf, petgraph::Direction::Outgoing) {
            use petgraph::visit::EdgeRef;
            match t.graph[e.target()].kind {
                DeviceKind::Nic => down += e.weight().bandwidth,
                DeviceKind::Spine => up += e.weight().bandwidth,
                _ => unreachable!(),
            }
        }
        assert_eq!(down, 8.0 * 50e9);
        assert_eq!(up, down / 2.0);
        // 4 spines, one uplink port each.
        assert_eq!(t.count(|k| *k == DeviceKind::Spine), 4);
        // Across leaves: through one spine.
        let r = t.route(0, 31);
        let n = names(&t, &r);
        assert_eq!(r.len(), 6, "{n:?}");
        assert!(n[3].starts_with("spine"), "{n:?}");
        let latency = t.spec.inter_latency + 2.0 * t.spec.switch_latency;
        assert!((t.route_latency(&r) - latency).abs() < 1e-15);
        check_all_routes(&t);
    }

    #[test]
    fn ecmp_spreads_over_spines_and_is_deterministic() {
        let t = Topology::build(&spec(8, 1.0)).unwrap();
        let mut used = std::collections::BTreeSet::new();
        for s in 0..8 {
            for d in 16..24 {
                let r = t.route(s, d);
                assert_eq!(r, t.route(s, d));
                used.insert(names(&t, &r)[3].clone());
            }
        }
        assert!(used.len() >= 6, "{used:?}");
    }

    /// The busiest network link's flow count when every GPU of 64 nodes of 8 sends to the GPU of
    /// the same index on the next node (a ring's node-to-node hops, all rails at once), on
    /// leaves of 32 ports and 32 spines.
    fn busiest_under_shift(routing: spec::PathSelection) -> u32 {
        let s = TopologySpec {
            nic_bandwidth: 25e9,
            routing,
            ..TopologySpec::new(64, 8)
        };
        let t = Topology::build(&s).unwrap();
        let mut flows = std::collections::HashMap::new();
        for src in 0..64 * 8 {
            for e in t.route(src, (src + 8) % (64 * 8)).links {
                if t.graph[e].kind == LinkKind::Network {
                    *flows.entry(e).or_insert(0) += 1;
                }
            }
        }
        flows.into_values().max().unwrap()
    }

    #[test]
    fn destination_routing_keeps_a_shift_off_shared_links_where_ecmp_collides() {
        assert!(busiest_under_shift(spec::PathSelection::Ecmp) >= 2);
        assert_eq!(busiest_under_shift(spec::PathSelection::Destination), 1);
        // Every route still goes where it should.
        let t = Topology::build(&TopologySpec {
            routing: spec::PathSelection::Destination,
            ..spec(8, 2.0)
        })
        .unwrap();
        check_all_routes(&t);
        assert!(
            t.spec.name().ends_with("routed by destination"),
            "{}",
            t.spec.name()
        );
    }

    #[test]
    fn fewer_nics_than_gpus() {
        let s = TopologySpec {
            nics_per_node: 2,
            ..spec(5, 1.0)
        };
        let t = Topology::build(&s).unwrap();
        assert_eq!(t.count(|k| *k == DeviceKind::Nic), 10);
        assert_eq!(names(&t, &t.route(1, 4))[1], "node0/nic0");
        assert_eq!(names(&t, &t.route(2, 4))[1], "node0/nic1");
        check_all_routes(&t);
    }
}
