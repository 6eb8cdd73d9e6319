//! The fleet as a reactive process: an arrival is routed to a replica; an idle replica plans an
//! iteration (`replica`), prices it (`kind`) and schedules its end; at the end the iteration's
//! requests advance, sampled tokens are stamped, and the replica plans again. A disaggregated
//! prefill replica sends each request's KV cache to a decode replica. The fleet runs on its own
//! engine, or beside a cluster's other jobs (`cluster`), through a [`Clock`].

use super::kind::ReplicaKind;
use super::over_time::Sample;
use super::policy::RouterKind;
use super::replica::{Limits, Plan, Progress, Replica};
use super::request::Request;
use super::{Lives, MAX_WORK, REQUESTS_PER_WORK};
use crate::engine::{Process, RngStreams, Scheduler, SimTime};
use rand::RngExt;
use rand::rngs::ChaCha8Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ev {
    Arrival(usize),
    /// An idle replica plans its next iteration, once every request that arrived with the one
    /// that woke it is queued: requests submitted together are batched together.
    Wake(usize),
    Done(usize),
    /// A request's KV cache has reached the decode pool.
    KvArrived(usize),
}

/// Where a fleet's events go: its own engine, or a cluster's, where its KV transfers share the
/// links between servers with the other jobs' traffic.
pub(crate) trait Clock {
    fn now(&self) -> SimTime;
    fn at(&mut self, at: SimTime, ev: Ev);
    fn stop(&mut self);
    /// Request `r`'s KV cache (`tokens` tokens) leaves replica `from` for replica `to`, a
    /// transfer of `seconds` alone: `Ev::KvArrived(r)` when it is there.
    fn kv(&mut self, r: usize, pair: (usize, usize), tokens: u32, seconds: f64);
}

impl Clock for Scheduler<Ev> {
    fn now(&self) -> SimTime {
        Scheduler::now(self)
    }
    fn at(&mut self, at: SimTime, ev: Ev) {
        Scheduler::at(self, at, ev);
    }
    fn stop(&mut self) {
        Scheduler::stop(self);
    }
    fn kv(&mut self, r: usize, _: (usize, usize), _: u32, seconds: f64) {
        let end = self.now().saturating_add(SimTime::from_secs_f64(seconds));
        Scheduler::at(self, end, Ev::KvArrived(r));
    }
}

impl Ev {
    /// Its number among `4 n` events of a fleet of at most `n` requests and replicas.
    pub fn number(self) -> u32 {
        let (k, tag) = match self {
            Ev::Arrival(r) => (r, 0),
            Ev::Wake(i) => (i, 1),
            Ev::Done(i) => (i, 2),
            Ev::KvArrived(r) => (r, 3),
        };
        (k * 4 + tag) as u32
    }

    pub fn from_number(n: u32) -> Ev {
        let k = (n / 4) as usize;
        match n % 4 {
            0 => Ev::Arrival(k),
            1 => Ev::Wake(k),
            2 => Ev::Done(k),
            _ => Ev::KvArrived(k),
        }
    }
}

pub(crate) struct Fleet {
    pub(crate) requests: Vec<Request>,
    pub(crate) progress: Vec<Progress>,
    pub(crate) replicas: Vec<Replica>,
    pub(crate) plans: Vec<Option<(Plan, SimTime)>>,
    /// Whether a replica's `Wake` is pending.
    pub(crate) waking: Vec<bool>,
    /// The kinds of replica, and each replica's kind.
    pub(crate) kinds: Vec<ReplicaKind>,
    pub(crate) kind_of: Vec<usize>,
    /// Weighted round-robin credit of each replica.
    pub(crate) credit: Vec<f64>,
    pub(crate) router: RouterKind,
    pub(crate) next_rr: usize,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) first_token: Vec<Option<SimTime>>,
    pub(crate) finished: Vec<Option<SimTime>>,
    pub(crate) admitted: Vec<Option<SimTime>>,
    pub(crate) replica_of: Vec<usize>,
    /// (replica, start, end, prefill tokens, decodes) of every iteration, for the trace.
    pub(crate) iterations: Vec<(usize, SimTime, SimTime, u64, u32)>,
    /// Each replica's queue, batch and KV cache at the start of every iteration.
    pub(crate) samples: Vec<Sample>,
    /// Disaggregated: the first this many replicas only prefill.
    pub(crate) prefill_replicas: Option<usize>,
    /// (request, from, to, start, end, bytes) of every KV transfer.
    pub(crate) transfers: Vec<(usize, usize, usize, SimTime, SimTime, f64)>,
    /// Each request's entry in `transfers`, once its KV cache has left.
    pub(crate) transfer_of: Vec<usize>,
    /// What the run has simulated so far ([`MAX_WORK`]).
    pub(crate) work: u64,
}

