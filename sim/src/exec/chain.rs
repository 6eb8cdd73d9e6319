//! A chain: kernels that run back to back on one lane, none of them waiting for anything but the
//! one before and nothing waiting for any but the last, run as one operation of their summed
//! duration (`Op::chain`). The engine sees one event where it would see one per kernel; traces,
//! views and counters see the kernels ([`Graph::expand`], [`placed`]). A collective that blocks
//! the lane between two of its kernels may be a part too (`OpKind::Communication`): it belongs
//! to the lane its lane carries (`Lane::carried`), holds no multiprocessors and is never slowed.
//!
//! A chain's parts keep their order and their share of its time: where the chain ran longer than
//! its parts add up to (slowed beside a collective, `Contention`), each kernel is stretched by the
//! same factor, which is what happens when the whole chain runs at the slowed rate. Jitter per
//! kernel cannot be drawn on a chain: graphs with it are built without.

use super::graph::{Graph, Op, OpId, OpKind};
use super::timeline::Timeline;
use crate::engine::SimTime;
use std::borrow::Cow;

/// Index of a chain's parts in [`Graph::chains`].
pub type ChainId = u32;

/// One kernel of a chain: what an operation of its own would carry, but its lane, layer,
/// micro-batch and FLOP accounting, which are the chain's. A communication part is on the
/// lane its chain's lane carries, of no layer or micro-batch.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub name: Cow<'static, str>,
    pub kind: OpKind,
    pub duration: SimTime,
    pub flops: f64,
    pub bytes: f64,
    pub tier: &'static str,
    /// The value of its lane's counter while it runs (a GPU's board power), if it sets one.
    pub value: Option<f64>,
}

impl Part {
    /// Whether it is a collective run inside the chain, on the lane its lane carries.
    pub fn is_carried(&self) -> bool {
        self.kind == OpKind::Communication
    }

    /// `op` as a part, setting its lane's counter to `value`.
    pub fn of(op: Op, value: Option<f64>) -> Part {
        Part {
            name: op.name,
            kind: op.kind,
            duration: op.duration,
            flops: op.flops,
            bytes: op.bytes,
            tier: op.tier,
            value,
        }
    }
}

/// Chains the last few added are searched for before a new one is stored: a step repeats the
/// same chains micro-batch after micro-batch.
const SEARCHED: usize = 64;

impl Graph {
    /// `parts` stored as a chain (once: an identical one among the last few is reused).
    pub fn add_chain(&mut self, parts: &[Part]) -> ChainId {
        let from = self.chains.len().saturating_sub(SEARCHED);
        if let Some(i) = self.chains[from..].iter().rposition(|c| c[..] == *parts) {
            return (from + i) as ChainId;
        }
        self.chains.push(parts.to_vec());
        (self.chains.len() - 1) as ChainId
    }

    /// How long operation `op` keeps its own lane busy at its price: its duration less its
    /// communication parts'.
    pub fn own_duration(&self, op: OpId) -> SimTime {
        let o = &self.ops[op as usize];
        match o.chain {
            Some(c) => self.chains[c as usize]
                .iter()
                .filter(|p| !p.is_carried())
                .fold(SimTime::ZERO, |t, p| t + p.duration),
            None => o.duration,
        }
    }

    /// The graph with every chain spelt out as its kernels, one operation each, and the timeline
    /// they ran on ([`placed`]); counters follow their parts. Operations keep their order.
    pub fn expand(&self, timeline: &Timeline) -> (Graph, Timeline) {
        let mut g = Graph::new();
        for lane in &self.lanes {
            g.add_lane_using(lane.name.clone(), lane.group.clone(), lane.uses);
        }
        g.contention = self.contention;
        let (mut start, mut end) = (Vec::new(), Vec::new());
        // The expanded id of each operation's last kernel, which its dependents wait for.
        let mut last: Vec<OpId> = Vec::with_capacity(self.len());
        let mut firsts: Vec<(OpId, OpId)> = Vec::new();
        for (i, op) in self.ops.iter().enumerate() {
            let deps: Vec<OpId> = self
                .deps(i as OpId)
                .iter()
                .map(|&d| last[d as usize])
                .collect();
            if op.chain.is_none() {
                last.push(g.add(op.clone(), &deps));
                start.push(timeline.start[i]);
                end.push(timeline.end[i]);
                continue;
            }
            let mut previous: Option<OpId> = None;
            for (part, s, e) in placed(self, timeline, i as OpId) {
                let mut kernel = Op {
                    name: part.name.clone(),
                    kind: part.kind,
                    duration: part.duration,
                    flops: part.flops,
                    bytes: part.bytes,
                    tier: part.tier,
                    chain: None,
                    ..op.clone()
                };
                if part.is_carried() {
                    kernel.lane = self.lanes[op.lane as usize]
                        .carried
                        .expect("a chain with communication parts is on a lane that carries one");
                    (kernel.layer, kernel.micro_batch, kernel.model_flops) = (None, None, true);
                }
                let id = g.add(
                    kernel,
                    previous.as_ref().map_or(&deps[..], std::slice::from_ref),
                );
                if previous.is_none() {
                    firsts.push((i as OpId, id));
                }
                previous = Some(id);
                start.push(s);
                end.push(e);
            }
            last.push(previous.expect("a chain has parts"));
        }
        for counter in &self.counters {
            let mut c = counter.clone();
            c.values.clear();
            for &(op, v) in &counter.values {
                match self.ops[op as usize].chain {
                    None => c.values.push((last[op as usize], v)),
                    Some(chain) => {
                        let first = firsts[firsts.partition_point(|f| f.0 < op)].1;
                        let parts = &self.chains[chain as usize];
                        c.values.extend(
                            (first..)
                                .zip(parts)
                                .filter_map(|(id, p)| p.value.map(|v| (id, v))),
                        );
                    }
                }
            }
            g.counters.push(c);
        }
        (g, Timeline { start, end })
    }
}

