//! A serving fleet beside a cluster's other jobs ([`FleetGuest`], an `exec::Guest`): its
//! requests, routing and batching as alone (`fleet`). A disaggregated fleet's KV transfers are
//! flows on the shared links between servers: each is priced on the cluster's topology from the
//! fleet's first GPU on (every tensor-parallel shard as NCCL's send/recv, the transfer as long as
//! its slowest shard), loads each link it crosses by its bytes over that time, and slows while
//! other jobs' traffic fills those links. Ignored: a replica's own tensor-parallel all-reduces and
//! pipeline hand-offs (inside its server, or priced as alone).

use super::config::{Replicas, ServingConfig, Slo};
use super::cost::send_cost;
use super::fleet::{Clock, Ev, Fleet};
use super::{MAX_WORK, fleet_of, merge, summary, trace};
use crate::engine::SimTime;
use crate::exec::{Graph, Guest, GuestCtx, Timeline};
use crate::net::Topology;
use crate::net::tier::Tier;
use crate::net::topology::LinkKind;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// Where a fleet sits on the cluster and how its KV transfers load the shared links.
pub struct KvRoutes {
    pub topology: Arc<Topology>,
    pub tier: Tier,
    /// Effective capacity of every link of `topology`, bytes/s.
    pub capacity: Arc<Vec<f64>>,
    /// The fleet's first GPU on the cluster.
    pub first_gpu: u32,
    /// A transfer's duration alone and links, by (from, to, tokens).
    cache: HashMap<(usize, usize, u32), Priced>,
}

/// A transfer's duration alone and the bytes/s it may take on each link it crosses.
type Priced = (SimTime, Vec<(u32, f64)>);

impl KvRoutes {
    pub fn new(topology: Arc<Topology>, tier: Tier, capacity: Arc<Vec<f64>>, first: u32) -> Self {
        KvRoutes {
            topology,
            tier,
            capacity,
            first_gpu: first,
            cache: HashMap::new(),
        }
    }

    /// The KV cache of `tokens` tokens from replica `from` to replica `to` of `tp` GPUs
    /// (`kv_per_token` bytes per token on each): its duration alone and the share of each link
    /// between servers it uses meanwhile.
    fn price(&mut self, pair: (usize, usize), tokens: u32, tp: u32, kv_per_token: f64) -> &Priced {
        let key = (pair.0, pair.1, tokens);
        if !self.cache.contains_key(&key) {
            let bytes = (tokens as f64 * kv_per_token) as u64;
            let topo = &*self.topology;
            let mut seconds = 0.0f64;
            let mut carried = vec![0.0; topo.graph.edge_count()];
            for k in 0..tp {
                let gpu = |replica: usize| self.first_gpu + replica as u32 * tp + k;
                let c = send_cost(topo, self.tier, (gpu(pair.0), gpu(pair.1)), bytes, true);
                seconds = seconds.max(c.seconds);
                for (l, b) in c.link_bytes.iter().enumerate() {
                    carried[l] += b;
                }
            }
            let links = topo
                .graph
                .edge_indices()
                .filter(|&e| matches!(topo.graph[e].kind, LinkKind::Network | LinkKind::Wan))
                .map(|e| e.index())
                .filter(|&l| carried[l] > 0.0)
                .map(|l| {
                    let share = carried[l] / (seconds.max(1e-12) * self.capacity[l]);
                    (l as u32, share.min(1.0))
                })
                .collect();
            self.cache
                .insert(key, (SimTime::from_secs_f64(seconds), links));
        }
        &self.cache[&key]
    }
}

/// A serving fleet as a guest of a cluster's engine.
pub struct FleetGuest {
    fleet: Fleet,
    fits: bool,
    routes: KvRoutes,
}

impl FleetGuest {
    /// The fleet of `c` (whole replicas, `r`) at time 0, at `routes` on the cluster.
    pub fn new(c: &ServingConfig, r: &Replicas, routes: KvRoutes) -> Self {
        let (fleet, fits) = fleet_of(c, r);
        FleetGuest {
            fleet,
            fits,
            routes,
        }
    }

