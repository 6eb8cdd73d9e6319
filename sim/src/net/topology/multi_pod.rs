//! Multi-pod Clos (three tiers): the nodes are split into `pods` pods of consecutive nodes (sizes
//! differing by at most one), each pod a [`fat_tree`](super::fat_tree) or
//! [`rail_optimized`](super::rail_optimized) leaf/spine network of its own, and the pods' spines
//! joined by a core layer.
//!
//! Modelled: `C` core switches (as many as spines per pod); every spine of every pod links to every
//! core. A spine's uplinks to the core carry its downlink capacity divided by
//! `pod_oversubscription`, split evenly over the `C` cores. Routes between pods go
//! NIC -> leaf -> spine -> core -> spine -> leaf -> NIC, the source spine, the core and the
//! destination spine each picked by the ECMP hash of the (source, destination) ranks (or by the
//! destination, see [`clos`](super::clos)). Spine <-> core
//! links have `switch_latency`. Units: bytes/s per direction, seconds.
//!
//! A failed spine-core cable moves the flows that crossed it to a core both their spines still
//! reach (`failure.rs`). Deliberately ignored: core "planes" (real three-tier Clos networks often
//! join spine i of each pod only to core group i; here any spine reaches any core), switch radix
//! limits of the core.

use super::clos::{self, Clos, Placement, Upper};
use super::nic::Nics;
use super::spec::TopologySpec;
use super::{Builder, DeviceKind, LinkKind};
use petgraph::graph::{EdgeIndex, NodeIndex};

#[derive(Clone, Debug)]
pub(crate) struct Core {
    pub cores: u32,
    /// Spine -> core and core -> spine, by `(pod * spines + spine) * cores + core`.
    pub up: Vec<EdgeIndex>,
    pub down: Vec<EdgeIndex>,
    /// Failed spine-core cables, by the same index (empty while none has failed; `failure.rs`).
    pub failed: Vec<bool>,
}

impl Core {
    /// Appends spine `s1` of pod `ga` -> core -> spine `s2` of pod `gb`, the core by `choice`
    /// (`PathChoice::core`).
    #[allow(clippy::too_many_arguments)]
    pub fn route(
        &self,
        spines: u32,
        ga: u32,
        s1: u32,
        gb: u32,
        s2: u32,
        choice: u32,
        out: &mut Vec<EdgeIndex>,
    ) {
        let c = self.core_between(
            ga * spines + s1,
            gb * spines + s2,
            choice % self.cores,
            choice,
        );
        out.push(self.up[((ga * spines + s1) * self.cores + c) as usize]);
        out.push(self.down[((gb * spines + s2) * self.cores + c) as usize]);
    }
}

/// Pods of `placement` leaves and spines, joined by a core.
pub(crate) fn build(
    b: &mut Builder,
    spec: &TopologySpec,
    nics: &Nics,
    placement: Placement,
) -> Clos {
    let mut c = clos::build(b, spec, nics, placement, spec.pods, "pod", true);
    let cores = c.spines;
    let bandwidth = c.spine_down_bandwidth / spec.pod_oversubscription / cores as f64;
    let vertices: Vec<NodeIndex> = (0..cores)
        .map(|i| b.device(DeviceKind::Core, format!("core{i}"), None))
        .collect();
    let n = c.spine_vertices.len() * cores as usize;
    let (mut up, mut down) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for &spine in &c.spine_vertices {
        for &core in &vertices {
            let (u, d) = b.link(
                spine,
                core,
                LinkKind::Network,
                bandwidth,
                spec.switch_latency,
            );
            up.push(u);
            down.push(d);
        }
    }
    c.upper = Upper::Core(Core {
        cores,
        up,
        down,
        failed: Vec::new(),
    });
    c
}

#[cfg(test)]
mod tests {
    use super::super::testing::{check_all_routes, names};
    use super::super::*;

    fn spec() -> TopologySpec {
        TopologySpec {
            leaf_downlinks: 4,
            pods: 3,
            pod_oversubscription: 2.0,
            ..TopologySpec::new(6, 2)
        }
    }

    #[test]
    fn pods_are_joined_by_a_core() {
        let t = Topology::build(&spec()).unwrap();
        // 3 pods of 2 nodes x 2 NICs: one leaf per pod, 4 spines per pod, 4 cores.
        assert_eq!(t.count(|k| *k == DeviceKind::Leaf), 3);
        assert_eq!(t.count(|k| *k == DeviceKind::Spine), 12);
        assert_eq!(t.count(|k| *k == DeviceKind::Core), 4);
        // Same pod: through the pod's one leaf.
        let r = t.route(0, 2);
        assert_eq!(names(&t, &r)[2], "pod0/leaf0");
        assert_eq!(r.len(), 4);
        // Across pods: leaf, spine, core, spine, leaf.
        let r = t.route(0, 11);
        let n = names(&t, &r);
        assert_eq!(r.len(), 8, "{n:?}");
        assert!(
            n[3].starts_with("pod0/spine") && n[4].starts_with("core"),
            "{n:?}"
        );
        assert!(n[5].starts_with("pod2/spine"), "{n:?}");
        // Spine downlinks: one leaf of 4 x 50 GB/s; uplinks to the core: half, over 4 cores.
        let core_link = t
            .graph
            .edge_indices()
            .find(|&e| t.graph[t.ends(e).1].kind == DeviceKind::Core)
            .unwrap();
        assert_eq!(t.link(core_link).bandwidth, 4.0 * 50e9 / 4.0 / 2.0 / 4.0);
        let latency = t.spec.inter_latency + 4.0 * t.spec.switch_latency;
        assert!((t.route_latency(&r) - latency).abs() < 1e-15);
        check_all_routes(&t);
    }

    #[test]
    fn rail_optimized_pods() {
        let s = TopologySpec {
            inter: InterKind::RailOptimized,
            ..spec()
        };
        let t = Topology::build(&s).unwrap();
        assert_eq!(t.count(|k| *k == DeviceKind::Leaf), 6);
        check_all_routes(&t);
    }
}
