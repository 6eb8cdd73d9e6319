//! Runs a [`Graph`] on the engine and records when each operation ran: once, or as several
//! instances side by side ([`Replicas`]).
//!
//! An operation takes its duration, except on a kernel lane of a graph with [`Contention`]: there
//! it progresses more slowly while a collective of its group runs, so its end moves (the pending
//! event is cancelled and scheduled again) whenever the group's first collective starts or its
//! last one ends (`contention`).

use super::contention::Sharing;
use super::fabric::{Fabric, LinkLoads};
use super::graph::{Graph, LaneId, LaneUse, OpId};
use super::replicas::{Draws, Rendezvous, Replicas, Waits};
use super::timeline::Timeline;
use crate::engine::{Process, RunStats, Scheduler, SimTime, Simulation};

/// The graph as a process: its only event is "this instance of an operation finished", numbered
/// `op x instances + instance`, so that the instances of one operation, which run at about the
/// same moment, sit side by side in memory (offset by `base` when graphs share the engine:
/// `jobs`). Lanes are numbered the same way.
pub(super) struct Executor<'g> {
    graph: &'g Graph,
    replicas: &'g Replicas,
    /// Where this graph's events start among the engine's, its job number, and what its
    /// operations load on links shared with other graphs (`fabric`).
    base: u32,
    job: usize,
    loads: Option<&'g LinkLoads>,
    /// Instance operations finished in this run of the graph.
    pub(super) done: usize,
    instances: usize,
    lanes: usize,
    /// Each operation's lane and duration, and each lane's use, read at every event.
    op_lane: Vec<LaneId>,
    duration: Vec<SimTime>,
    uses: Vec<LaneUse>,
    /// Dependencies not yet done, per instance op.
    waiting: Vec<u32>,
    /// Ops that depend on each op: `dependents[dep_start[i]..dep_start[i + 1]]`.
    dependents: Vec<OpId>,
    dependent_start: Vec<u32>,
    /// Index into the lane's program order of the next op to start, per instance lane.
    cursor: Vec<u32>,
    /// Position of each op in its lane's program order.
    position: Vec<u32>,
    pub(super) start: Vec<SimTime>,
    pub(super) end: Vec<SimTime>,
    /// The instance op each instance lane is running or waiting at (`None`: the lane is free).
    running: Vec<Option<u32>>,
    sharing: Option<Sharing>,
    /// Whether some chain has communication parts, which `sharing` must be told of.
    segmented: bool,
    rendezvous: Rendezvous,
    jitter: Option<Draws>,
}

impl<'g> Executor<'g> {
    pub(super) fn new(graph: &'g Graph, replicas: &'g Replicas) -> Self {
        let n = graph.len();
        let instances = replicas.count as usize;
        assert!(
            (n as u64) * (instances as u64) < u32::MAX as u64,
            "{instances} instances of {n} operations do not fit the executor's 32-bit event ids"
        );
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
        let lanes = graph.lanes.len();
        let sharing = graph.contention.map(|c| Sharing::new(graph, c, instances));
        // One pass over the operations for both (they are large; each pass reads them all).
        let (op_lane, duration) = graph.ops.iter().map(|o| (o.lane, o.duration)).unzip();
        Executor {
            graph,
            replicas,
            base: 0,
            job: 0,
            loads: None,
            done: 0,
            instances,
            lanes,
            op_lane,
            duration,
            uses: graph.lanes.iter().map(|l| l.uses).collect(),
            waiting: if instances == 1 {
                waiting
            } else {
                waiting
                    .iter()
                    .flat_map(|&w| std::iter::repeat_n(w, instances))
                    .collect()
            },
            dependents,
            dependent_start,
            cursor: vec![0; lanes * instances],
            position,
            start: vec![SimTime::MAX; n * instances],
            end: vec![SimTime::MAX; n * instances],
            running: vec![None; lanes * instances],
            segmented: sharing.as_ref().is_some_and(|s| s.has_segments()),
            sharing,
            rendezvous: Rendezvous::new(instances, lanes),
            jitter: replicas.jitter.as_ref().map(|j| j.open()),
        }
    }

    /// This graph as job `job` of several sharing the engine from event `base`, its operations
    /// loading the shared links as `loads` says.
    pub(super) fn placed(mut self, job: usize, base: u32, loads: &'g LinkLoads) -> Self {
        (self.job, self.base, self.loads) = (job, base, Some(loads));
        self
    }

    /// Instance operations in one run of the graph.
    pub(super) fn total(&self) -> usize {
        self.graph.len() * self.instances
    }

    /// Ready to run the graph again from the start (what it recorded is overwritten).
    pub(super) fn reset(&mut self) {
        let n = self.graph.len();
        for op in 0..n as OpId {
            let w = self.graph.deps(op).len() as u32;
            let at = op as usize * self.instances;
            self.waiting[at..at + self.instances].fill(w);
        }
        self.cursor.fill(0);
        self.running.fill(None);
        self.start.fill(SimTime::MAX);
        self.end.fill(SimTime::MAX);
        self.done = 0;
    }

