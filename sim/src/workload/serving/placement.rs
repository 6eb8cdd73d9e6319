//! Placement of one model's layers over a fleet of unlike servers by max-flow, and the flow that
//! routes requests over it.
//!
//! A placement gives every server a contiguous range of layers (or none) and is judged as a flow
//! network: a source (the coordinator), every server split into an in- and an out-vertex joined by
//! its throughput in tokens a second when it holds that many layers, and a sink. The source feeds
//! every server holding layer 0, every server holding the last layer feeds the sink, and server i
//! feeds server j when j's layers begin where i's end, at the rate of a bulk send/recv between
//! them (collective layer) over one token's hidden state. The maximum flow (petgraph's Dinic) is
//! the throughput; its split over the edges routes requests. `max-flow` hill-climbs with seeded
//! moves from the best of the baselines (`swarm`, `separate-pipelines`) and "lanes".
//!
//! Ignored: partial inference (ranges meet exactly), the coordinator's own links (unlimited),
//! shared links (each edge gets its route's whole bandwidth), a MILP's proven optimum. Details:
//! docs/SERVING.md.

use petgraph::algo::dinics;
use petgraph::graph::{DiGraph, NodeIndex};
use rand::RngExt;
use rand::rngs::ChaCha8Rng;

pub use super::policy::PlacementMethod as Method;

/// A server's layers, `start..end`, or `None` when it holds none.
pub type Placement = Vec<Option<(u32, u32)>>;

/// What a placement is judged on.
#[derive(Clone, Debug)]
pub struct Problem {
    pub layers: u32,
    /// Per server: tokens a second when it holds k layers, at index k - 1; its length is the
    /// most layers the server can hold (empty: not even one).
    pub speed: Vec<Vec<f64>>,
    /// Per server, its group (GPU type and tensor-parallel degree).
    pub group: Vec<usize>,
    /// Tokens a second the route from server i to server j carries, at i x servers + j.
    pub link: Vec<f64>,
}

/// The maximum flow of a placement and its split.
#[derive(Clone, Debug, Default)]
pub struct Flow {
    /// Tokens a second through the whole model.
    pub tokens_per_s: f64,
    /// Flow from the source into each server.
    pub entry: Vec<f64>,
    /// Per server: where its flow goes next (`None`: the sink) and how much.
    pub next: Vec<Vec<(Option<usize>, f64)>>,
}

/// A placement's flow network: the graph, its source and sink, and what each edge joins.
type Network = (DiGraph<(), u64>, NodeIndex, NodeIndex, Vec<(End, End)>);

/// Flow capacities are whole milli-tokens a second (Dinic's needs exact arithmetic).
const SCALE: f64 = 1000.0;

/// Hill-climbing moves per server in the `max-flow` search.
const MOVES_PER_SERVER: usize = 300;

/// Where a flow edge starts and ends: the source, a server, or the sink.
#[derive(Copy, Clone)]
enum End {
    Source,
    Server(usize),
    Sink,
}

impl Problem {
    fn servers(&self) -> usize {
        self.speed.len()
    }

    fn capacity(&self, i: usize, range: (u32, u32)) -> f64 {
        self.speed[i][(range.1 - range.0 - 1) as usize]
    }

    /// The placement's flow network: the graph, its source and sink, and what each edge joins
    /// (server edges from in- to out-vertex are not listed).
    fn network(&self, p: &Placement) -> Network {
        let n = self.servers();
        let mut g = DiGraph::with_capacity(2 * n + 2, 4 * n);
        let source = g.add_node(());
        let sink = g.add_node(());
        let vertices: Vec<(NodeIndex, NodeIndex)> =
            (0..n).map(|_| (g.add_node(()), g.add_node(()))).collect();
        let scaled = |x: f64| (x * SCALE).round().max(0.0) as u64;
        let unlimited: u64 = self
            .speed
            .iter()
            .filter_map(|s| s.first())
            .map(|&c| scaled(c))
            .sum::<u64>()
            + 1;
        let mut ends = Vec::new();
        for (i, r) in p.iter().enumerate() {
            let Some(r) = *r else { continue };
            let (vin, vout) = vertices[i];
            g.add_edge(vin, vout, scaled(self.capacity(i, r)));
            ends.push((End::Server(i), End::Server(i)));
            if r.0 == 0 {
                g.add_edge(source, vin, unlimited);
                ends.push((End::Source, End::Server(i)));
            }
            if r.1 == self.layers {
                g.add_edge(vout, sink, unlimited);
                ends.push((End::Server(i), End::Sink));
            }
            for (j, q) in p.iter().enumerate() {
                if j != i && q.is_some_and(|q| q.0 == r.1) {
                    g.add_edge(vout, vertices[j].0, scaled(self.link[i * n + j]));
                    ends.push((End::Server(i), End::Server(j)));
                }
            }
        }
        (g, source, sink, ends)
    }

