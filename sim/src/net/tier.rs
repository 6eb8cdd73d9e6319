//! The two network tiers behind one seam: price a phase of concurrent transfers on a topology.
//!
//! - Analytical: each transfer takes its route's latency plus the time the busiest link of its
//!   route needs to carry every byte crossing it in the phase (a link's capacity shared evenly
//!   over the whole phase, no rates that change as transfers finish). Alone on its links, a
//!   transfer takes its bytes over the slowest link: exact when transfers share no link, and a
//!   GPU's own port bounds an all-to-all as it should.
//! - Flow: the transfers share every link max-min fairly (`flow::FlowModel`). A phase that runs
//!   once runs on the engine: each transfer starts moving bytes after its route's latency, and
//!   rates are recomputed as transfers start and finish. A phase that repeats is a pipelined
//!   steady state (a ring's or a tree's steps): every transfer is always active, so the rates are
//!   the max-min allocation with all of them present, and the step takes the slowest transfer's
//!   latency plus bytes over rate.
//!
//! Both read link capacities as line rate times the fraction that transfers achieve on that kind
//! of link (`efficiency`), so they agree exactly when no link is shared (tested).

use super::flow::FlowModel;
use super::topology::{LinkKind, Topology};
use crate::engine::{EventId, Process, Scheduler, SimTime, Simulation};
use petgraph::graph::{EdgeIndex, NodeIndex};

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Tier {
    Analytical,
    Flow,
}

impl Tier {
    pub fn name(self) -> &'static str {
        match self {
            Tier::Analytical => "analytical",
            Tier::Flow => "flow",
        }
    }
}

/// Fraction of line rate that bulk transfers achieve, by kind of link (between servers, the
/// topology's transport's, `net::transport`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Efficiency {
    pub nvlink: f64,
    pub pcie: f64,
    pub wan: f64,
}

impl Efficiency {
    /// - NVLink 0.82: NCCL's ring all-reduce on 8 H100 behind NVSwitch reaches a bus bandwidth of
    ///   about 367 GB/s of the 450 GB/s per direction (NVIDIA/nccl issue 1455, also Vidur's H100
    ///   table: 364 GB/s at 64 MiB);
    /// - PCIe 0.8: PCIe Gen4/Gen5 x16 copies reach about 80% of line rate after TLP headers;
    /// - WAN 0.92: as InfiniBand's large messages after headers and flow control.
    pub const DEFAULT: Efficiency = Efficiency {
        nvlink: 0.82,
        pcie: 0.8,
        wan: 0.92,
    };
}

/// One transfer placed on the topology.
#[derive(Clone, Debug, PartialEq)]
pub struct Placed {
    pub links: Vec<EdgeIndex>,
    pub latency: f64,
    pub bytes: f64,
}

/// What pricing a phase found.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct PhaseCost {
    pub seconds: f64,
    /// Largest sum of rates on a link over its effective capacity (flow tier; 0 for analytical).
    pub peak_load: f64,
}

/// Effective capacity of every link: line rate times efficiency, the network's from the
/// topology's transport, the server's from its GPU's link where that states its own (or
/// `nvlink_scale` x line rate on NVLink when a phase overrides its efficiency, e.g. in-switch
/// reduction).
pub fn capacities(topo: &Topology, efficiency: &Efficiency, nvlink_scale: Option<f64>) -> Vec<f64> {
    (0..topo.graph.edge_count())
        .map(|l| capacity(topo, efficiency, nvlink_scale, l))
        .collect()
}

/// Effective capacity of link `l` ([`capacities`], one link).
pub fn capacity(
    topo: &Topology,
    efficiency: &Efficiency,
    nvlink_scale: Option<f64>,
    l: usize,
) -> f64 {
    let link = &topo.graph[EdgeIndex::new(l)];
    link.bandwidth
        * match link.kind {
            LinkKind::NvLink => {
                nvlink_scale.unwrap_or(topo.spec.intra_efficiency.unwrap_or(efficiency.nvlink))
            }
            LinkKind::Pcie => efficiency.pcie,
            LinkKind::Network => topo.spec.transport.efficiency(),
            LinkKind::Wan => efficiency.wan,
        }
}

/// Prices one phase, each link's capacity looked up by `capacity` (by link index: a collective
/// crosses a few of a large topology's links). `steady` marks a phase repeated back to back
/// (see the module docs).
pub fn price(
    tier: Tier,
    capacity: &dyn Fn(usize) -> f64,
    transfers: &[Placed],
    steady: bool,
) -> PhaseCost {
    match tier {
        Tier::Analytical => PhaseCost {
            seconds: analytical_phase(capacity, transfers),
            peak_load: 0.0,
        },
        Tier::Flow if steady => steady_phase(capacity, transfers),
        Tier::Flow => flow_phase(capacity, transfers),
    }
}

