//! The leaf/spine machinery shared by [`fat_tree`](super::fat_tree),
//! [`rail_optimized`](super::rail_optimized), [`multi_pod`](super::multi_pod) and
//! [`wan`](super::wan): NICs on leaves, leaves on spines, and optionally a layer above the spines
//! (a core joining pods, or site routers joining WAN sites).
//!
//! Nodes are split into groups (pods or sites) of consecutive nodes, sizes differing by at most
//! one; each group has its own leaves and `S` spines, every leaf linked to every spine of its
//! group. A leaf's uplinks carry `leaf_downlinks x nic_bandwidth / oversubscription` in all, split
//! evenly over the spines, and a partly filled leaf keeps a full one's. Routes: NIC -> leaf [->
//! spine -> leaf] -> NIC within a group, the spine by ECMP hash or by the destination NIC's port;
//! across groups through the layer above. Links: NIC <-> leaf `inter_latency / 2`, switch <->
//! switch `switch_latency`; bandwidths bytes/s per direction.
//!
//! Ignored: switch radix limits of the spines, buffers, adaptive routing. Failed leaf-spine cables
//! reroute (`failure.rs`). The rules in full: docs/NETWORK.md#leaf-and-spine.

use super::nic::Nics;
use super::routing::PathChoice;
use super::spec::{PathSelection, TopologySpec, block_start};
use super::{Builder, DeviceKind, LinkKind};
use petgraph::graph::{EdgeIndex, NodeIndex};

/// Where a node's NICs go.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Fat-tree: the group's NICs in node-major order fill leaf 0, then leaf 1, ...
    NodeMajor,
    /// Rail-optimized: NIC k of every node goes to a leaf of rail k.
    Rails,
}

#[derive(Clone, Debug)]
pub(crate) struct Clos {
    /// Leaf of each NIC, by global NIC index.
    pub nic_leaf: Vec<u32>,
    /// Port of each NIC on its leaf (0 .. leaf_downlinks), by global NIC index.
    pub nic_port: Vec<u32>,
    /// How the switches choose among equal uplinks.
    pub routing: PathSelection,
    /// NIC -> leaf and leaf -> NIC, by global NIC index.
    pub nic_up: Vec<EdgeIndex>,
    pub nic_down: Vec<EdgeIndex>,
    /// Group (pod, site) of each leaf.
    pub leaf_group: Vec<u32>,
    /// Spines per group (0 when no group needs one).
    pub spines: u32,
    /// Leaf -> spine `s` of its group and back, by `leaf * spines + s`.
    pub leaf_up: Vec<EdgeIndex>,
    pub leaf_down: Vec<EdgeIndex>,
    pub upper: Upper,
    pub leaf_vertices: Vec<NodeIndex>,
    /// By `group * spines + s`.
    pub spine_vertices: Vec<NodeIndex>,
    /// Capacity of one leaf-spine link, and the downlink capacity of one spine (per direction).
    pub leaf_uplink_bandwidth: f64,
    pub spine_down_bandwidth: f64,
    /// Failed leaf-spine cables, by `leaf * spines + s` (empty while none has failed;
    /// `failure.rs`).
    pub failed: Vec<bool>,
}

/// What joins the groups.
#[derive(Clone, Debug)]
pub(crate) enum Upper {
    None,
    Core(super::multi_pod::Core),
    Wan(super::wan::Sites),
}

impl Clos {
    /// Appends NIC `a` -> NIC `b`; `hash` is the flow's ECMP hash, used when the switches
    /// route by it.
    pub fn route(&self, a: u32, b: u32, hash: u64, out: &mut Vec<EdgeIndex>) {
        let (la, lb) = (self.nic_leaf[a as usize], self.nic_leaf[b as usize]);
        let choice = match self.routing {
            PathSelection::Ecmp => PathChoice::hashed(hash),
            PathSelection::Destination | PathSelection::Spray => {
                PathChoice::by_destination(self.nic_port[b as usize], lb)
            }
        };
        out.push(self.nic_up[a as usize]);
        if la != lb {
            let s = self.spines;
            let (ga, gb) = (self.leaf_group[la as usize], self.leaf_group[lb as usize]);
            let s1 = if ga == gb {
                self.spine_between(la, lb, choice.up % s, hash)
            } else {
                self.spine_of(la, choice.up % s, hash)
            };
            out.push(self.leaf_up[(la * s + s1) as usize]);
            let s2 = if ga == gb {
                s1
            } else {
                let s2 = self.spine_of(lb, choice.down % s, hash);
                match &self.upper {
                    Upper::None => unreachable!("groups are joined by a core or a WAN"),
                    Upper::Core(c) => c.route(s, ga, s1, gb, s2, choice.core, out),
                    Upper::Wan(w) => w.route(s, ga, s1, gb, s2, out),
                }
                s2
            };
            out.push(self.leaf_down[(lb * s + s2) as usize]);
        }
        out.push(self.nic_down[b as usize]);
    }
}

