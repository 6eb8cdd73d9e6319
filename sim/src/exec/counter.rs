//! A quantity that follows the operations of one lane over time, such as a GPU's board power:
//! `base` while the lane is idle and each listed operation's own value while it runs. It is part
//! of the graph (the values are known when the graph is built), and its times come from the
//! timeline, so it can be drawn as a counter track (Chrome trace "C" events) and summarised.
//!
//! The listed operations must belong to `lane` (one in-order lane: they never overlap). Operations
//! of the lane that are not listed count as `base`; a listed chain takes its parts' own values
//! (`Part::value`, `base` for a part without), not the one listed with it.

use super::chain::{Part, placed};
use super::graph::{Graph, LaneId, OpId};
use super::timeline::Timeline;
use crate::engine::SimTime;
use std::collections::BTreeMap;

/// A value over time beside one lane.
#[derive(Clone, Debug, PartialEq)]
pub struct Counter {
    /// What it measures, e.g. "board power".
    pub name: &'static str,
    /// Its unit, e.g. "W".
    pub unit: &'static str,
    /// The lane whose operations set it (its group is the GPU it is drawn beside).
    pub lane: LaneId,
    /// The value while none of `values`' operations runs.
    pub base: f64,
    /// The value while each operation runs.
    pub values: Vec<(OpId, f64)>,
}

/// Time-weighted figures of a counter over an interval.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Summary {
    pub mean: f64,
    pub peak: f64,
    /// The value exceeded no more than 1% of the time.
    pub p99: f64,
    /// The value held at least 99% of the time: the floor it swings down to.
    pub p1: f64,
}

/// Time held at each value, in value order (a counter takes few distinct values), and the
/// energy (value x time), summed in time order.
struct Held {
    /// Time at each value, by its place in `index` (values in total order, as integers).
    slots: Vec<(f64, u64)>,
    index: BTreeMap<i64, usize>,
    /// The slot of a value seen lately, by a hash of it: most holds find theirs here.
    recent: [Option<(i64, usize)>; 16],
    energy: f64,
}

impl Default for Held {
    fn default() -> Self {
        Held {
            slots: Vec::new(),
            index: BTreeMap::new(),
            recent: [None; 16],
            energy: 0.0,
        }
    }
}