    /// The placement's maximum flow, in milli-tokens a second.
    fn value(&self, p: &Placement) -> u64 {
        let (g, source, sink, _) = self.network(p);
        dinics(&g, source, sink).0
    }

    /// The placement's maximum flow and its split over the edges.
    pub fn flow(&self, p: &Placement) -> Flow {
        let n = self.servers();
        let (g, source, sink, ends) = self.network(p);
        let (total, flows) = dinics(&g, source, sink);
        let mut flow = Flow {
            tokens_per_s: total as f64 / SCALE,
            entry: vec![0.0; n],
            next: vec![Vec::new(); n],
        };
        for (e, &(a, b)) in ends.iter().enumerate() {
            let f = flows[e] as f64 / SCALE;
            match (a, b) {
                (End::Source, End::Server(j)) => flow.entry[j] = f,
                (End::Server(i), End::Sink) => flow.next[i].push((None, f)),
                (End::Server(i), End::Server(j)) if i != j => flow.next[i].push((Some(j), f)),
                _ => {}
            }
        }
        flow
    }

    /// Places the layers by `method`; `rng` draws the search's moves.
    pub fn place(&self, method: Method, rng: &mut ChaCha8Rng) -> Placement {
        match method {
            Method::Swarm => self.swarm(),
            Method::SeparatePipelines => self.separate_pipelines(),
            Method::MaxFlow => self.search(rng),
        }
    }

    /// Equal stages that the smallest server holds, each server on the weakest stage so far.
    fn swarm(&self) -> Placement {
        let n = self.servers();
        let mut p: Placement = vec![None; n];
        let Some(most) = self.speed.iter().map(Vec::len).filter(|&m| m > 0).min() else {
            return p;
        };
        let l = self.layers;
        let stages = l.div_ceil(most as u32);
        let bounds: Vec<(u32, u32)> = (0..stages)
            .map(|s| (s * l / stages, (s + 1) * l / stages))
            .collect();
        let mut order: Vec<usize> = (0..n).filter(|&i| !self.speed[i].is_empty()).collect();
        order.sort_by(|&a, &b| {
            self.speed[b][0]
                .total_cmp(&self.speed[a][0])
                .then(a.cmp(&b))
        });
        let mut total = vec![0.0f64; stages as usize];
        for i in order {
            let s = (0..stages as usize)
                .min_by(|&a, &b| total[a].total_cmp(&total[b]).then(a.cmp(&b)))
                .expect("at least one stage");
            p[i] = Some(bounds[s]);
            total[s] += self.capacity(i, bounds[s]);
        }
        p
    }

    /// Pipelines of one group each, as short as memory allows, layers even.
    fn separate_pipelines(&self) -> Placement {
        let n = self.servers();
        let mut p: Placement = vec![None; n];
        let groups = self.group.iter().copied().max().map_or(0, |g| g + 1);
        let l = self.layers;
        for g in 0..groups {
            let members: Vec<usize> = (0..n).filter(|&i| self.group[i] == g).collect();
            let Some(most) = members.iter().map(|&i| self.speed[i].len()).min() else {
                continue;
            };
            if most == 0 {
                continue;
            }
            let stages = l.div_ceil(most as u32) as usize;
            for pipeline in members.chunks_exact(stages) {
                for (s, &i) in pipeline.iter().enumerate() {
                    let s = s as u32;
                    let k = stages as u32;
                    p[i] = Some((s * l / k, (s + 1) * l / k));
                }
            }
        }
        p
    }

    /// Layer counts in proportion to speed (within memory), servers in `order` laid end to end
    /// along the model, a new lane at the last layer.
    fn lanes(&self, order: &[usize], lanes: u32) -> Placement {
        let n = self.servers();
        let mut p: Placement = vec![None; n];
        let total: f64 = order.iter().map(|&i| self.speed[i][0]).sum();
        let l = self.layers;
        let mut at = 0;
        for &i in order {
            let share = self.speed[i][0] / total * (l * lanes) as f64;
            let k = (share.round() as u32)
                .clamp(1, self.speed[i].len() as u32)
                .min(l - at);
            p[i] = Some((at, at + k));
            at = (at + k) % l;
        }
        p
    }

