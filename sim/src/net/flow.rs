//! The flow-level network: max-min fair sharing of every link among the flows crossing it.
//!
//! A flow carries a number of bytes along a route (a list of directed links). At every moment each
//! active flow gets a rate such that no link carries more than its capacity and no flow's rate can
//! grow without lowering that of a flow with an equal or smaller rate (max-min fairness, computed
//! by progressive filling: the link with the smallest fair share saturates first, its flows freeze
//! at that share, and the others share what remains). Rates are recomputed whenever a flow starts
//! or finishes; flows finishing at the same instant are retired together, so a symmetric phase of
//! thousands of equal flows costs one recomputation.
//!
//! Modelled: bandwidth sharing on every directed link, any number of concurrent flows. Ignored:
//! packet-level effects (congestion control dynamics, queueing delay, head-of-line blocking,
//! adaptive routing); latency is added by the caller per route, before the flow's bytes move.

use crate::engine::SimTime;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

pub type FlowId = usize;

#[derive(Clone, Debug)]
struct Flow {
    links: Vec<u32>,
    remaining: f64,
    rate: f64,
    active: bool,
}

/// Flows sharing links, advanced through time.
#[derive(Clone, Debug)]
pub struct FlowModel {
    capacity: Vec<f64>,
    flows: Vec<Flow>,
    active: Vec<FlowId>,
    /// Bytes each link has carried so far.
    carried: Vec<f64>,
    now: SimTime,
    /// Largest (sum of rates / capacity) seen on any link; 1.0 means saturated.
    peak_load: f64,
    recomputations: u64,
}

/// Bytes a flow may still hold and count as finished: below one picosecond at its rate, or
/// rounding noise relative to its size.
fn finished(flow: &Flow) -> bool {
    flow.remaining <= flow.rate * 1e-12 || flow.remaining <= 1e-9
}

impl FlowModel {
    /// A network of links with the given capacities (bytes/s).
    pub fn new(capacity: Vec<f64>) -> Self {
        assert!(
            capacity.iter().all(|&c| c > 0.0 && c.is_finite()),
            "link capacities must be positive and finite"
        );
        let links = capacity.len();
        FlowModel {
            capacity,
            flows: Vec::new(),
            active: Vec::new(),
            carried: vec![0.0; links],
            now: SimTime::ZERO,
            peak_load: 0.0,
            recomputations: 0,
        }
    }

    /// Starts flows at `now` (each a route and a byte count) and returns their ids. Flows with an
    /// empty route or no bytes finish at once.
    pub fn start(
        &mut self,
        now: SimTime,
        flows: impl IntoIterator<Item = (Vec<u32>, f64)>,
    ) -> Vec<FlowId> {
        self.advance(now);
        let ids: Vec<FlowId> = flows
            .into_iter()
            .map(|(links, bytes)| {
                assert!(bytes >= 0.0, "a flow of {bytes} bytes");
                for &l in &links {
                    assert!(
                        (l as usize) < self.capacity.len(),
                        "route uses unknown link {l}"
                    );
                }
                let id = self.flows.len();
                let active = !links.is_empty() && bytes > 0.0;
                self.flows.push(Flow {
                    links,
                    remaining: bytes,
                    rate: 0.0,
                    active,
                });
                if active {
                    self.active.push(id);
                }
                id
            })
            .collect();
        self.recompute();
        ids
    }

    /// The earliest time an active flow finishes at the current rates.
    pub fn next_completion(&self) -> Option<SimTime> {
        self.active
            .iter()
            .map(|&f| {
                let flow = &self.flows[f];
                let secs = flow.remaining / flow.rate;
                // Round up: a flow is never reported done before its last byte arrived.
                self.now
                    .saturating_add(SimTime::from_ps((secs * 1e12).ceil() as u64))
            })
            .min()
    }

    /// Advances to `now`, retires the flows that have finished by then, recomputes the rates, and
    /// returns the retired flows.
    pub fn finish_due(&mut self, now: SimTime) -> Vec<FlowId> {
        self.advance(now);
        let flows = &self.flows;
        let (done, still): (Vec<FlowId>, Vec<FlowId>) =
            self.active.iter().partition(|&&f| finished(&flows[f]));
        for &f in &done {
            self.flows[f].active = false;
            self.flows[f].rate = 0.0;
        }
        self.active = still;
        if !done.is_empty() {
            self.recompute();
        }
        done
    }

