//! When each operation of a graph ran, and the summaries drawn from that.

use super::graph::{Graph, LaneId, OpKind};
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

    /// Total time `lane` was busy with operations of `kind`.
    pub fn busy(&self, graph: &Graph, lane: LaneId, kind: Option<OpKind>) -> SimTime {
        graph.lane_ops[lane as usize]
            .iter()
            .filter(|&&op| kind.is_none_or(|k| graph.ops[op as usize].kind == k))
            .fold(SimTime::ZERO, |acc, &op| {
                acc + (self.end[op as usize] - self.start[op as usize])
            })
    }
}
