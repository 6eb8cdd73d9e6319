//! Runs a [`Graph`] on the engine and records when each operation ran.

use super::graph::{Graph, LaneId, OpId};
use super::timeline::Timeline;
use crate::engine::{Process, RunStats, Scheduler, SimTime, Simulation};

/// The graph as a process: its only event is "this operation finished".
struct Executor<'g> {
    graph: &'g Graph,
    /// Dependencies not yet done, per op.
    waiting: Vec<u32>,
    /// Ops that depend on each op: `dependents[dep_start[i]..dep_start[i + 1]]`.
    dependents: Vec<OpId>,
    dependent_start: Vec<u32>,
    /// Index into the lane's program order of the next op to start.
    cursor: Vec<u32>,
    busy: Vec<bool>,
    /// Position of each op in its lane's program order.
    position: Vec<u32>,
    start: Vec<SimTime>,
    end: Vec<SimTime>,
}

impl<'g> Executor<'g> {
    fn new(graph: &'g Graph) -> Self {
        let n = graph.len();
        let mut count = vec![0u32; n + 1];
        let mut waiting = vec![0u32; n];
        for op in 0..n as OpId {
            for &d in graph.deps(op) {
                count[d as usize + 1] += 1;
            }
            waiting[op as usize] = graph.deps(op).len() as u32;
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let dependent_start = count.clone();
        let mut fill = count;
        let mut dependents = vec![0; dependent_start[n] as usize];
        for op in 0..n as OpId {
            for &d in graph.deps(op) {
                dependents[fill[d as usize] as usize] = op;
                fill[d as usize] += 1;
            }
        }
        let mut position = vec![0u32; n];
        for ops in &graph.lane_ops {
            for (i, &op) in ops.iter().enumerate() {
                position[op as usize] = i as u32;
            }
        }
        Executor {
            graph,
            waiting,
            dependents,
            dependent_start,
            cursor: vec![0; graph.lanes.len()],
            busy: vec![false; graph.lanes.len()],
            position,
            start: vec![SimTime::MAX; n],
            end: vec![SimTime::MAX; n],
        }
    }

    fn try_start(&mut self, lane: LaneId, sched: &mut Scheduler<OpId>) {
        let l = lane as usize;
        if self.busy[l] {
            return;
        }
        let Some(&op) = self.graph.lane_ops[l].get(self.cursor[l] as usize) else {
            return;
        };
        if self.waiting[op as usize] > 0 {
            return;
        }
        self.busy[l] = true;
        self.cursor[l] += 1;
        self.start[op as usize] = sched.now();
        sched.after(self.graph.ops[op as usize].duration, op);
    }
}

impl Process for Executor<'_> {
    type Event = OpId;

    fn start(&mut self, sched: &mut Scheduler<OpId>) {
        for lane in 0..self.graph.lanes.len() as LaneId {
            self.try_start(lane, sched);
        }
    }

    fn handle(&mut self, op: OpId, sched: &mut Scheduler<OpId>) {
        let o = op as usize;
        self.end[o] = sched.now();
        let lane = self.graph.ops[o].lane;
        self.busy[lane as usize] = false;
        self.try_start(lane, sched);
        let (a, b) = (self.dependent_start[o], self.dependent_start[o + 1]);
        for i in a..b {
            let d = self.dependents[i as usize];
            self.waiting[d as usize] -= 1;
            if self.waiting[d as usize] == 0 {
                let dl = self.graph.ops[d as usize].lane;
                if self.cursor[dl as usize] == self.position[d as usize] {
                    self.try_start(dl, sched);
                }
            }
        }
    }
}

/// Runs `graph` to completion. A graph always completes (see the test
/// `forward_dependencies_are_refused`); an operation that never ran is an engine bug and panics
/// naming it.
pub fn execute(graph: &Graph) -> (Timeline, RunStats) {
    let mut sim = Simulation::new(Executor::new(graph));
    let stats = sim.run_to_end();
    let ex = sim.process;
    if let Some(stuck) = ex.end.iter().position(|&t| t == SimTime::MAX) {
        let op = &graph.ops[stuck];
        panic!(
            "operation graph deadlocked: `{}` (op {stuck}) on lane `{}` never ran; simulation ended at {}",
            op.name, graph.lanes[op.lane as usize].name, stats.end
        );
    }
    (
        Timeline {
            start: ex.start,
            end: ex.end,
        },
        stats,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::graph::{Op, OpKind};

    fn op(lane: LaneId, us: u64) -> Op {
        Op {
            name: "op".into(),
            lane,
            kind: OpKind::Compute,
            duration: SimTime::from_us(us),
            flops: 0.0,
            bytes: 0.0,
            tier: "test",
            layer: None,
            micro_batch: None,
            model_flops: true,
        }
    }

    #[test]
    fn lanes_are_in_order_and_dependencies_are_respected() {
        let mut g = Graph::new();
        let compute = g.add_lane("compute", "gpu0");
        let comm = g.add_lane("comm", "gpu0");
        let a = g.add(op(compute, 10), &[]);
        let b = g.add(op(compute, 10), &[]);
        // The collective waits for `a`, then overlaps with `b`.
        let c = g.add(op(comm, 15), &[a]);
        // `d` needs both the compute stream (after b) and the collective.
        let d = g.add(op(compute, 5), &[c]);
        let (t, stats) = execute(&g);
        let us = |x: SimTime| x.as_ps() / 1_000_000;
        assert_eq!((us(t.start[a as usize]), us(t.end[a as usize])), (0, 10));
        assert_eq!((us(t.start[b as usize]), us(t.end[b as usize])), (10, 20));
        assert_eq!((us(t.start[c as usize]), us(t.end[c as usize])), (10, 25));
        assert_eq!((us(t.start[d as usize]), us(t.end[d as usize])), (25, 30));
        assert_eq!(stats.events, 4);
        assert_eq!(t.makespan(), SimTime::from_us(30));
    }

    /// Dependencies point backwards in insertion order and lanes run in insertion order, so the
    /// unfinished op with the smallest id can always start: a graph always completes. The one way
    /// to break that is refused when the op is added.
    #[test]
    #[should_panic(expected = "depends on an op added after it")]
    fn forward_dependencies_are_refused() {
        let mut g = Graph::new();
        let lane = g.add_lane("l", "g");
        g.add(op(lane, 1), &[1]);
    }
}
