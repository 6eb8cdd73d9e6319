//! Runs a [`Graph`] on the engine and records when each operation ran.
//!
//! An operation takes its duration, except on a kernel lane of a graph with [`Contention`]: there
//! it progresses more slowly while a collective of its group runs, so its end moves (the pending
//! event is cancelled and scheduled again) whenever the group's first collective starts or its
//! last one ends.

use super::graph::{Contention, Graph, LaneId, LaneUse, OpId};
use super::timeline::Timeline;
use crate::engine::{EventId, Process, RunStats, Scheduler, SimTime, Simulation};
use std::collections::HashMap;

/// Lanes slowing each other: which group each lane is in, what runs where.
struct Shared {
    rate_ppm: u64,
    /// Group of each lane (index into `running`), kernel and collective lanes only.
    group: Vec<Option<u32>>,
    /// Kernel lanes of each group.
    kernels: Vec<Vec<LaneId>>,
    /// Collectives running in each group.
    running: Vec<u32>,
    /// Per lane: work left of its running op (picoseconds at full speed), since when, whether
    /// it is slowed, and its pending end.
    left: Vec<u64>,
    since: Vec<SimTime>,
    slowed: Vec<bool>,
    pending: Vec<Option<EventId>>,
}

impl Shared {
    fn new(graph: &Graph, c: Contention) -> Self {
        let mut index: HashMap<&str, u32> = HashMap::new();
        let mut kernels: Vec<Vec<LaneId>> = Vec::new();
        let group = graph
            .lanes
            .iter()
            .enumerate()
            .map(|(l, lane)| {
                if lane.uses == LaneUse::Other {
                    return None;
                }
                let next = index.len() as u32;
                let g = *index.entry(lane.group.as_str()).or_insert(next);
                if g as usize == kernels.len() {
                    kernels.push(Vec::new());
                }
                if lane.uses == LaneUse::Kernels {
                    kernels[g as usize].push(l as LaneId);
                }
                Some(g)
            })
            .collect();
        let n = graph.lanes.len();
        Shared {
            rate_ppm: c.kernel_rate_ppm.max(1),
            group,
            running: vec![0; kernels.len()],
            kernels,
            left: vec![0; n],
            since: vec![SimTime::ZERO; n],
            slowed: vec![false; n],
            pending: vec![None; n],
        }
    }

    /// Wall time for `work` picoseconds of full-speed work, slowed or not (rounded up).
    fn wall(&self, work: u64, slowed: bool) -> SimTime {
        if !slowed {
            return SimTime::from_ps(work);
        }
        let ps = (work as u128 * 1_000_000).div_ceil(self.rate_ppm as u128);
        SimTime::from_ps(ps as u64)
    }

    /// Full-speed work, in picoseconds, that `elapsed` picoseconds of wall time did, slowed or
    /// not (the inverse of [`Self::wall`], rounded down).
    fn work(&self, elapsed: u64, slowed: bool) -> u64 {
        if !slowed {
            return elapsed;
        }
        (elapsed as u128 * self.rate_ppm as u128 / 1_000_000) as u64
    }

    /// Starts `op` of kernel lane `l`: its end, at the speed its group allows now.
    fn start(&mut self, l: usize, op: OpId, work: u64, sched: &mut Scheduler<OpId>) {
        let slowed = self.group[l].is_some_and(|g| self.running[g as usize] > 0);
        (self.left[l], self.since[l], self.slowed[l]) = (work, sched.now(), slowed);
        self.pending[l] = Some(sched.after(self.wall(work, slowed), op));
    }