impl Held {
    fn hold(&mut self, v: f64, ps: u64) {
        if ps == 0 {
            return;
        }
        self.energy += v * ps as f64;
        // f64's total order as an integer (`f64::total_cmp`).
        let bits = v.to_bits() as i64;
        let key = bits ^ (((bits >> 63) as u64) >> 1) as i64;
        let h = ((key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 60) as usize;
        let slot = match self.recent[h] {
            Some((k, slot)) if k == key => slot,
            _ => {
                let slots = &mut self.slots;
                let slot = *self.index.entry(key).or_insert_with(|| {
                    slots.push((v, 0));
                    slots.len() - 1
                });
                self.recent[h] = Some((key, slot));
                slot
            }
        };
        self.slots[slot].1 += ps;
    }

    fn summary(self, base: f64) -> Summary {
        let held: Vec<(f64, u64)> = self.index.values().map(|&i| self.slots[i]).collect();
        let total: u64 = held.iter().map(|h| h.1).sum();
        if total == 0 {
            return Summary {
                mean: base,
                peak: base,
                p99: base,
                p1: base,
            };
        }
        let quantile = |q: f64| {
            let at = (q * total as f64) as u64;
            let mut seen = 0u64;
            for &(v, d) in &held {
                seen += d;
                if seen > at {
                    return v;
                }
            }
            held.last().map_or(base, |h| h.0)
        };
        Summary {
            mean: self.energy / total as f64,
            peak: held.iter().map(|h| h.0).fold(f64::MIN, f64::max),
            p99: quantile(0.99),
            p1: quantile(0.01),
        }
    }
}

/// A chain's parts' summed duration and their time at each value (picoseconds).
type ChainHeld = (SimTime, Vec<(f64, u64)>);

/// [`ChainHeld`] of a chain's parts (`base` for a part without a value).
fn by_value(parts: &[Part], base: f64) -> ChainHeld {
    let mut values: Vec<(f64, u64)> = Vec::new();
    let mut total = SimTime::ZERO;
    for p in parts {
        total += p.duration;
        let v = p.value.unwrap_or(base);
        match values.iter_mut().find(|(x, _)| x.to_bits() == v.to_bits()) {
            Some((_, ps)) => *ps += p.duration.as_ps(),
            None => values.push((v, p.duration.as_ps())),
        }
    }
    (total, values)
}

impl Counter {
    /// Each listed operation's (or chain part's) start, end and value, in list order, those
    /// that run for some time before `end`.
    fn runs<'a>(
        &'a self,
        graph: &'a Graph,
        timeline: &'a Timeline,
        end: SimTime,
    ) -> impl Iterator<Item = (SimTime, SimTime, f64)> + 'a {
        debug_assert!(
            self.values
                .iter()
                .all(|&(op, _)| graph.ops[op as usize].lane == self.lane)
        );
        let base = self.base;
        self.values
            .iter()
            .flat_map(move |&(op, v)| {
                let i = op as usize;
                let alone = graph.ops[i].chain.is_none();
                let own = alone.then(|| (timeline.start[i], timeline.end[i], v));
                let parts = placed(graph, timeline, op);
                own.into_iter()
                    .chain(parts.map(move |(p, s, e)| (s, e, p.value.unwrap_or(base))))
            })
            .filter(move |&(s, e, _)| e > s && s < end)
    }

    /// The value as a step function from time zero to `end`: each point holds until the next.
    pub fn series(&self, graph: &Graph, timeline: &Timeline, end: SimTime) -> Vec<(SimTime, f64)> {
        let mut runs: Vec<(SimTime, SimTime, f64)> = self.runs(graph, timeline, end).collect();
        runs.sort_by_key(|&(s, _, _)| s);
        let mut points = vec![(SimTime::ZERO, self.base)];
        let push = |t: SimTime, v: f64, points: &mut Vec<(SimTime, f64)>| match points.last_mut() {
            Some(last) if last.0 == t => last.1 = v,
            Some(last) if last.1 == v => {}
            _ => points.push((t, v)),
        };
        for (s, e, v) in runs {
            push(s, v, &mut points);
            push(e.min(end), self.base, &mut points);
        }
        points
    }

    /// The counter's mean, peak and percentiles over `[0, end)`, weighted by time: read from
    /// the listed operations as they come when they come in order, as on one in-order lane (a
    /// chain that ran its parts' time adding its time at each value, summed once), else from
    /// [`Self::series`].
    pub fn summary(&self, graph: &Graph, timeline: &Timeline, end: SimTime) -> Summary {
        let mut held = Held::default();
        let mut by_chain: Vec<Option<ChainHeld>> = vec![None; graph.chains.len()];
        let mut t = SimTime::ZERO;
        for &(op, v) in &self.values {
            let i = op as usize;
            let (s, e) = (timeline.start[i], timeline.end[i]);
            if e <= s || s >= end {
                continue;
            }
            if s < t || e > end {
                return self.summary_of_series(graph, timeline, end);
            }
            held.hold(self.base, (s - t).as_ps());
            t = e;
            let Some(c) = graph.ops[i].chain else {
                held.hold(v, (e - s).as_ps());
                continue;
            };
            let parts = &graph.chains[c as usize];
            let (total, values) =
                by_chain[c as usize].get_or_insert_with(|| by_value(parts, self.base));
            if *total == e - s {
                values.iter().for_each(|&(v, ps)| held.hold(v, ps));
            } else {
                for (p, from, to) in placed(graph, timeline, op) {
                    held.hold(p.value.unwrap_or(self.base), (to - from).as_ps());
                }
            }
        }
        held.hold(self.base, end.saturating_sub(t).as_ps());
        held.summary(self.base)
    }

    fn summary_of_series(&self, graph: &Graph, timeline: &Timeline, end: SimTime) -> Summary {
        let points = self.series(graph, timeline, end);
        let mut held = Held::default();
        for (i, &(t, v)) in points.iter().enumerate() {
            let next = points.get(i + 1).map_or(end, |p| p.0);
            held.hold(v, next.saturating_sub(t).as_ps());
        }
        held.summary(self.base)
    }

    /// Means over `buckets` equal slices of `[0, end)`.
    pub fn buckets(
        &self,
        graph: &Graph,
        timeline: &Timeline,
        end: SimTime,
        buckets: usize,
    ) -> Vec<f64> {
        let points = self.series(graph, timeline, end);
        let end_ps = end.as_ps();
        if buckets == 0 || end_ps == 0 {
            return Vec::new();
        }
        let mut sums = vec![0.0; buckets];
        let width = end_ps as f64 / buckets as f64;
        for (i, &(t, v)) in points.iter().enumerate() {
            let (from, to) = (
                t.as_ps() as f64,
                points.get(i + 1).map_or(end, |p| p.0).as_ps() as f64,
            );
            let mut b = ((from / width) as usize).min(buckets - 1);
            let mut at = from;
            while at < to && b < buckets {
                let edge = ((b + 1) as f64 * width).min(to);
                sums[b] += v * (edge - at);
                at = edge;
                b += 1;
            }
        }
        sums.iter().map(|s| s / width).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::{Op, OpKind, execute};

    fn op(lane: LaneId, ns: u64) -> Op {
        Op {
            name: "k".into(),
            lane,
            kind: OpKind::Compute,
            duration: SimTime::from_ns(ns),
            flops: 0.0,
            bytes: 0.0,
            tier: "roofline",
            layer: None,
            micro_batch: None,
            model_flops: true,
            chain: None,
        }
    }

    #[test]
    fn a_counter_follows_its_lane_and_falls_to_base_in_the_gaps() {
        let mut g = Graph::new();
        let compute = g.add_lane("compute", "GPU 0");
        let comm = g.add_lane("comm", "GPU 0");
        let a = g.add(op(compute, 300), &[]);
        let wait = g.add(op(comm, 200), &[a]);
        let b = g.add(op(compute, 500), &[wait]);
        let (timeline, _) = execute(&g);
        let c = Counter {
            name: "board power",
            unit: "W",
            lane: compute,
            base: 100.0,
            values: vec![(a, 700.0), (b, 300.0)],
        };
        let end = timeline.makespan();
        assert_eq!(end, SimTime::from_ns(1000));
        let series = c.series(&g, &timeline, end);
        assert_eq!(
            series,
            vec![
                (SimTime::ZERO, 700.0),
                (SimTime::from_ns(300), 100.0),
                (SimTime::from_ns(500), 300.0),
                (SimTime::from_ns(1000), 100.0),
            ]
        );
        let s = c.summary(&g, &timeline, end);
        assert!((s.mean - (0.3 * 700.0 + 0.2 * 100.0 + 0.5 * 300.0)).abs() < 1e-9);
        assert_eq!(s.peak, 700.0);
        assert_eq!(s.p99, 700.0);
        assert_eq!(s.p1, 100.0);
        // Listed out of time order, the same figures.
        let reversed = Counter {
            values: vec![(b, 300.0), (a, 700.0)],
            ..c.clone()
        };
        assert_eq!(reversed.summary(&g, &timeline, end), s);
        let b = c.buckets(&g, &timeline, end, 4);
        assert_eq!(b.len(), 4);
        assert!((b[0] - 700.0).abs() < 1e-9);
        assert!((b[1] - (0.2 * 700.0 + 0.8 * 100.0)).abs() < 1e-9, "{b:?}");
        assert!((b[3] - 300.0).abs() < 1e-9);
    }
}