    pub fn is_idle(&self) -> bool {
        self.active.is_empty()
    }

    /// Rate of a flow now, bytes/s (0 once finished).
    pub fn rate(&self, flow: FlowId) -> f64 {
        self.flows[flow].rate
    }

    /// Bytes each link has carried.
    #[cfg(test)]
    pub fn carried(&self) -> &[f64] {
        &self.carried
    }

    /// Largest load seen on any link, as a fraction of its capacity.
    pub fn peak_load(&self) -> f64 {
        self.peak_load
    }

    /// How many times rates were recomputed.
    #[cfg(test)]
    pub fn recomputations(&self) -> u64 {
        self.recomputations
    }

    fn advance(&mut self, now: SimTime) {
        assert!(
            now >= self.now,
            "flow model moved back in time: {now} < {}",
            self.now
        );
        let dt = (now - self.now).as_secs_f64();
        if dt > 0.0 {
            for &f in &self.active {
                let flow = &mut self.flows[f];
                let moved = (flow.rate * dt).min(flow.remaining);
                flow.remaining -= moved;
                for &l in &flow.links {
                    self.carried[l as usize] += moved;
                }
            }
        }
        self.now = now;
    }

    /// Max-min fair rates for the active flows, by progressive filling in rounds: each round finds
    /// the smallest fair share among the links still carrying unfrozen flows, freezes the flows of
    /// every link at that share, and takes their rates off the other links. Rounds are as many as
    /// the distinct rate levels, a handful in the symmetric phases of collectives.
    fn recompute(&mut self) {
        self.recomputations += 1;
        let links = self.capacity.len();
        let mut count = vec![0u32; links];
        for &f in &self.active {
            for &l in &self.flows[f].links {
                count[l as usize] += 1;
            }
        }
        // Flows on each link (CSR), and the links in use.
        let mut start = vec![0u32; links + 1];
        for l in 0..links {
            start[l + 1] = start[l] + count[l];
        }
        let mut fill = start.clone();
        let mut on_link = vec![0usize; start[links] as usize];
        for &f in &self.active {
            for &l in &self.flows[f].links {
                on_link[fill[l as usize] as usize] = f;
                fill[l as usize] += 1;
            }
        }
        let mut left = self.capacity.clone();
        let mut frozen = vec![false; self.flows.len()];
        let share = |left: &[f64], count: &[u32], l: u32| {
            left[l as usize].max(0.0) / count[l as usize] as f64
        };
        // The links in use by fair share, smallest first; an entry is current while its link's
        // version is. Freezing a flow at the level only raises the shares of its other links
        // (left/count >= level), so stale entries sit below current ones and are skipped.
        let mut version = vec![0u32; links];
        let key = |s: f64| s.to_bits(); // shares are non-negative: bits order as values
        let mut heap: BinaryHeap<Reverse<(u64, u32, u32)>> = (0..links as u32)
            .filter(|&l| count[l as usize] > 0)
            .map(|l| Reverse((key(share(&left, &count, l)), l, 0)))
            .collect();
        let current = |e: &(u64, u32, u32), version: &[u32], count: &[u32]| {
            version[e.1 as usize] == e.2 && count[e.1 as usize] > 0
        };
        let mut saturated = Vec::new();
        let mut touched = Vec::new();
        while let Some(Reverse(top)) = heap.pop() {
            if !current(&top, &version, &count) {
                continue;
            }
            let level = f64::from_bits(top.0);
            // Links at the level (up to rounding) saturate together this round, in link order.
            saturated.clear();
            saturated.push(top.1);
            while let Some(Reverse(next)) = heap.peek().copied() {
                if !current(&next, &version, &count) {
                    heap.pop();
                } else if f64::from_bits(next.0) <= level * (1.0 + 1e-12) {
                    heap.pop();
                    saturated.push(next.1);
                } else {
                    break;
                }
            }
            saturated.sort_unstable();
            touched.clear();
            for &l in &saturated {
                let li = l as usize;
                for i in start[li]..start[li + 1] {
                    let f = on_link[i as usize];
                    if frozen[f] {
                        continue;
                    }
                    frozen[f] = true;
                    self.flows[f].rate = level;
                    for &l2 in &self.flows[f].links {
                        left[l2 as usize] -= level;
                        count[l2 as usize] -= 1;
                        touched.push(l2);
                    }
                }
            }
            // Links of the round still holding flows take their new share.
            saturated.retain(|&l| count[l as usize] > 0);
            touched.extend(saturated.iter().copied());
            touched.sort_unstable();
            touched.dedup();
            for &l in &touched {
                let li = l as usize;
                version[li] += 1;
                if count[li] > 0 {
                    heap.push(Reverse((key(share(&left, &count, l)), l, version[li])));
                }
            }
        }
        for l in 0..links {
            if start[l + 1] > start[l] {
                let used = self.capacity[l] - left[l];
                self.peak_load = self.peak_load.max(used / self.capacity[l]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_to_end(model: &mut FlowModel) -> Vec<(FlowId, SimTime)> {
        let mut out = Vec::new();
        while let Some(t) = model.next_completion() {
            for f in model.finish_due(t) {
                out.push((f, t));
            }
        }
        out
    }

    #[test]
    fn a_shared_link_is_split_evenly_and_freed_capacity_is_reused() {
        // Link 0: 10 B/s shared by flows A (10 bytes) and B (30 bytes).
        let mut m = FlowModel::new(vec![10.0]);
        m.start(SimTime::ZERO, [(vec![0], 10.0), (vec![0], 30.0)]);
        assert_eq!(m.rate(0), 5.0);
        let done = run_to_end(&mut m);
        // A finishes at 2 s; B then gets all 10 B/s for its last 20 bytes: 4 s.
        assert_eq!(done[0], (0, SimTime::from_secs_f64(2.0)));
        assert_eq!(done[1], (1, SimTime::from_secs_f64(4.0)));
    }

    #[test]
    fn max_min_gives_the_bottlenecked_flow_its_share_and_the_rest_to_others() {
        // Flow 0 crosses links 0 (cap 10) and 1 (cap 4); flow 1 only link 0.
        let mut m = FlowModel::new(vec![10.0, 4.0]);
        m.start(SimTime::ZERO, [(vec![0, 1], 100.0), (vec![0], 100.0)]);
        assert_eq!(m.rate(0), 4.0);
        assert_eq!(m.rate(1), 6.0);
        assert!((m.peak_load() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn bytes_are_conserved_and_no_link_exceeds_capacity() {
        let caps = vec![7.0, 3.0, 5.0, 11.0];
        let mut m = FlowModel::new(caps.clone());
        let routes = [
            (vec![0, 1], 13.0),
            (vec![1, 2], 5.0),
            (vec![0, 2, 3], 29.0),
            (vec![3], 2.0),
            (vec![0], 17.0),
        ];
        let expected: Vec<f64> = (0..4)
            .map(|l| {
                routes
                    .iter()
                    .filter(|(r, _)| r.contains(&l))
                    .map(|(_, b)| b)
                    .sum()
            })
            .collect();
        m.start(SimTime::ZERO, routes.clone());
        run_to_end(&mut m);
        for (l, (carried, want)) in m.carried().iter().zip(&expected).enumerate() {
            assert!((carried - want).abs() < 1e-6, "link {l}");
        }
        assert!(m.peak_load() <= 1.0 + 1e-9);
    }

    #[test]
    fn symmetric_flows_finish_together_in_one_recomputation() {
        let n = 1000;
        let mut m = FlowModel::new(vec![1e9; n]);
        m.start(SimTime::ZERO, (0..n as u32).map(|l| (vec![l], 1e6)));
        let done = run_to_end(&mut m);
        assert_eq!(done.len(), n);
        assert!(done.iter().all(|&(_, t)| t == done[0].1));
        assert_eq!(m.recomputations(), 2);
    }

    #[test]
    fn empty_routes_and_empty_flows_finish_at_once() {
        let mut m = FlowModel::new(vec![1.0]);
        m.start(SimTime::ZERO, [(vec![], 10.0), (vec![0], 0.0)]);
        assert!(m.is_idle());
        assert_eq!(m.next_completion(), None);
    }
}
