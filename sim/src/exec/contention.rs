//! Kernels slowed by the collectives beside them on their GPU ([`Contention`]), for every
//! instance of a graph: a group's kernel lanes run at the contended rate while any of the group's
//! collective lanes holds an operation, their remaining work kept and their ends moved. The
//! communication parts of a chain (`exec::chain`) are never slowed: they take their time.

use super::chain::ChainId;
use super::graph::{Contention, Graph, LaneId, LaneUse};
use crate::engine::{EventId, Scheduler, SimTime};
use std::collections::HashMap;

/// Lanes slowing each other. Lanes and groups are indexed per instance: `instance x lanes + lane`
/// and `instance x groups + group`.
pub(super) struct Sharing {
    rate_ppm: u64,
    lanes: usize,
    groups: usize,
    /// Group of each lane of the graph (kernel and collective lanes only).
    group: Vec<Option<u32>>,
    /// Kernel lanes of each group of the graph.
    kernels: Vec<Vec<LaneId>>,
    /// Collectives holding each instance's group.
    running: Vec<u32>,
    /// Per instance lane: work left of its running op (picoseconds at full speed), since when,
    /// whether it is slowed, and its pending end.
    left: Vec<u64>,
    since: Vec<SimTime>,
    slowed: Vec<bool>,
    pending: Vec<Option<EventId>>,
    /// Per chain with communication parts, its stretches of work in order: picoseconds at full
    /// speed and whether they slow (kernels) or not (communication). Empty for the others.
    segments: Vec<Vec<(u64, bool)>>,
    /// Per instance lane, the chain of its running op when that chain has segments.
    chain: Vec<Option<ChainId>>,
}

impl Sharing {
    pub(super) fn new(graph: &Graph, c: Contention, instances: usize) -> Self {
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
        let n = graph.lanes.len() * instances;
        let segments = graph
            .chains
            .iter()
            .map(|parts| {
                let mut segs: Vec<(u64, bool)> = Vec::new();
                if parts.iter().any(|p| p.is_carried()) {
                    for p in parts {
                        let slows = !p.is_carried();
                        match segs.last_mut() {
                            Some((ps, s)) if *s == slows => *ps += p.duration.as_ps(),
                            _ => segs.push((p.duration.as_ps(), slows)),
                        }
                    }
                }
                segs
            })
            .collect();
        Sharing {
            rate_ppm: c.kernel_rate_ppm.max(1),
            lanes: graph.lanes.len(),
            groups: kernels.len(),
            group,
            running: vec![0; kernels.len() * instances],
            kernels,
            left: vec![0; n],
            since: vec![SimTime::ZERO; n],
            slowed: vec![false; n],
            pending: vec![None; n],
            segments,
            chain: vec![None; n],
        }
    }

    /// Whether lane `l` of the graph takes part (a kernel or collective lane).
    pub(super) fn shares(&self, l: usize) -> bool {
        self.group[l].is_some()
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

    /// The stretches of chain `c` still to do, `left` picoseconds of work from its end:
    /// (picoseconds of work, whether they slow).
    fn remaining(&self, c: ChainId, left: u64) -> impl Iterator<Item = (u64, bool)> + '_ {
        let segs = &self.segments[c as usize];
        let mut skip = self.chain_work(c).saturating_sub(left);
        segs.iter().filter_map(move |&(ps, slows)| {
            let cut = skip.min(ps);
            skip -= cut;
            (ps > cut).then_some((ps - cut, slows))
        })
    }

    /// Picoseconds of work of chain `c`'s stretches at full speed (0 for a chain without any).
    fn chain_work(&self, c: ChainId) -> u64 {
        self.segments[c as usize].iter().map(|s| s.0).sum()
    }

    /// Wall time instance lane `il`'s running op needs to finish, slowed or not.
    fn wall_left(&self, il: usize, slowed: bool) -> SimTime {
        let Some(c) = self.chain[il] else {
            return self.wall(self.left[il], slowed);
        };
        let ps = self
            .remaining(c, self.left[il])
            .map(|(ps, slows)| self.stretch(ps, slows, slowed))
            .sum();
        SimTime::from_ps(ps)
    }