/// The analytical tier's phase: each transfer's latency plus the drain of the busiest link of
/// its route, the slowest transfer's, over the links the phase uses (`compact`).
fn analytical_phase(capacity: &dyn Fn(usize) -> f64, transfers: &[Placed]) -> f64 {
    let (capacity, routes) = compact(capacity, transfers);
    let mut load = vec![0.0; capacity.len()];
    for (t, route) in transfers.iter().zip(&routes) {
        for &l in route {
            load[l as usize] += t.bytes;
        }
    }
    transfers
        .iter()
        .zip(&routes)
        .map(|(t, route)| {
            let drain = route
                .iter()
                .map(|&l| load[l as usize] / capacity[l as usize])
                .fold(0.0, f64::max);
            t.latency + drain
        })
        .fold(0.0, f64::max)
}

/// The capacities of the links `transfers` cross, in link order, and each transfer's route in
/// those links' places: a phase is priced over the links it uses, not the whole topology's
/// (same figures, in time proportional to the phase's routes).
fn compact(capacity: &dyn Fn(usize) -> f64, transfers: &[Placed]) -> (Vec<f64>, Vec<Vec<u32>>) {
    let mut used: Vec<u32> = transfers
        .iter()
        .flat_map(|t| t.links.iter().map(|e| e.index() as u32))
        .collect();
    used.sort_unstable();
    used.dedup();
    let place = |e: &EdgeIndex| used.binary_search(&(e.index() as u32)).expect("listed") as u32;
    let routes = transfers
        .iter()
        .map(|t| t.links.iter().map(place).collect())
        .collect();
    (used.iter().map(|&l| capacity(l as usize)).collect(), routes)
}

/// All transfers active at once: one max-min allocation, no departures.
fn steady_phase(capacity: &dyn Fn(usize) -> f64, transfers: &[Placed]) -> PhaseCost {
    let (capacity, routes) = compact(capacity, transfers);
    let mut model = FlowModel::new(capacity);
    let ids = model.start(
        SimTime::ZERO,
        routes.into_iter().zip(transfers).map(|(r, t)| (r, t.bytes)),
    );
    let seconds = transfers
        .iter()
        .zip(ids)
        .map(|(t, id)| {
            let rate = model.rate(id);
            t.latency + if rate > 0.0 { t.bytes / rate } else { 0.0 }
        })
        .fold(0.0, f64::max);
    PhaseCost {
        seconds,
        peak_load: model.peak_load(),
    }
}

/// Events of a flow phase: a batch of transfers starts moving bytes, or flows may have finished.
enum Ev {
    Start(usize),
    Due,
}

/// A phase on the flow model, run on the engine.
struct FlowPhase<'a> {
    transfers: &'a [Placed],
    /// Each transfer's route in the model's links (`compact`).
    routes: Vec<Vec<u32>>,
    /// Transfers grouped by start time (their route latency), so that a symmetric phase of
    /// thousands of flows costs one rate computation.
    batches: Vec<(SimTime, Vec<usize>)>,
    model: FlowModel,
    due: Option<EventId>,
    end: SimTime,
}

impl FlowPhase<'_> {
    fn reschedule(&mut self, sched: &mut Scheduler<Ev>) {
        if let Some(id) = self.due.take() {
            sched.cancel(id);
        }
        if let Some(t) = self.model.next_completion() {
            self.due = Some(sched.at(t.max(sched.now()), Ev::Due));
        }
    }
}

impl Process for FlowPhase<'_> {
    type Event = Ev;

    fn start(&mut self, sched: &mut Scheduler<Ev>) {
        for (b, (at, _)) in self.batches.iter().enumerate() {
            sched.at(*at, Ev::Start(b));
        }
    }

    fn handle(&mut self, ev: Ev, sched: &mut Scheduler<Ev>) {
        let now = sched.now();
        match ev {
            Ev::Start(b) => {
                let (transfers, routes) = (self.transfers, &self.routes);
                let flows = self.batches[b]
                    .1
                    .iter()
                    .map(|&i| (routes[i].clone(), transfers[i].bytes));
                self.model.start(now, flows);
            }
            Ev::Due => {
                self.due = None;
                self.model.finish_due(now);
            }
        }
        self.end = self.end.max(now);
        self.reschedule(sched);
    }
}