impl Fleet {
    /// The replicas new requests go to: the prefill pool when disaggregated, else all.
    fn entry_pool(&self) -> std::ops::Range<usize> {
        0..self.prefill_replicas.unwrap_or(self.replicas.len())
    }

    /// A replica of `pool` chosen by the router.
    fn route(&mut self, pool: std::ops::Range<usize>) -> usize {
        let n = pool.len();
        let first = pool.start;
        let pick = match self.router {
            RouterKind::RoundRobin => {
                let i = self.next_rr % n;
                self.next_rr = (self.next_rr + 1) % n;
                i
            }
            RouterKind::LeastLoaded => (0..n)
                .min_by(|&a, &b| {
                    self.drain_time(first + a)
                        .total_cmp(&self.drain_time(first + b))
                        .then(a.cmp(&b))
                })
                .expect("at least one replica"),
            RouterKind::PowerOfTwo => {
                let a = self.rng.random_range(0..n);
                let b = self.rng.random_range(0..n);
                let (ta, tb) = (self.drain_time(first + a), self.drain_time(first + b));
                if tb.total_cmp(&ta).then(b.cmp(&a)).is_lt() {
                    b
                } else {
                    a
                }
            }
            RouterKind::Weighted => {
                // Smooth weighted round-robin (nginx's): every replica gains its weight, the
                // largest credit is chosen and pays the total.
                let weights: Vec<f64> = (first..first + n)
                    .map(|i| self.kinds[self.kind_of[i]].capacity_tokens_per_s)
                    .collect();
                let total: f64 = weights.iter().sum();
                for (k, w) in weights.iter().enumerate() {
                    self.credit[first + k] += w;
                }
                let pick = (0..n)
                    .max_by(|&a, &b| {
                        self.credit[first + a]
                            .total_cmp(&self.credit[first + b])
                            .then(b.cmp(&a))
                    })
                    .expect("at least one replica");
                self.credit[first + pick] -= total;
                pick
            }
        };
        first + pick
    }

    /// Seconds replica `i` needs for the tokens it still has to process, at its kind's speed.
    fn drain_time(&self, i: usize) -> f64 {
        self.replicas[i].outstanding(&self.progress) as f64
            / self.kinds[self.kind_of[i]].capacity_tokens_per_s
    }

    fn is_prefill_replica(&self, i: usize) -> bool {
        self.prefill_replicas.is_some_and(|p| i < p)
    }

    fn start(&mut self, i: usize, sched: &mut impl Clock) {
        if self.replicas[i].busy {
            return;
        }
        if self.work >= MAX_WORK {
            return sched.stop();
        }
        let Some(plan) = self.replicas[i].plan(&mut self.progress) else {
            return;
        };
        let now = sched.now();
        for &(r, _) in &plan.prefill {
            self.admitted[r].get_or_insert(now);
        }
        self.work +=
            1 + (plan.prefill.len() as u64 + plan.batch.decodes as u64) / REQUESTS_PER_WORK;
        let kind = &mut self.kinds[self.kind_of[i]];
        let seconds =
            kind.iteration(&plan.batch) + plan.swap_tokens as f64 * kind.swap_seconds_per_token;
        let end = now.saturating_add(SimTime::from_secs_f64(seconds));
        self.replicas[i].busy = true;
        self.iterations.push((
            i,
            now,
            end,
            plan.batch.tokens() - plan.batch.decodes as u64,
            plan.batch.decodes,
        ));
        let replica = &self.replicas[i];
        self.samples.push(Sample {
            replica: i as u32,
            at: now,
            waiting: replica.waiting.len() as u32,
            running: replica.running.len() as u32,
            kv_ppm: ((replica.blocks_total - replica.blocks_free) as u64 * 1_000_000
                / replica.blocks_total.max(1) as u64) as u32,
        });
        self.plans[i] = Some((plan, now));
        sched.at(end, Ev::Done(i));
    }
}

impl Process for Fleet {
    type Event = Ev;

    fn start(&mut self, sched: &mut Scheduler<Ev>) {
        self.arrive(sched);
    }

    fn handle(&mut self, ev: Ev, sched: &mut Scheduler<Ev>) {
        self.on(ev, sched);
    }
}

impl Fleet {
    /// Schedules every request's arrival.
    pub fn arrive(&mut self, sched: &mut impl Clock) {
        for (k, r) in self.requests.iter().enumerate() {
            sched.at(r.arrival, Ev::Arrival(k));
        }
    }