/// Builds leaves and spines for `groups` groups of consecutive nodes (named `label0/...` when
/// there are several), with spines whenever a group has several leaves or `above` says a layer
/// will sit on top of the spines.
pub(crate) fn build(
    b: &mut Builder,
    spec: &TopologySpec,
    nics: &Nics,
    placement: Placement,
    groups: u32,
    label: &str,
    above: bool,
) -> Clos {
    let k = nics.per_node;
    let d = spec.leaf_downlinks;
    let total_nics = (spec.nodes * k) as usize;
    let mut c = Clos {
        nic_leaf: vec![0; total_nics],
        nic_port: vec![0; total_nics],
        routing: spec.routing,
        nic_up: vec![EdgeIndex::end(); total_nics],
        nic_down: vec![EdgeIndex::end(); total_nics],
        leaf_group: Vec::new(),
        spines: 0,
        leaf_up: Vec::new(),
        leaf_down: Vec::new(),
        upper: Upper::None,
        leaf_vertices: Vec::new(),
        spine_vertices: Vec::new(),
        leaf_uplink_bandwidth: 0.0,
        spine_down_bandwidth: 0.0,
        failed: Vec::new(),
    };
    let half = spec.inter_latency / 2.0;
    let mut max_leaves = 0;
    for g in 0..groups {
        let prefix = if groups > 1 {
            format!("{label}{g}/")
        } else {
            String::new()
        };
        let (n0, n1) = (
            block_start(spec.nodes, groups, g),
            block_start(spec.nodes, groups, g + 1),
        );
        let base = c.leaf_vertices.len() as u32;
        let nodes = n1 - n0;
        let (leaves, per_rail) = match placement {
            Placement::NodeMajor => ((nodes * k).div_ceil(d), 0),
            Placement::Rails => {
                let per_rail = nodes.div_ceil(d);
                (per_rail * k, per_rail)
            }
        };
        max_leaves = max_leaves.max(leaves);
        for l in 0..leaves {
            let name = match placement {
                Placement::NodeMajor => format!("{prefix}leaf{l}"),
                Placement::Rails => format!("{prefix}rail{}/leaf{}", l / per_rail, l % per_rail),
            };
            c.leaf_vertices.push(b.device(DeviceKind::Leaf, name, None));
            c.leaf_group.push(g);
        }
        for node in n0..n1 {
            for j in 0..k {
                let (leaf, port) = match placement {
                    Placement::NodeMajor => (((node - n0) * k + j) / d, ((node - n0) * k + j) % d),
                    Placement::Rails => (j * per_rail + (node - n0) / d, (node - n0) % d),
                };
                let leaf = base + leaf;
                let nic = (node * k + j) as usize;
                let (u, dn) = b.link(
                    nics.vertices[nic],
                    c.leaf_vertices[leaf as usize],
                    LinkKind::Network,
                    spec.nic_bandwidth,
                    half,
                );
                c.nic_leaf[nic] = leaf;
                c.nic_port[nic] = port;
                c.nic_up[nic] = u;
                c.nic_down[nic] = dn;
            }
        }
    }
    if max_leaves < 2 && !above {
        return c;
    }
    let s = spec
        .spines
        .unwrap_or_else(|| (d as f64 / spec.oversubscription).ceil().max(1.0) as u32);
    c.spines = s;
    c.leaf_uplink_bandwidth = d as f64 * spec.nic_bandwidth / spec.oversubscription / s as f64;
    c.spine_down_bandwidth = max_leaves as f64 * c.leaf_uplink_bandwidth;
    for g in 0..groups {
        for i in 0..s {
            let name = if groups > 1 {
                format!("{label}{g}/spine{i}")
            } else {
                format!("spine{i}")
            };
            c.spine_vertices
                .push(b.device(DeviceKind::Spine, name, None));
        }
    }
    let n_leaves = c.leaf_vertices.len();
    c.leaf_up = Vec::with_capacity(n_leaves * s as usize);
    c.leaf_down = Vec::with_capacity(n_leaves * s as usize);
    for l in 0..n_leaves {
        let g = c.leaf_group[l];
        for i in 0..s {
            let (u, dn) = b.link(
                c.leaf_vertices[l],
                c.spine_vertices[(g * s + i) as usize],
                LinkKind::Network,
                c.leaf_uplink_bandwidth,
                spec.switch_latency,
            );
            c.leaf_up.push(u);
            c.leaf_down.push(dn);
        }
    }
    c
}