fn flow_phase(capacity: &dyn Fn(usize) -> f64, transfers: &[Placed]) -> PhaseCost {
    let mut order: Vec<usize> = (0..transfers.len()).collect();
    order.sort_by(|&a, &b| transfers[a].latency.total_cmp(&transfers[b].latency));
    let mut batches: Vec<(SimTime, Vec<usize>)> = Vec::new();
    for i in order {
        let t = SimTime::from_secs_f64(transfers[i].latency);
        match batches.last_mut() {
            Some((at, list)) if *at == t => list.push(i),
            _ => batches.push((t, vec![i])),
        }
    }
    let (capacity, routes) = compact(capacity, transfers);
    let mut sim = Simulation::new(FlowPhase {
        transfers,
        routes,
        batches,
        model: FlowModel::new(capacity),
        due: None,
        end: SimTime::ZERO,
    });
    sim.run_to_end();
    let phase = sim.process;
    debug_assert!(phase.model.is_idle(), "flows left unfinished");
    PhaseCost {
        seconds: phase.end.as_secs_f64(),
        peak_load: phase.model.peak_load(),
    }
}

/// The vertex of an endpoint's NVSwitch: the switch next to the node's first GPU.
pub fn switch_of(topo: &Topology, gpu: NodeIndex) -> Option<NodeIndex> {
    topo.graph
        .neighbors(gpu)
        .find(|&v| topo.graph[v].kind == super::topology::DeviceKind::NvSwitch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::topology::spec::{InterKind, TopologySpec};

    fn placed(topo: &Topology, pairs: &[(u32, u32)], bytes: f64) -> Vec<Placed> {
        pairs
            .iter()
            .map(|&(a, b)| {
                let route = topo.route(a, b);
                Placed {
                    latency: topo.route_latency(&route),
                    links: route.links,
                    bytes,
                }
            })
            .collect()
    }

    #[test]
    fn tiers_agree_when_no_link_is_shared() {
        let mut spec = TopologySpec::new(2, 8);
        spec.inter = InterKind::RailOptimized;
        let topo = Topology::build(&spec).unwrap();
        let cap = capacities(&topo, &Efficiency::DEFAULT, None);
        for bytes in [1e3, 1e6, 1e9] {
            // Disjoint pairs inside node 0.
            let t = placed(&topo, &[(0, 1), (2, 3), (4, 5)], bytes);
            let a = price(Tier::Analytical, &|l| cap[l], &t, false);
            let f = price(Tier::Flow, &|l| cap[l], &t, false);
            assert!(
                (a.seconds - f.seconds).abs() <= 1e-12 + 1e-9 * a.seconds,
                "{a:?} {f:?}"
            );
            // Same-rail pairs between the nodes.
            let t = placed(&topo, &[(1, 9), (2, 10)], bytes);
            let a = price(Tier::Analytical, &|l| cap[l], &t, false);
            let f = price(Tier::Flow, &|l| cap[l], &t, false);
            assert!(
                (a.seconds - f.seconds).abs() <= 1e-12 + 1e-9 * a.seconds,
                "{a:?} {f:?}"
            );
        }
    }

    #[test]
    fn both_tiers_see_a_shared_link() {
        let topo = Topology::build(&TopologySpec::new(1, 8)).unwrap();
        let cap = capacities(&topo, &Efficiency::DEFAULT, None);
        // Seven GPUs send to GPU 0 at once: they share its NVSwitch downlink.
        let senders: Vec<(u32, u32)> = (1..8).map(|s| (s, 0)).collect();
        let t = placed(&topo, &senders, 1e9);
        let a = price(Tier::Analytical, &|l| cap[l], &t, false);
        let f = price(Tier::Flow, &|l| cap[l], &t, false);
        let steady = price(Tier::Flow, &|l| cap[l], &t, true);
        assert!(
            (steady.seconds - f.seconds).abs() < 1e-12,
            "equal flows: steady and dynamic agree"
        );
        // Equal flows through one link: the analytical tier's even share of the link over the
        // phase is exactly max-min fairness, seven times one sender alone.
        let ratio = (f.seconds - t[0].latency) / (a.seconds - t[0].latency);
        assert!((ratio - 1.0).abs() < 1e-6, "{ratio}");
        let alone = price(Tier::Analytical, &|l| cap[l], &t[..1], false);
        let slower = (a.seconds - t[0].latency) / (alone.seconds - t[0].latency);
        assert!((slower - 7.0).abs() < 1e-6, "{slower}");
        assert!((f.peak_load - 1.0).abs() < 1e-9);
    }
}