    /// The tokens each request is to generate.
    pub fn outputs(&self) -> Vec<u32> {
        self.progress.iter().map(|p| p.output).collect()
    }

    /// When each request arrived, was admitted, sampled its first token and finished.
    pub(super) fn lives<'a>(&'a self, outputs: &'a [u32]) -> Lives<'a> {
        Lives {
            requests: &self.requests,
            outputs,
            admitted: &self.admitted,
            first_token: &self.first_token,
            finished: &self.finished,
        }
    }

    /// Whether every request has finished.
    pub fn all_finished(&self) -> bool {
        self.finished.iter().all(Option::is_some)
    }

    pub fn on(&mut self, ev: Ev, sched: &mut impl Clock) {
        match ev {
            Ev::Arrival(r) => {
                let i = self.route(self.entry_pool());
                self.replica_of[r] = i;
                self.replicas[i].waiting.push_back(r);
                if !self.replicas[i].busy && !self.waking[i] {
                    self.waking[i] = true;
                    sched.at(sched.now(), Ev::Wake(i));
                }
            }
            Ev::Wake(i) => {
                self.waking[i] = false;
                self.start(i, sched);
            }
            Ev::Done(i) => {
                let (plan, _) = self.plans[i].take().expect("a running iteration");
                let now = sched.now();
                let prefill_only = self.is_prefill_replica(i);
                for r in self.replicas[i].complete(&plan, &mut self.progress) {
                    self.first_token[r].get_or_insert(now);
                    if self.progress[r].generated >= self.progress[r].output {
                        self.finished[r] = Some(now);
                        self.replicas[i].finish(r, &mut self.progress);
                    } else if prefill_only {
                        // Its KV cache leaves for the decode pool.
                        self.replicas[i].finish(r, &mut self.progress);
                        let decode_pool = self.prefill_replicas.unwrap_or(0)..self.replicas.len();
                        let to = self.route(decode_pool);
                        let tokens = self.progress[r].cached;
                        // Disaggregated fleets have one kind of replica (checked at set-up).
                        let kind = &mut self.kinds[0];
                        let seconds = kind.kv_transfer_seconds(i as u32, to as u32, tokens);
                        let bytes = tokens as f64 * kind.kv_per_token * kind.tp as f64;
                        self.transfers.push((r, i, to, now, now, bytes));
                        self.transfer_of[r] = self.transfers.len() - 1;
                        self.replica_of[r] = to;
                        sched.kv(r, (i, to), tokens, seconds);
                    }
                }
                self.replicas[i].busy = false;
                self.start(i, sched);
            }
            Ev::KvArrived(r) => {
                self.transfers[self.transfer_of[r]].4 = sched.now();
                let to = self.replica_of[r];
                self.replicas[to].waiting.push_back(r);
                self.start(to, sched);
            }
        }
    }
}

/// The fleet at time 0: every replica's engines empty, every request yet to arrive.
pub(super) fn new_fleet(
    requests: Vec<Request>,
    kinds: Vec<ReplicaKind>,
    limits: Limits,
    router: RouterKind,
    seed: u64,
    prefill_replicas: Option<usize>,
) -> Fleet {
    let n = requests.len();
    let progress: Vec<Progress> = requests
        .iter()
        .map(|r| Progress {
            prompt: r.prompt_tokens,
            output: r.output_tokens.max(1),
            to_prefill: r.prompt_tokens,
            ..Default::default()
        })
        .collect();
    // Each replica runs pp engines (one when pp = 1): the fleet schedules engines.
    let kind_of: Vec<usize> = kinds
        .iter()
        .enumerate()
        .flat_map(|(k, kind)| std::iter::repeat_n(k, (kind.replicas * kind.pp) as usize))
        .collect();
    let engines = kind_of.len();
    Fleet {
        requests,
        progress,
        replicas: kind_of
            .iter()
            .map(|&k| Replica::new(limits.clone(), kinds[k].blocks / kinds[k].pp))
            .collect(),
        plans: vec![None; engines],
        waking: vec![false; engines],
        credit: vec![0.0; engines],
        kinds,
        kind_of,
        router,
        next_rr: 0,
        rng: RngStreams::new(seed).stream("router"),
        first_token: vec![None; n],
        finished: vec![None; n],
        admitted: vec![None; n],
        replica_of: vec![0; n],
        iterations: Vec::new(),
        samples: Vec::new(),
        work: 0,
        prefill_replicas,
        transfers: Vec::new(),
        transfer_of: vec![0; n],
    }
}