    /// Group `g`'s kernel lanes change speed: each running op's progress is booked and its end
    /// moved. `running_op(l)` is the op lane `l` is running, if any.
    fn reschedule(
        &mut self,
        g: u32,
        slowed: bool,
        running_op: impl Fn(LaneId) -> Option<OpId>,
        sched: &mut Scheduler<OpId>,
    ) {
        let now = sched.now();
        for i in 0..self.kernels[g as usize].len() {
            let lane = self.kernels[g as usize][i];
            let l = lane as usize;
            let (Some(op), Some(id)) = (running_op(lane), self.pending[l]) else {
                continue;
            };
            if self.slowed[l] == slowed {
                continue;
            }
            let done = self.work((now - self.since[l]).as_ps(), self.slowed[l]);
            self.left[l] = self.left[l].saturating_sub(done);
            sched.cancel(id);
            (self.since[l], self.slowed[l]) = (now, slowed);
            self.pending[l] = Some(sched.after(self.wall(self.left[l], slowed), op));
        }
    }
}

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
    /// Position of each op in its lane's program order.
    position: Vec<u32>,
    start: Vec<SimTime>,
    end: Vec<SimTime>,
    /// The op each lane is running (`None`: the lane is free).
    running: Vec<Option<OpId>>,
    shared: Option<Shared>,
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
            position,
            start: vec![SimTime::MAX; n],
            end: vec![SimTime::MAX; n],
            running: vec![None; graph.lanes.len()],
            shared: graph.contention.map(|c| Shared::new(graph, c)),
        }
    }

    fn try_start(&mut self, lane: LaneId, sched: &mut Scheduler<OpId>) {
        let l = lane as usize;
        if self.running[l].is_some() {
            return;
        }
        let Some(&op) = self.graph.lane_ops[l].get(self.cursor[l] as usize) else {
            return;
        };
        if self.waiting[op as usize] > 0 {
            return;
        }
        self.cursor[l] += 1;
        self.start[op as usize] = sched.now();
        self.running[l] = Some(op);
        let duration = self.graph.ops[op as usize].duration;
        let uses = self.graph.lanes[l].uses;
        let Some(shared) = self.shared.as_mut() else {
            sched.after(duration, op);
            return;
        };
        match (uses, shared.group[l]) {
            (LaneUse::Kernels, Some(_)) => shared.start(l, op, duration.as_ps(), sched),
            (LaneUse::Collectives, Some(g)) => {
                sched.after(duration, op);
                shared.running[g as usize] += 1;
                if shared.running[g as usize] == 1 {
                    let running = &self.running;
                    shared.reschedule(g, true, |k| running[k as usize], sched);
                }
            }
            _ => {
                sched.after(duration, op);
            }
        }
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
        self.running[lane as usize] = None;
        // The lane's next op first: a collective following a collective keeps the group slowed.
        self.try_start(lane, sched);
        if let Some(shared) = self.shared.as_mut()
            && self.graph.lanes[lane as usize].uses == LaneUse::Collectives
            && let Some(g) = shared.group[lane as usize]
        {
            shared.running[g as usize] -= 1;
            if shared.running[g as usize] == 0 {
                let running = &self.running;
                shared.reschedule(g, false, |k| running[k as usize], sched);
            }
        }
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
    // Past the end of simulated time ops end at it, like ops that never ran: not a deadlock.
    if let Some(stuck) = ex.end.iter().position(|&t| t == SimTime::MAX)
        && !stats.overran
    {
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
    use crate::exec::graph::{Contention, LaneUse, Op, OpKind};

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

    fn contended() -> (Graph, LaneId, LaneId) {
        let mut g = Graph::new();
        let compute = g.add_lane_using("compute", "gpu0", LaneUse::Kernels);
        let comm = g.add_lane_using("comm", "gpu0", LaneUse::Collectives);
        g.contention = Some(Contention {
            kernel_rate_ppm: 500_000,
        });
        (g, compute, comm)
    }

    #[test]
    fn kernels_beside_a_collective_slow_and_keep_their_progress() {
        let (mut g, compute, comm) = contended();
        let host = g.add_lane("host copies", "gpu0");
        let a = g.add(op(compute, 10), &[]);
        let b = g.add(op(compute, 100), &[a]);
        // 20 us of collective from 10 us: `b` does 10 us of its work in it at half speed.
        let c = g.add(op(comm, 20), &[a]);
        // A lane that holds no SMs slows nothing.
        let h = g.add(op(host, 200), &[]);
        let (t, _) = execute(&g);
        let us = |x: SimTime| x.as_ps() / 1_000_000;
        assert_eq!((us(t.start[b as usize]), us(t.end[b as usize])), (10, 120));
        assert_eq!(us(t.end[c as usize]), 30);
        assert_eq!(us(t.end[h as usize]), 200);
        // Without contention the same graph runs `b` in its own 100 us.
        g.contention = None;
        let (t, _) = execute(&g);
        assert_eq!(us(t.end[b as usize]), 110);
    }

    #[test]
    fn back_to_back_collectives_keep_the_kernels_slowed_and_groups_are_apart() {
        let (mut g, compute, comm) = contended();
        let other = g.add_lane_using("compute", "gpu1", LaneUse::Kernels);
        let k = g.add(op(compute, 40), &[]);
        let c1 = g.add(op(comm, 10), &[]);
        let c2 = g.add(op(comm, 10), &[c1]);
        let o = g.add(op(other, 40), &[]);
        let (t, _) = execute(&g);
        let us = |x: SimTime| x.as_ps() / 1_000_000;
        // 20 us at half speed (10 us of work), then the other 30 at full speed.
        assert_eq!(us(t.end[c2 as usize]), 20);
        assert_eq!(us(t.end[k as usize]), 50);
        // Another GPU's kernels do not see gpu0's collectives.
        assert_eq!(us(t.end[o as usize]), 40);
    }

    #[test]
    fn the_rate_is_the_share_of_multiprocessors_left() {
        let c = Contention::of_blocks(24, 132).unwrap();
        assert_eq!(c.kernel_rate_ppm, 108 * 1_000_000 / 132);
        assert_eq!(Contention::of_blocks(24, 24), None);
        assert_eq!(Contention::of_blocks(24, 1), None);
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
