//! When each operation of a graph ran, and the summaries drawn from that.

use super::chain::{Part, placed};
use super::graph::{Graph, LaneId, OpId, OpKind};
use crate::engine::SimTime;

/// Start and end time of every operation, indexed by op id.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    pub start: Vec<SimTime>,
    pub end: Vec<SimTime>,
}

impl Timeline {
    /// Whether the run went past the end of simulated time (about 213 days): an operation of a
    /// completed run ends at [`SimTime::MAX`] only when it was held there
    /// (`engine::RunStats::overran`), and the run's times are then not to be read.
    pub fn overran(&self) -> bool {
        self.end.contains(&SimTime::MAX)
    }

    /// Time at which the last operation ended.
    pub fn makespan(&self) -> SimTime {
        self.end.iter().copied().max().unwrap_or(SimTime::ZERO)
    }

    /// Total time `lane` was busy with operations (or parts of chains) of `kind`: its own, less
    /// the communication parts of its chains, and those parts of the chains of lanes that carry
    /// it (`Lane::carried`).
    pub fn busy(&self, graph: &Graph, lane: LaneId, kind: Option<OpKind>) -> SimTime {
        let of_kind = |k: OpKind| kind.is_none_or(|want| want == k);
        let carries = graph.lanes[lane as usize].carried.is_some();
        let own = |p: &Part| !p.is_carried() && of_kind(p.kind);
        let mut sums = vec![None; graph.chains.len()];
        let mut busy = SimTime::ZERO;
        for &op in &graph.lane_ops[lane as usize] {
            let o = &graph.ops[op as usize];
            if o.chain.is_some() && (kind.is_some() || carries) {
                busy += self.parts(graph, op, &own, &mut sums);
            } else if of_kind(o.kind) {
                busy += self.end[op as usize] - self.start[op as usize];
            }
        }
        let carried = |p: &Part| p.is_carried() && of_kind(p.kind);
        let mut sums = vec![None; graph.chains.len()];
        for carrier in graph.carriers(lane) {
            for &op in &graph.lane_ops[carrier as usize] {
                if graph.ops[op as usize].chain.is_some() {
                    busy += self.parts(graph, op, &carried, &mut sums);
                }
            }
        }
        busy
    }

    /// How long the parts of chain `op` that `keep` says ran: summed once a chain (`sums`)
    /// where nothing slowed it, else as [`placed`] shares out its span.
    fn parts(
        &self,
        graph: &Graph,
        op: OpId,
        keep: &dyn Fn(&Part) -> bool,
        sums: &mut [Option<SimTime>],
    ) -> SimTime {
        let (o, i) = (&graph.ops[op as usize], op as usize);
        let c = o.chain.expect("a chain") as usize;
        if self.end[i] - self.start[i] == o.duration {
            return *sums[c].get_or_insert_with(|| {
                let kept = graph.chains[c].iter().filter(|p| keep(p));
                kept.fold(SimTime::ZERO, |t, p| t + p.duration)
            });
        }
        placed(graph, self, op)
            .filter(|(p, _, _)| keep(p))
            .fold(SimTime::ZERO, |t, (_, s, e)| t + (e - s))
    }
}
