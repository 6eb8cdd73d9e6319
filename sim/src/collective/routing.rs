//! A schedule routed once for every protocol priced: each transfer's links (a GPU's traffic
//! between servers spread over its NICs' lanes), its route's latency and the slowest kind of
//! link it crosses; in-switch reduction endpoints resolve to their node's NVSwitch.

use super::refusal::Refusal;
use super::schedule::{Endpoint, Phase, Schedule};
use crate::net::tier::switch_of;
use crate::net::topology::{LinkKind, Route, Topology};

/// The slowest kind of link on a route (WAN, then network, PCIe, NVLink).
pub(super) fn slowest(topo: &Topology, links: &[petgraph::graph::EdgeIndex]) -> LinkKind {
    links
        .iter()
        .map(|&e| topo.graph[e].kind)
        .max()
        .unwrap_or(LinkKind::NvLink)
}

/// A transfer routed once for every protocol priced: its links, its route's latency, the
/// slowest kind of link it crosses, whether it joins two GPUs (not a GPU and its switch), and
/// its bytes before the protocol's wire factor.
pub(super) struct Routed {
    pub(super) links: Vec<petgraph::graph::EdgeIndex>,
    pub(super) route_latency: f64,
    pub(super) slowest: LinkKind,
    pub(super) between_gpus: bool,
    pub(super) bytes: f64,
}

impl Routed {
    /// Its latency under a protocol: the route's, or the protocol's step latency over its slowest
    /// link, whichever is larger.
    pub(super) fn latency(&self, step_latency: &dyn Fn(LinkKind) -> f64) -> f64 {
        self.route_latency.max(step_latency(self.slowest))
    }
}

/// A phase routed once: its transfers and the hops of its path (`Phase::path`).
pub(super) struct RoutedPhase<'a> {
    pub(super) phase: &'a Phase,
    pub(super) transfers: Vec<Routed>,
    pub(super) path: Vec<Routed>,
}

/// A schedule routed once, priced by every protocol.
pub(super) struct Routing<'a> {
    pub(super) schedule: &'a Schedule,
    pub(super) phases: Vec<RoutedPhase<'a>>,
}

/// Routes every transfer and path hop of `schedule` (the part of pricing no protocol changes).
pub(super) fn route<'a>(topo: &Topology, schedule: &'a Schedule) -> Result<Routing<'a>, Refusal> {
    let vertex = |e: Endpoint| -> Result<petgraph::graph::NodeIndex, Refusal> {
        match e {
            Endpoint::Gpu(r) => topo
                .gpus
                .get(r as usize)
                .copied()
                .ok_or(Refusal::RankOutside {
                    rank: r,
                    gpus: topo.gpus.len(),
                }),
            Endpoint::NodeSwitch(node) => {
                let first = topo.gpus[(node * topo.gpus_per_node) as usize];
                switch_of(topo, first).ok_or(Refusal::NoSwitch { node })
            }
        }
    };
    // Lane `lane` of a transfer (`Topology::lanes`: a GPU's traffic between servers spreads
    // evenly over its NICs), carrying `bytes`.
    let one = |src: Endpoint, dst: Endpoint, lane: u32, bytes: f64| -> Result<Routed, Refusal> {
        let links = match (src, dst) {
            (Endpoint::Gpu(a), Endpoint::Gpu(b)) => topo.route_lane(a, b, lane).links,
            (a, b) => {
                let (va, vb) = (vertex(a)?, vertex(b)?);
                vec![topo.graph.find_edge(va, vb).ok_or(Refusal::NotAttached)?]
            }
        };
        let route = Route { links };
        Ok(Routed {
            route_latency: topo.route_latency(&route),
            slowest: slowest(topo, &route.links),
            between_gpus: matches!((src, dst), (Endpoint::Gpu(_), Endpoint::Gpu(_))),
            links: route.links,
            bytes,
        })
    };
    let lanes = |src: Endpoint, dst: Endpoint| match (src, dst) {
        (Endpoint::Gpu(a), Endpoint::Gpu(b)) => topo.lanes(a, b),
        _ => 1,
    };
    let phases = schedule
        .phases
        .iter()
        .map(|phase| {
            Ok(RoutedPhase {
                phase,
                transfers: phase
                    .transfers
                    .iter()
                    .flat_map(|t| {
                        let lanes = lanes(t.src, t.dst);
                        (0..lanes).map(move |l| one(t.src, t.dst, l, t.bytes / lanes as f64))
                    })
                    .collect::<Result<_, Refusal>>()?,
                path: phase
                    .path
                    .iter()
                    .map(|&(a, b)| one(a, b, 0, 0.0))
                    .collect::<Result<_, Refusal>>()?,
            })
        })
        .collect::<Result<_, Refusal>>()?;
    Ok(Routing { schedule, phases })
}