/// Each part of operation `op` with when it ran: communication parts for their durations, the
/// rest of the operation's span shared out among its kernels in proportion to their durations
/// (exactly their durations when nothing slowed it). An operation that is not a chain is its
/// one part's worth: nothing.
pub fn placed<'g>(
    graph: &'g Graph,
    timeline: &Timeline,
    op: OpId,
) -> impl Iterator<Item = (&'g Part, SimTime, SimTime)> {
    let i = op as usize;
    let parts: &[Part] = graph.ops[i]
        .chain
        .map_or(&[], |c| &graph.chains[c as usize]);
    let (s, e) = (timeline.start[i], timeline.end[i]);
    let (mut total, mut fixed) = (0u128, 0u128);
    for p in parts {
        total += p.duration.as_ps() as u128;
        if p.is_carried() {
            fixed += p.duration.as_ps() as u128;
        }
    }
    let span = e.saturating_sub(s).as_ps() as u128;
    let stretched = span != total && total > fixed;
    let (kernels, kernel_span) = (total - fixed, span.saturating_sub(fixed));
    // Picoseconds into the span after `done` of kernels and `held` of collectives.
    let at = move |done: u128, held: u128| {
        let offset = if stretched {
            kernel_span * done / kernels + held
        } else {
            (done + held).min(span)
        };
        s + SimTime::from_ps(offset as u64)
    };
    let (mut done, mut held) = (0u128, 0u128);
    parts.iter().map(move |p| {
        let from = at(done, held);
        if p.is_carried() {
            held += p.duration.as_ps() as u128;
        } else {
            done += p.duration.as_ps() as u128;
        }
        (p, from, at(done, held))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::graph::{Contention, LaneId, LaneUse};
    use crate::exec::{Counter, execute};

    fn part(name: &'static str, us: u64, watts: Option<f64>) -> Part {
        Part {
            name: name.into(),
            kind: OpKind::Compute,
            duration: SimTime::from_us(us),
            flops: 1.0,
            bytes: 2.0,
            tier: "test",
            value: watts,
        }
    }

    /// Three kernels, then a chain of the same three, beside a collective of `comm_us` that slows
    /// them from their start.
    fn graphs(comm_us: u64) -> (Graph, Graph) {
        let parts = [
            part("a", 10, Some(300.0)),
            part("b", 30, None),
            part("c", 20, Some(500.0)),
        ];
        let build = |chained: bool| {
            let mut g = Graph::new();
            let compute = g.add_lane_using("compute", "gpu", LaneUse::Kernels);
            let comm = g.add_lane_using("comm", "gpu", LaneUse::Collectives);
            g.contention = Some(Contention {
                kernel_rate_ppm: 500_000,
            });
            g.counters.push(Counter {
                name: "board power",
                unit: "W",
                lane: compute,
                base: 100.0,
                values: Vec::new(),
            });
            let first = g.add(Op::test(compute, 5), &[]);
            g.add(Op::test(comm, comm_us), &[first]);
            let mut previous = first;
            if chained {
                let c = g.add_chain(&parts);
                let op = Op {
                    duration: SimTime::from_us(60),
                    chain: Some(c),
                    ..Op::test(compute, 60)
                };
                previous = g.add(op, &[first]);
                g.counters[0].values.push((previous, 0.0));
            } else {
                for p in &parts {
                    let op = Op {
                        name: p.name.clone(),
                        flops: p.flops,
                        bytes: p.bytes,
                        ..Op::test(compute, p.duration.as_ps() / 1_000_000)
                    };
                    previous = g.add(op, &[previous]);
                    if let Some(v) = p.value {
                        g.counters[0].values.push((previous, v));
                    }
                }
            }
            g.add(Op::test(comm, 1), &[previous]);
            g
        };
        (build(false), build(true))
    }

    #[test]
    fn a_chain_runs_as_its_kernels_do_and_expands_to_them() {
        // Slowed all through (200 us of collective) and slowed for its first part alone.
        let (kernels, chained) = graphs(200);
        let (t, stats) = execute(&kernels);
        let (tc, stats_c) = execute(&chained);
        assert_eq!(t.makespan(), tc.makespan());
        assert_eq!(
            stats.events,
            stats_c.events + 2,
            "one event for three kernels"
        );
        let (g, te) = chained.expand(&tc);
        assert_eq!(g.len(), kernels.len());
        for i in 0..g.len() {
            assert_eq!(g.ops[i].name, kernels.ops[i].name);
            assert_eq!(g.deps(i as OpId), kernels.deps(i as OpId), "op {i}");
            assert_eq!((te.start[i], te.end[i]), (t.start[i], t.end[i]), "op {i}");
        }
        assert_eq!(g.counters, kernels.counters);
        let end = t.makespan();
        assert_eq!(
            chained.counters[0].summary(&chained, &tc, end),
            kernels.counters[0].summary(&kernels, &t, end)
        );
        // Slowed for part of its first kernel: the chain ends as they do, its parts share the
        // stretch.
        let (kernels, chained) = graphs(20);
        let (t, _) = execute(&kernels);
        let (tc, _) = execute(&chained);
        assert_eq!(t.makespan(), tc.makespan());
        let spans: Vec<u64> = placed(&chained, &tc, 2)
            .map(|(_, s, e)| (e - s).as_ps())
            .collect();
        // 60 us of work in 70 us: 20 us at half speed, then full speed.
        assert_eq!(spans.iter().sum::<u64>(), 70_000_000);
        assert!(spans[0] < 20_000_000 && spans[1] > 30_000_000, "{spans:?}");
    }

    /// A kernel, a collective that blocks its lane, and a kernel, as three operations or as one
    /// chain whose middle part is carried; another collective of `beside` (start, length, us)
    /// slows the kernels where it overlaps them.
    fn carried(beside: (u64, u64)) -> (Graph, Graph) {
        let build = |chained: bool| {
            let mut g = Graph::new();
            let compute = g.add_lane_using("compute", "gpu", LaneUse::Kernels);
            let tensor = g.add_lane_using("tensor", "gpu", LaneUse::Collectives);
            let other = g.add_lane_using("other", "gpu", LaneUse::Collectives);
            let host = g.add_lane("host", "cpu");
            g.contention = Some(Contention {
                kernel_rate_ppm: 600_000,
            });
            let wait = g.add(Op::test(host, beside.0), &[]);
            g.add(Op::test(other, beside.1), &[wait]);
            let sync = Part {
                kind: OpKind::Communication,
                ..part("sync", 30, None)
            };
            let parts = [part("a", 20, Some(300.0)), sync, part("b", 40, None)];
            if chained {
                g.lanes[compute as usize].carried = Some(tensor);
                let c = g.add_chain(&parts);
                g.add(
                    Op {
                        chain: Some(c),
                        ..Op::test(compute, 90)
                    },
                    &[],
                );
            } else {
                let mut previous: Option<OpId> = None;
                for p in &parts {
                    let lane = if p.is_carried() { tensor } else { compute };
                    let op = Op {
                        name: p.name.clone(),
                        kind: p.kind,
                        flops: p.flops,
                        bytes: p.bytes,
                        ..Op::test(lane, p.duration.as_ps() / 1_000_000)
                    };
                    let deps: Vec<OpId> = previous.into_iter().collect();
                    previous = Some(g.add(op, &deps));
                }
            }
            g
        };
        (build(false), build(true))
    }

    #[test]
    fn a_collective_carried_in_a_chain_runs_unslowed_as_it_does_alone() {
        // Beside: the kernels' start, the collective and the second kernel, the second kernel's
        // middle, nothing.
        for beside in [(0, 10), (10, 40), (30, 35), (70, 15), (0, 0)] {
            let (ops, chained) = carried(beside);
            let (t, _) = execute(&ops);
            let (tc, _) = execute(&chained);
            assert_eq!(t.makespan(), tc.makespan(), "{beside:?}");
            let (g, te) = chained.expand(&tc);
            assert_eq!(g.len(), ops.len());
            for i in 0..g.len() {
                assert_eq!(g.ops[i].lane, ops.ops[i].lane, "op {i}");
                assert_eq!(g.deps(i as OpId), ops.deps(i as OpId), "op {i}");
            }
            // The collective takes its time; the kernels share out the rest of the span (where
            // it sits among them is not exact).
            assert_eq!(te.end[3] - te.start[3], t.end[3] - t.start[3], "{beside:?}");
            for lane in 0..ops.lanes.len() as LaneId {
                for kind in [None, Some(OpKind::Compute), Some(OpKind::Communication)] {
                    assert_eq!(
                        tc.busy(&chained, lane, kind),
                        t.busy(&ops, lane, kind),
                        "{beside:?} lane {lane} {kind:?}"
                    );
                }
            }
            assert_eq!(chained.own_duration(2), SimTime::from_us(60));
        }
    }

    #[test]
    fn identical_chains_are_stored_once() {
        let mut g = Graph::new();
        let a = g.add_chain(&[part("a", 1, None), part("b", 2, None)]);
        let b = g.add_chain(&[part("a", 1, None)]);
        assert_eq!(g.add_chain(&[part("a", 1, None), part("b", 2, None)]), a);
        assert_ne!(a, b);
        assert_eq!(g.chains.len(), 2);
    }
}