    /// The `max-flow` search.
    fn search(&self, rng: &mut ChaCha8Rng) -> Placement {
        let n = self.servers();
        let usable: Vec<usize> = (0..n).filter(|&i| !self.speed[i].is_empty()).collect();
        let mut starts = vec![self.swarm(), self.separate_pipelines()];
        let mut fastest = usable.clone();
        fastest.sort_by(|&a, &b| {
            self.speed[b][0]
                .total_cmp(&self.speed[a][0])
                .then(a.cmp(&b))
        });
        let slowest: Vec<usize> = fastest.iter().rev().copied().collect();
        for lanes in 1..=usable.len() as u32 {
            starts.push(self.lanes(&fastest, lanes));
            starts.push(self.lanes(&slowest, lanes));
        }
        let mut best = starts
            .into_iter()
            .map(|p| (self.value(&p), p))
            .max_by(|a, b| a.0.cmp(&b.0))
            .expect("at least the two baselines");
        if usable.is_empty() {
            return best.1;
        }
        let l = self.layers;
        for _ in 0..MOVES_PER_SERVER * n {
            let i = usable[rng.random_range(0..usable.len())];
            let most = self.speed[i].len() as u32;
            let j = rng.random_range(0..n);
            let mut p = best.1.clone();
            let current = p[i];
            let count = |rng: &mut ChaCha8Rng, room: u32| rng.random_range(1..=most.min(room));
            if rng.random_range(0..3) == 0 {
                // Move the boundary where this server's layers end, and every range that
                // starts there, by one or two layers.
                let Some((start, end)) = current else {
                    continue;
                };
                let d: i64 = [-2, -1, 1, 2][rng.random_range(0..4)];
                let to = end as i64 + d;
                if to <= start as i64 || to >= l as i64 || end == l {
                    continue;
                }
                let to = to as u32;
                let ok =
                    |k: usize, r: (u32, u32)| r.1 > r.0 && r.1 - r.0 <= self.speed[k].len() as u32;
                let mut valid = ok(i, (start, to));
                p[i] = Some((start, to));
                for (k, range) in p.iter_mut().enumerate() {
                    if let Some((_, e2)) = range.filter(|r| r.0 == end && k != i) {
                        valid &= ok(k, (to, e2));
                        *range = Some((to, e2));
                    }
                }
                if !valid {
                    continue;
                }
                let value = self.value(&p);
                if value >= best.0 {
                    best = (value, p);
                }
                continue;
            }
            p[i] = match rng.random_range(0..5) {
                0 => {
                    let k = count(rng, l);
                    let start = current.map_or(0, |r| r.0).min(l - k);
                    Some((start, start + k))
                }
                1 => match p[j] {
                    Some((_, end)) if end < l => {
                        let k = count(rng, l - end);
                        Some((end, end + k))
                    }
                    _ => continue,
                },
                2 => match p[j] {
                    Some((start, _)) if start > 0 => {
                        let k = count(rng, start);
                        Some((start - k, start))
                    }
                    _ => continue,
                },
                3 => match p[j] {
                    Some(r) if r.1 - r.0 <= most && j != i => Some(r),
                    _ => continue,
                },
                _ => None,
            };
            let value = self.value(&p);
            if value >= best.0 {
                best = (value, p);
            }
        }
        best.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::RngStreams;

    /// Servers whose speed is `per_layer / k` with k layers, up to `most` layers, joined by
    /// links of `link` tokens a second.
    fn problem(layers: u32, servers: &[(f64, u32, usize)], link: f64) -> Problem {
        let n = servers.len();
        Problem {
            layers,
            speed: servers
                .iter()
                .map(|&(c, most, _)| (1..=most).map(|k| c / k as f64).collect())
                .collect(),
            group: servers.iter().map(|s| s.2).collect(),
            link: vec![link; n * n],
        }
    }

    fn rng() -> ChaCha8Rng {
        RngStreams::new(1).stream("placement")
    }

    #[test]
    fn a_single_pipeline_flows_at_its_slowest_stage() {
        let pr = problem(8, &[(800.0, 8, 0), (400.0, 8, 0)], 1e9);
        // 4 + 4 layers: 200 and 100 tokens/s; the pipeline carries 100.
        let f = pr.flow(&vec![Some((0, 4)), Some((4, 8))]);
        assert!((f.tokens_per_s - 100.0).abs() < 1e-6, "{}", f.tokens_per_s);
        assert!((f.entry[0] - 100.0).abs() < 1e-6);
        assert_eq!(f.next[0], vec![(Some(1), 100.0)]);
        assert_eq!(f.next[1], vec![(None, 100.0)]);
        // Ranges that do not meet carry nothing.
        assert_eq!(pr.flow(&vec![Some((0, 4)), Some((5, 8))]).tokens_per_s, 0.0);
        // A slow link is the bottleneck.
        let slow = problem(8, &[(800.0, 8, 0), (400.0, 8, 0)], 30.0);
        assert!((slow.flow(&vec![Some((0, 4)), Some((4, 8))]).tokens_per_s - 30.0).abs() < 1e-6);
    }

    #[test]
    fn flow_is_conserved_at_every_server() {
        let pr = problem(
            12,
            &[
                (900.0, 6, 0),
                (900.0, 6, 0),
                (300.0, 4, 1),
                (300.0, 4, 1),
                (300.0, 4, 1),
            ],
            1e9,
        );
        let p = pr.place(Method::MaxFlow, &mut rng());
        let f = pr.flow(&p);
        let mut inflow = f.entry.clone();
        for next in &f.next {
            for &(to, x) in next {
                if let Some(j) = to {
                    inflow[j] += x;
                }
            }
        }
        for (i, next) in f.next.iter().enumerate() {
            let out: f64 = next.iter().map(|e| e.1).sum();
            assert!(
                (out - inflow[i]).abs() < 1e-6,
                "server {i}: in {} out {out}",
                inflow[i]
            );
            if let Some(r) = p[i] {
                assert!(out <= pr.capacity(i, r) + 1e-6);
                assert!(r.1 - r.0 <= pr.speed[i].len() as u32, "memory respected");
            }
        }
        let entered: f64 = f.entry.iter().sum();
        assert!((entered - f.tokens_per_s).abs() < 1e-6);
    }

    #[test]
    fn the_search_beats_both_baselines_on_an_uneven_fleet() {
        // Two fast servers that each hold the whole model and six slow ones that hold a
        // quarter of it: separate pipelines waste the slow ones' speed on a short stage, SWARM
        // cuts the model for the slowest and leaves the fast ones under-used.
        let mut servers = vec![(1000.0, 32, 0), (1000.0, 32, 0)];
        servers.extend(std::iter::repeat_n((250.0, 8, 1), 6));
        let pr = problem(32, &servers, 1e9);
        let value = |m| pr.flow(&pr.place(m, &mut rng())).tokens_per_s;
        let (best, swarm, sp) = (
            value(Method::MaxFlow),
            value(Method::Swarm),
            value(Method::SeparatePipelines),
        );
        assert!(best >= swarm && best >= sp, "{best} {swarm} {sp}");
        assert!(best > 1.1 * sp.max(swarm), "{best} {swarm} {sp}");
        // The upper bound: every server's per-layer speed over the model's layers.
        let bound: f64 = servers.iter().map(|s| s.0).sum::<f64>() / 32.0;
        assert!(best <= bound + 1e-6, "{best} > {bound}");
        // Deterministic.
        assert_eq!(
            pr.place(Method::MaxFlow, &mut rng()),
            pr.place(Method::MaxFlow, &mut rng())
        );
    }

    #[test]
    fn separate_pipelines_and_swarm_respect_memory() {
        let pr = problem(
            10,
            &[(500.0, 5, 0), (500.0, 5, 0), (100.0, 2, 1), (100.0, 0, 1)],
            1e9,
        );
        let sp = pr.place(Method::SeparatePipelines, &mut rng());
        assert_eq!(sp[0], Some((0, 5)));
        assert_eq!(sp[1], Some((5, 10)));
        assert_eq!(
            sp[2], None,
            "one server of two layers cannot form a pipeline of 10"
        );
        assert_eq!(sp[3], None);
        let sw = pr.place(Method::Swarm, &mut rng());
        for (i, r) in sw.iter().enumerate() {
            if let Some(r) = r {
                assert!(r.1 - r.0 <= pr.speed[i].len() as u32);
            }
        }
        assert_eq!(sw[3], None, "a server that holds no layer is left out");
    }
}