    /// Whether the run stopped at [`MAX_WORK`] before serving every request.
    pub fn overran(&self) -> bool {
        self.fleet.work >= MAX_WORK
    }

    /// Mean seconds from a request's arrival to its last token, over the completed requests.
    pub fn mean_e2e_s(&self) -> f64 {
        let f = &self.fleet;
        let e2e: Vec<f64> = (0..f.requests.len())
            .filter_map(|r| Some((f.finished[r]? - f.requests[r].arrival).as_secs_f64()))
            .collect();
        e2e.iter().sum::<f64>() / e2e.len().max(1) as f64
    }

    /// The fleet's latency figures (as a serving report gives them) and its KV transfers.
    pub fn outcome(&self, slo: &Slo) -> Value {
        let f = &self.fleet;
        let outputs = f.outputs();
        let mut report = f.lives(&outputs).report(slo).1.to_value();
        let seconds: Vec<f64> = f
            .transfers
            .iter()
            .map(|&(_, _, _, a, b, _)| (b - a).as_secs_f64())
            .collect();
        merge(
            &mut report,
            json!({
                "kv_transfers": f.transfers.len(),
                "kv_transfer_s": summary(seconds),
            }),
        );
        report
    }

    /// The fleet's iterations as a trace: a lane per replica.
    pub fn trace(&self, slo: &Slo) -> (Graph, Timeline) {
        let f = &self.fleet;
        let outputs = f.outputs();
        let lives = f.lives(&outputs);
        let (done, _) = lives.report(slo);
        trace::build(&trace::of_fleet(f, &lives, &done), self.routes.tier)
    }
}

/// The engine of a cluster, as the fleet's clock: KV transfers become flows on shared links.
struct OnCluster<'c, 'a> {
    ctx: &'c mut GuestCtx<'a>,
    routes: &'c mut KvRoutes,
    tp: u32,
    kv_per_token: f64,
}

impl Clock for OnCluster<'_, '_> {
    fn now(&self) -> SimTime {
        self.ctx.now()
    }
    fn at(&mut self, at: SimTime, ev: Ev) {
        self.ctx.at(at, ev.number());
    }
    fn stop(&mut self) {
        self.ctx.stop();
    }
    fn kv(&mut self, r: usize, pair: (usize, usize), tokens: u32, _alone: f64) {
        let (work, links) = self.routes.price(pair, tokens, self.tp, self.kv_per_token);
        let (work, links) = (*work, links.clone());
        self.ctx.transfer(links, work, Ev::KvArrived(r).number());
    }
}

impl FleetGuest {
    fn on_cluster<'c, 'a>(
        &'c mut self,
        ctx: &'c mut GuestCtx<'a>,
    ) -> (&'c mut Fleet, OnCluster<'c, 'a>) {
        // Disaggregated fleets have one kind of replica (checked at set-up).
        let kind = &self.fleet.kinds[0];
        let (tp, kv_per_token) = (kind.tp, kind.kv_per_token);
        let clock = OnCluster {
            ctx,
            routes: &mut self.routes,
            tp,
            kv_per_token,
        };
        (&mut self.fleet, clock)
    }
}

impl Guest for FleetGuest {
    fn events(&self) -> u32 {
        let f = &self.fleet;
        (4 * f.requests.len().max(f.replicas.len())) as u32
    }

    fn start(&mut self, ctx: &mut GuestCtx) {
        if self.fits {
            let (fleet, mut clock) = self.on_cluster(ctx);
            fleet.arrive(&mut clock);
        }
    }

    fn handle(&mut self, ev: u32, ctx: &mut GuestCtx) {
        let (fleet, mut clock) = self.on_cluster(ctx);
        fleet.on(Ev::from_number(ev), &mut clock);
    }

    fn done(&self) -> bool {
        !self.fits || self.overran() || self.fleet.all_finished()
    }
}