    /// Starts every lane of every instance that can start.
    pub(super) fn start_all(&mut self, sched: &mut Scheduler<u32>, fabric: &mut Option<Fabric>) {
        for i in 0..self.replicas.count as usize {
            for lane in 0..self.lanes as LaneId {
                self.try_start(i, lane, sched, fabric);
            }
        }
    }

    fn try_start(
        &mut self,
        i: usize,
        lane: LaneId,
        sched: &mut Scheduler<u32>,
        fabric: &mut Option<Fabric>,
    ) {
        let l = lane as usize;
        let il = l * self.instances + i;
        if self.running[il].is_some() {
            return;
        }
        let Some(&op) = self.graph.lane_ops[l].get(self.cursor[il] as usize) else {
            return;
        };
        let ev = (op as usize * self.instances + i) as u32;
        if self.waiting[ev as usize] > 0 {
            return;
        }
        self.cursor[il] += 1;
        self.running[il] = Some(ev);
        let Some(class) = self.replicas.class(op) else {
            self.begin(i, l, op, sched, fabric);
            return self.hold(i, l, 1, sched);
        };
        // A collective holds its SMs from the moment its kernel is launched, waiting or not.
        self.hold(i, l, 1, sched);
        let groups = &self.replicas.classes[class as usize];
        let group = groups.of(i as u32);
        let size = groups.members(group).len();
        let now = sched.now();
        if let Some(members) = self.rendezvous.arrive(op, group, size, i as u32, lane, now) {
            for m in members {
                self.begin(m as usize, l, op, sched, fabric);
            }
        }
    }

    /// On a collective lane, one more (`by = 1`) or one fewer operation holds instance `i`'s SMs.
    fn hold(&mut self, i: usize, l: usize, by: i32, sched: &mut Scheduler<u32>) {
        if self.uses[l] == LaneUse::Collectives
            && let Some(sharing) = self.sharing.as_mut()
        {
            let (running, n, base) = (&self.running, self.instances, self.base);
            sharing.hold(
                i,
                l,
                by,
                |k, lane| running[lane * n + k].map(|e| base + e),
                sched,
            );
        }
    }

    /// Instance `i` of `op`, on lane `l`, starts now.
    fn begin(
        &mut self,
        i: usize,
        l: usize,
        op: OpId,
        sched: &mut Scheduler<u32>,
        fabric: &mut Option<Fabric>,
    ) {
        let ev = (op as usize * self.instances + i) as u32;
        self.start[ev as usize] = sched.now();
        let duration = self
            .replicas
            .base(i * self.lanes + l, op, self.duration[op as usize]);
        let mut duration = self.replicas.scaled(i, l, self.lanes, duration);
        if let Some(jitter) = self.jitter.as_mut() {
            duration = jitter.vary(i * self.lanes + l, ev, duration);
        }
        let global = self.base + ev;
        if let (Some(fabric), Some(loads)) = (fabric.as_mut(), self.loads)
            && self.uses[l] == LaneUse::Collectives
            && fabric.start(
                self.job,
                loads,
                op as usize,
                global,
                duration.as_ps(),
                sched,
            )
        {
            return;
        }
        match self.sharing.as_mut() {
            Some(sharing) if self.uses[l] == LaneUse::Kernels && sharing.shares(l) => {
                let chain = self.graph.ops[op as usize].chain.filter(|_| self.segmented);
                sharing.start(i, l, (global, chain), duration.as_ps(), sched)
            }
            _ => {
                sched.after(duration, global);
            }
        }
    }

    /// Event `ev` (this graph's number) fired: its operation instance finished.
    pub(super) fn finished(
        &mut self,
        ev: u32,
        sched: &mut Scheduler<u32>,
        fabric: &mut Option<Fabric>,
    ) {
        self.done += 1;
        let e = ev as usize;
        self.end[e] = sched.now();
        let n = self.instances;
        let (o, i) = if n == 1 { (e, 0) } else { (e / n, e % n) };
        let lane = self.op_lane[o];
        let l = lane as usize;
        self.running[l * n + i] = None;
        // The lane's next op first: a collective following a collective keeps the group slowed.
        self.try_start(i, lane, sched, fabric);
        self.hold(i, l, -1, sched);
        let (a, b) = (self.dependent_start[o], self.dependent_start[o + 1]);
        for k in a..b {
            let d = self.dependents[k as usize] as usize;
            self.waiting[d * n + i] -= 1;
            if self.waiting[d * n + i] == 0 {
                let dl = self.op_lane[d];
                if self.cursor[dl as usize * n + i] == self.position[d] {
                    self.try_start(i, dl, sched, fabric);
                }
            }
        }
    }
}

/// One graph alone on the engine.
struct Single<'g>(Executor<'g>);

impl Process for Single<'_> {
    type Event = u32;

    fn start(&mut self, sched: &mut Scheduler<u32>) {
        self.0.start_all(sched, &mut None);
    }

    fn handle(&mut self, ev: u32, sched: &mut Scheduler<u32>) {
        self.0.finished(ev, sched, &mut None);
    }
}

