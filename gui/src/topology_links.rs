//! The links of the Topology tab's layout: one per physical link, classed by where its ends are,
//! summed per (server, switch) for a server drawn as one box, and counted per kind for the header.

use crate::topology_layout::Placed;
use clustersim::net::Topology;
use clustersim::net::topology::LinkKind;
use std::collections::{BTreeMap, HashSet};

/// Where a link sits, which decides when it is drawn.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Both ends in this server (NVLink, PCIe, GPU to NIC).
    Inside(u32),
    /// From a device of this server to a shared switch or router.
    Up(u32),
    /// Between shared switches and routers.
    Shared,
}

/// One physical link (one of its two directions).
#[derive(Clone, Debug)]
pub struct Link {
    /// Device indices (the graph's vertex indices), `a < b`.
    pub a: usize,
    pub b: usize,
    pub kind: LinkKind,
    /// Bytes per second, one direction.
    pub bandwidth: f64,
    /// Seconds, one way.
    pub latency: f64,
    pub scope: Scope,
}

/// A server's links to one shared switch, summed: what is drawn when the server is one box.
#[derive(Clone, Debug)]
pub struct Uplink {
    pub node: u32,
    /// The switch or router (device index).
    pub to: usize,
    pub kind: LinkKind,
    pub links: u32,
    /// Sum over the links, bytes/s per direction.
    pub bandwidth: f64,
    pub latency: f64,
}

/// Links of one kind: how many, and their distinct bandwidths.
#[derive(Clone, Debug, PartialEq)]
pub struct Class {
    pub kind: LinkKind,
    pub links: usize,
    /// Distinct bandwidths (bytes/s), ascending.
    pub bandwidths: Vec<f64>,
}

/// The kind of a link, in words.
pub fn link_name(kind: LinkKind) -> &'static str {
    match kind {
        LinkKind::NvLink => "NVLink",
        LinkKind::Pcie => "PCIe",
        LinkKind::Network => "network",
        LinkKind::Wan => "WAN",
    }
}

/// One link per physical link of `topology`, the lower-indexed direction kept, and the uplinks
/// summed per (server, switch) pair, in that order.
pub(crate) fn links(topology: &Topology, devices: &[Placed]) -> (Vec<Link>, Vec<Uplink>) {
    let g = &topology.graph;
    let nodes = topology.nodes as usize;
    let mut links = Vec::with_capacity(g.edge_count() / 2);
    let mut seen = HashSet::with_capacity(g.edge_count() / 2);
    let mut uplinks: BTreeMap<(u32, usize), Uplink> = BTreeMap::new();
    for e in g.edge_indices() {
        let (x, y) = g.edge_endpoints(e).expect("an edge of the graph");
        let (a, b) = (x.index().min(y.index()), x.index().max(y.index()));
        if a == b || !seen.insert((a, b)) {
            continue;
        }
        let l = &g[e];
        let server = |d: usize| devices[d].node.filter(|&n| (n as usize) < nodes);
        let scope = match (server(a), server(b)) {
            (Some(p), Some(q)) if p == q => Scope::Inside(p),
            (Some(p), None) | (None, Some(p)) => Scope::Up(p),
            _ => Scope::Shared,
        };
        if let Scope::Up(node) = scope {
            let to = if server(a).is_some() { b } else { a };
            let u = uplinks.entry((node, to)).or_insert(Uplink {
                node,
                to,
                kind: l.kind,
                links: 0,
                bandwidth: 0.0,
                latency: l.latency,
            });
            u.links += 1;
            u.bandwidth += l.bandwidth;
        }
        links.push(Link {
            a,
            b,
            kind: l.kind,
            bandwidth: l.bandwidth,
            latency: l.latency,
            scope,
        });
    }
    (links, uplinks.into_values().collect())
}

/// The links of each kind present, in the order NVLink, PCIe, network, WAN.
pub(crate) fn classes(links: &[Link]) -> Vec<Class> {
    let mut classes: Vec<Class> = Vec::new();
    for kind in [
        LinkKind::NvLink,
        LinkKind::Pcie,
        LinkKind::Network,
        LinkKind::Wan,
    ] {
        let of: Vec<&Link> = links.iter().filter(|l| l.kind == kind).collect();
        if of.is_empty() {
            continue;
        }
        let mut bandwidths: Vec<f64> = of.iter().map(|l| l.bandwidth).collect();
        bandwidths.sort_by(f64::total_cmp);
        bandwidths.dedup_by(|x, y| (*x - *y).abs() <= 1e-9 * y.abs());
        classes.push(Class {
            kind,
            links: of.len(),
            bandwidths,
        });
    }
    classes
}