    /// Wall picoseconds of a stretch of `ps` of work that slows (`slows`) or not.
    fn stretch(&self, ps: u64, slows: bool, slowed: bool) -> u64 {
        if slows {
            self.wall(ps, slowed).as_ps()
        } else {
            ps
        }
    }

    /// Work instance lane `il`'s running op did in `elapsed` picoseconds of wall time, slowed or
    /// not ([`Self::work`], stretch by stretch through a chain's).
    fn done(&self, il: usize, mut elapsed: u64, slowed: bool) -> u64 {
        let Some(c) = self.chain[il] else {
            return self.work(elapsed, slowed);
        };
        let mut done = 0;
        for (ps, slows) in self.remaining(c, self.left[il]) {
            let wall = self.stretch(ps, slows, slowed);
            if elapsed < wall {
                return done
                    + if slows {
                        self.work(elapsed, slowed)
                    } else {
                        elapsed
                    };
            }
            (elapsed, done) = (elapsed - wall, done + ps);
        }
        done
    }

    /// Whether any chain has communication parts (a kernel lane's op then says its chain).
    pub(super) fn has_segments(&self) -> bool {
        self.segments.iter().any(|s| !s.is_empty())
    }

    /// Starts event `ev` on kernel lane `l` of instance `i`, `work` picoseconds of a chain or
    /// not: its end, at the speed its group allows now. A chain whose work is not its parts'
    /// (scaled for this instance) slows all through.
    pub(super) fn start(
        &mut self,
        i: usize,
        l: usize,
        (ev, chain): (u32, Option<ChainId>),
        work: u64,
        sched: &mut Scheduler<u32>,
    ) {
        let slowed = self.group[l].is_some_and(|g| self.running[i * self.groups + g as usize] > 0);
        let il = i * self.lanes + l;
        (self.left[il], self.since[il], self.slowed[il]) = (work, sched.now(), slowed);
        self.chain[il] =
            chain.filter(|&c| !self.segments[c as usize].is_empty() && self.chain_work(c) == work);
        self.pending[il] = Some(sched.after(self.wall_left(il, slowed), ev));
    }

    /// A collective of lane `l` of instance `i` begins (`by = 1`) or ends (`by = -1`) holding
    /// SMs; the first to begin and the last to end change the speed of the group's kernels.
    /// `running_op(i, l)` is the event instance `i`'s lane `l` is running, if any.
    pub(super) fn hold(
        &mut self,
        i: usize,
        l: usize,
        by: i32,
        running_op: impl Fn(usize, usize) -> Option<u32>,
        sched: &mut Scheduler<u32>,
    ) {
        let Some(g) = self.group[l] else { return };
        let ig = i * self.groups + g as usize;
        let before = self.running[ig];
        self.running[ig] = before.checked_add_signed(by).expect("collective count");
        match (before, self.running[ig]) {
            (0, 1) => self.reschedule(i, g, true, running_op, sched),
            (1, 0) => self.reschedule(i, g, false, running_op, sched),
            _ => {}
        }
    }

    /// Group `g` of instance `i` changes speed: each running op's progress is booked and its
    /// end moved.
    fn reschedule(
        &mut self,
        i: usize,
        g: u32,
        slowed: bool,
        running_op: impl Fn(usize, usize) -> Option<u32>,
        sched: &mut Scheduler<u32>,
    ) {
        let now = sched.now();
        for k in 0..self.kernels[g as usize].len() {
            let l = self.kernels[g as usize][k] as usize;
            let il = i * self.lanes + l;
            let (Some(ev), Some(id)) = (running_op(i, l), self.pending[il]) else {
                continue;
            };
            if self.slowed[il] == slowed {
                continue;
            }
            let done = self.done(il, (now - self.since[il]).as_ps(), self.slowed[il]);
            self.left[il] = self.left[il].saturating_sub(done);
            sched.cancel(id);
            (self.since[il], self.slowed[il]) = (now, slowed);
            self.pending[il] = Some(sched.after(self.wall_left(il, slowed), ev));
        }
    }
}