/// Runs `graph` to completion. A graph always completes (see the test
/// `forward_dependencies_are_refused`); an operation that never ran is an engine bug and panics
/// naming it.
pub fn execute(graph: &Graph) -> (Timeline, RunStats) {
    let (timeline, stats, _) = execute_replicas(graph, &Replicas::single());
    (timeline, stats)
}

/// Runs `replicas.count` instances of `graph` side by side; the timeline holds instance `i`'s
/// op `o` at `o x count + i`. Instances complete as one graph does: the unfinished op with the
/// smallest id in any instance can start in every instance, and its collective's members all
/// reach it.
pub fn execute_replicas(graph: &Graph, replicas: &Replicas) -> (Timeline, RunStats, Waits) {
    let mut sim = Simulation::new(Single(Executor::new(graph, replicas)));
    let stats = sim.run_to_end();
    let ex = sim.process.0;
    // Past the end of simulated time ops end at it, like ops that never ran: not a deadlock.
    if let Some(stuck) = ex.end.iter().position(|&t| t == SimTime::MAX)
        && !stats.overran
    {
        let (o, i) = (stuck / ex.instances, stuck % ex.instances);
        let op = &graph.ops[o];
        panic!(
            "operation graph deadlocked: `{}` (op {o} of instance {i}) on lane `{}` never ran; simulation ended at {}",
            op.name, graph.lanes[op.lane as usize].name, stats.end
        );
    }
    (
        Timeline {
            start: ex.start,
            end: ex.end,
        },
        stats,
        ex.rendezvous.waits,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::graph::{Contention, LaneUse, Op};
    use crate::exec::replicas::{Groups, NO_SYNC};

    fn op(lane: LaneId, us: u64) -> Op {
        Op::test(lane, us)
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

    #[test]
    fn instances_meet_at_their_collectives_and_the_slow_one_is_waited_for() {
        let (mut g, compute, comm) = contended();
        g.contention = None;
        let a = g.add(op(compute, 10), &[]);
        let c = g.add(op(comm, 5), &[a]);
        let b = g.add(op(compute, 10), &[c]);
        // Three instances; the second computes 1.5 times slower; all three are one group.
        let mut scale_ppm = vec![1_000_000; 3 * 2];
        scale_ppm[2 + compute as usize] = 1_500_000;
        let replicas = Replicas {
            count: 3,
            scale_ppm,
            sync: vec![NO_SYNC, 0, NO_SYNC],
            classes: vec![Groups::new(vec![0, 0, 0])],
            jitter: None,
            alternates: Vec::new(),
            table: Vec::new(),
        };
        let (t, stats, waits) = execute_replicas(&g, &replicas);
        let us = |x: SimTime| x.as_ps() / 1_000_000;
        let at = |i: usize, o: OpId| o as usize * 3 + i;
        // The collective starts when the slow instance arrives at 15 us, in every instance.
        for i in 0..3 {
            assert_eq!(us(t.start[at(i, c)]), 15);
            assert_eq!(us(t.end[at(i, c)]), 20);
        }
        assert_eq!(us(t.end[at(0, b)]), 30);
        assert_eq!(us(t.end[at(1, b)]), 35);
        assert_eq!(stats.events, 9);
        // The fast two waited 5 us each, for the second.
        let lane = comm as usize;
        assert_eq!(us(waits.waited[lane]), 5);
        assert_eq!(us(waits.waited[2 + lane]), 0);
        assert_eq!(us(waits.held[2 + lane]), 10);
        assert_eq!(us(waits.held[lane]), 0);
        // Two groups of one and two: the lone instance does not wait.
        let replicas = Replicas {
            classes: vec![Groups::new(vec![1, 0, 0])],
            ..replicas
        };
        let (t, _, _) = execute_replicas(&g, &replicas);
        assert_eq!(us(t.start[at(0, c)]), 10);
        assert_eq!(us(t.start[at(2, c)]), 15);
    }

    #[test]
    fn a_waiting_collective_holds_its_multiprocessors() {
        let (mut g, compute, comm) = contended();
        let a = g.add(op(compute, 10), &[]);
        g.add(op(comm, 10), &[]);
        let b = g.add(op(compute, 10), &[a]);
        // The second instance's collective is held back by nothing but its peer: both meet at 0.
        let replicas = Replicas {
            count: 2,
            scale_ppm: Vec::new(),
            sync: vec![NO_SYNC, 0, NO_SYNC],
            classes: vec![Groups::new(vec![0, 0])],
            jitter: None,
            alternates: Vec::new(),
            table: Vec::new(),
        };
        let (t, _, _) = execute_replicas(&g, &replicas);
        let us = |x: SimTime| x.as_ps() / 1_000_000;
        // 10 us of collective at half speed: `a` does 5 us of work, then 5 at full speed.
        assert_eq!(us(t.end[a as usize]), 15);
        assert_eq!(us(t.end[b as usize * 2 + 1]), 25);
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
