//! A fleet placed layer by layer (`serving.placement`): every server holds a range of the model's
//! layers (`placement`), and each request runs on a pipeline of its own through servers whose
//! ranges chain from the first layer to the last.
//!
//! At admission the coordinator picks the request's pipeline hop by hop in proportion to the
//! placement's max-flow (smooth weighted round-robin over each server's outgoing flows), skipping
//! servers whose KV cache lacks room, and reserves the whole length (prompt and output tokens) on
//! every server of it, so nothing is preempted; requests wait at the coordinator, first come first
//! served. Each server batches what has reached it up to the batch size and token budget
//! (`sarathi` chunks prompts), priced on its GPU for its layers (`kind`); the last samples. Hidden
//! states (tokens x hidden x 2 bytes) move to the next server and sampled tokens (4 bytes) back to
//! the first, as send/recv on the network.
//!
//! Ignored: the coordinator's own time, contention between hand-offs on shared links (each is
//! priced alone), re-routing a running request. In full: docs/SERVING.md#what-is-modelled.

mod problem;
mod report;

use super::ServingRun;
use super::config::{Placed as PlacedFleet, ServingConfig};
use super::cost::{Batch, Sends};
use super::kind::{EnginePolicy, ReplicaKind};
use super::placement::{Flow, Method, Placement, Problem};
use super::policy::SchedulerKind;
use super::request::Request;
use crate::engine::{Process, RngStreams, Scheduler, SimTime, Simulation};
use crate::hw::{ComputeModel, GpuSpec};
use crate::model::Transformer;
use crate::net::Topology;
use crate::net::tier::Tier;
pub use problem::{Lengths, problem};
use report::Outcome;
use std::collections::VecDeque;
use std::sync::Arc;

/// The most servers a fleet's layers are placed over: the placement weighs the link between every
/// pair of them and its search grows with the cube of their count; 64 keeps a run within seconds
/// and covers the fleets Helix evaluates (up to 42 servers).
pub const MAX_PLACED_SERVERS: u32 = 64;

/// One group of servers: `servers` servers of `tp` GPUs of type `gpu`, each a node of its own.
pub struct ServerGroup {
    pub gpu: Arc<GpuSpec>,
    pub tp: u32,
    pub servers: u32,
    /// The node a server's GPUs sit in (for its tensor-parallel all-reduces), the tier that
    /// prices them and whether its switches reduce in-network.
    pub network: (Topology, Tier, bool),
}

/// What every server shares: the model, memory policy and batch limits.
#[derive(Clone)]
pub struct Engine {
    pub model: Transformer,
    pub memory: EnginePolicy,
    pub max_batch_size: u32,
    pub max_batch_tokens: u32,
    /// Cut prompts into chunks that fit the token budget (Sarathi-Serve).
    pub chunked: bool,
}

impl Engine {
    fn kind(&self, g: &ServerGroup, range: (u32, u32)) -> ReplicaKind {
        ReplicaKind::stage(
            g.gpu.clone(),
            g.tp,
            &self.model,
            range,
            self.memory,
            ComputeModel::new(g.gpu.clone()),
            g.network.clone(),
        )
    }
}

/// One token's worth of work on its way through a pipeline.
#[derive(Clone, Copy, Debug)]
pub struct Item {
    request: usize,
    tokens: u32,
    /// Tokens already in the request's cache before these.
    context: u32,
    decode: bool,
    /// The last chunk of a prompt, or a decode step: the last server samples a token after it.
    samples: bool,
}

/// A server of the placed fleet.
pub struct Server {
    pub group: usize,
    pub range: (u32, u32),
    pub kind: ReplicaKind,
    pending: VecDeque<Item>,
    running: Option<Vec<Item>>,
    pub blocks_free: u32,
    pub peak_blocks_used: u32,
    /// Requests whose pipeline passes through it.
    pub requests: u64,
}

impl Server {
    pub fn placed(&self) -> bool {
        self.range.1 > self.range.0
    }

    /// Whether no request holds KV blocks here.
    fn idle(&self) -> bool {
        !self.placed() || self.blocks_free == self.kind.blocks
    }
}

pub enum Ev {
    Arrival(usize),
    Done(usize),
    Deliver(usize, Vec<Item>),
}

/// The placed fleet as a process on the engine.
pub struct Placed {
    pub requests: Vec<Request>,
    pub servers: Vec<Server>,
    engine: Engine,
    flow: Flow,
    /// Smooth weighted round-robin credits: of the source's edges, and of each server's.
    credit_entry: Vec<f64>,
    credit_next: Vec<Vec<f64>>,
    waiting: VecDeque<usize>,
    paths: Vec<Vec<usize>>,
    sends: Sends,
    generated: Vec<u32>,
    pub first_token: Vec<Option<SimTime>>,
    pub finished: Vec<Option<SimTime>>,
    pub admitted: Vec<Option<SimTime>>,
    /// Requests no pipeline could ever hold.
    pub refused: u64,
    /// (server, start, end, prefill tokens, decodes) of every iteration, for the trace.
    pub iterations: Vec<(usize, SimTime, SimTime, u64, u32)>,
}

impl Placed {
    /// The fleet of `groups` with `placement`; servers are numbered group by group, and server
    /// i is GPU i of `between`.
    pub fn new(
        groups: &[ServerGroup],
        engine: Engine,
        (placement, flow): (&Placement, Flow),
        between: Sends,
        requests: Vec<Request>,
    ) -> Placed {
        let group_of = groups
            .iter()
            .enumerate()
            .flat_map(|(gi, g)| std::iter::repeat_n(gi, g.servers as usize));
        // Every server keeps its index, placed or not, so that the flow's indices hold; one
        // that holds no layers has no KV blocks and is never routed to.
        let all: Vec<Server> = group_of
            .zip(placement)
            .map(|(gi, range)| {
                let range = range.unwrap_or((0, 0));
                let kind = engine.kind(&groups[gi], (range.0, range.1.max(range.0 + 1)));
                Server {
                    group: gi,
                    range,
                    blocks_free: if range.1 > range.0 { kind.blocks } else { 0 },
                    kind,
                    pending: VecDeque::new(),
                    running: None,
                    peak_blocks_used: 0,
                    requests: 0,
                }
            })
            .collect();
        let n = requests.len();
        let credit_next = flow.next.iter().map(|e| vec![0.0; e.len()]).collect();
        Placed {
            requests,
            servers: all,
            engine,
            credit_entry: vec![0.0; flow.entry.len()],
            credit_next,
            flow,
            waiting: VecDeque::new(),
            paths: vec![Vec::new(); n],
            sends: between,
            generated: vec![0; n],
            first_token: vec![None; n],
            finished: vec![None; n],
            admitted: vec![None; n],
            refused: 0,
            iterations: Vec::new(),
        }
    }

    fn blocks_for(&self, r: usize) -> u32 {
        let q = &self.requests[r];
        (q.prompt_tokens + q.output_tokens.max(1)).div_ceil(self.engine.memory.block_tokens)
    }

    /// Whether server `i` is placed and has room for `blocks`.
    fn has_room(&self, i: usize, blocks: u32) -> bool {
        let s = &self.servers[i];
        s.placed() && s.blocks_free >= blocks
    }

    /// Of `choices` (index, flow), the one smooth weighted round-robin picks among those `ok`
    /// accepts, updating `credit`.
    fn pick(
        choices: &[(usize, f64)],
        credit: &mut [f64],
        ok: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let eligible: Vec<(usize, usize, f64)> = choices
            .iter()
            .enumerate()
            .filter(|&(_, &(i, f))| f > 0.0 && ok(i))
            .map(|(k, &(i, f))| (k, i, f))
            .collect();
        let total: f64 = eligible.iter().map(|e| e.2).sum();
        for &(k, _, f) in &eligible {
            credit[k] += f;
        }
        let &(k, i, _) = eligible
            .iter()
            .max_by(|a, b| credit[a.0].total_cmp(&credit[b.0]).then(b.0.cmp(&a.0)))?;
        credit[k] -= total;
        Some(i)
    }

    /// A pipeline with room for request `r`, chosen in proportion to the flow; the credits move
    /// only when one is found.
    fn pipeline(&mut self, r: usize) -> Option<Vec<usize>> {
        let need = self.blocks_for(r);
        let mut entry = self.credit_entry.clone();
        let mut next = self.credit_next.clone();
        let sources: Vec<(usize, f64)> = self.flow.entry.iter().copied().enumerate().collect();
        let mut at = Self::pick(&sources, &mut entry, |i| self.has_room(i, need))?;
        let mut path = vec![at];
        while self.servers[at].range.1 < self.engine.model.layers {
            // Short of the last layer, a server's flow goes to servers only (never the sink);
            // credits are kept per edge, in the order `flow.next` lists them.
            let choices: Vec<(usize, f64)> = self.flow.next[at]
                .iter()
                .map(|&(to, f)| (to.expect("only the last layer's servers feed the sink"), f))
                .collect();
            at = Self::pick(&choices, &mut next[at], |j| self.has_room(j, need))?;
            path.push(at);
        }
        self.credit_entry = entry;
        self.credit_next = next;
        Some(path)
    }

    /// Admits waiting requests, first come first served, while pipelines have room.
    fn admit(&mut self, sched: &mut Scheduler<Ev>) {
        while let Some(&r) = self.waiting.front() {
            let Some(path) = self.pipeline(r) else {
                let idle = self.servers.iter().all(Server::idle);
                if idle {
                    // No pipeline could ever hold it: refuse it rather than wait for ever.
                    self.waiting.pop_front();
                    self.refused += 1;
                    continue;
                }
                break;
            };
            self.waiting.pop_front();
            let need = self.blocks_for(r);
            for &i in &path {
                let s = &mut self.servers[i];
                s.blocks_free -= need;
                s.peak_blocks_used = s.peak_blocks_used.max(s.kind.blocks - s.blocks_free);
                s.requests += 1;
            }
            let first = path[0];
            self.paths[r] = path;
            self.servers[first].pending.push_back(Item {
                request: r,
                tokens: self.requests[r].prompt_tokens.max(1),
                context: 0,
                decode: false,
                samples: true,
            });
            self.start(first, sched);
        }
    }

    /// Starts an iteration on server `i` if it is idle and has work.
    fn start(&mut self, i: usize, sched: &mut Scheduler<Ev>) {
        let e = &self.engine;
        let s = &mut self.servers[i];
        if s.running.is_some() || s.pending.is_empty() {
            return;
        }
        if self.iterations.len() as u64 >= super::MAX_WORK {
            return sched.stop();
        }
        let mut items: Vec<Item> = Vec::new();
        let mut tokens = 0u32;
        while let Some(&item) = s.pending.front() {
            if items.len() as u32 >= e.max_batch_size {
                break;
            }
            let room = e.max_batch_tokens.saturating_sub(tokens);
            if item.tokens <= room || (items.is_empty() && !e.chunked) {
                items.push(item);
                tokens += item.tokens;
                s.pending.pop_front();
            } else if e.chunked && room > 0 && !item.decode {
                items.push(Item {
                    tokens: room,
                    samples: false,
                    ..item
                });
                let rest = s.pending.front_mut().expect("the item looked at");
                rest.tokens -= room;
                rest.context += room;
                break;
            } else {
                break;
            }
        }
        let last = s.range.1 == e.model.layers;
        let mut batch = Batch::default();
        for it in &items {
            if it.decode {
                batch.decodes += 1;
                batch.decode_context += it.context as u64;
            } else {
                batch.prefill.push((it.tokens, it.context));
            }
            if last && it.samples {
                batch.sampling += 1;
            }
        }
        let now = sched.now();
        for it in &items {
            self.admitted[it.request].get_or_insert(now);
        }
        let end = now.saturating_add(SimTime::from_secs_f64(s.kind.iteration(&batch)));
        self.iterations.push((
            i,
            now,
            end,
            batch.tokens() - batch.decodes as u64,
            batch.decodes,
        ));
        s.running = Some(items);
        sched.at(end, Ev::Done(i));
    }

    /// Sends `items` from server `from` to server `to`, `bytes` in all.
    fn hand_off(
        &mut self,
        (from, to): (usize, usize),
        items: Vec<Item>,
        bytes: u64,
        sched: &mut Scheduler<Ev>,
    ) {
        let seconds = if from == to {
            0.0
        } else {
            self.sends.seconds(from as u32, to as u32, bytes)
        };
        sched.at(
            sched.now().saturating_add(SimTime::from_secs_f64(seconds)),
            Ev::Deliver(to, items),
        );
    }
}

impl Process for Placed {
    type Event = Ev;

    fn start(&mut self, sched: &mut Scheduler<Ev>) {
        for (k, r) in self.requests.iter().enumerate() {
            sched.at(r.arrival, Ev::Arrival(k));
        }
    }

    fn handle(&mut self, ev: Ev, sched: &mut Scheduler<Ev>) {
        match ev {
            Ev::Arrival(r) => {
                self.waiting.push_back(r);
                self.admit(sched);
            }
            Ev::Deliver(i, items) => {
                self.servers[i].pending.extend(items);
                self.start(i, sched);
            }
            Ev::Done(i) => {
                let items = self.servers[i].running.take().expect("a running iteration");
                let now = sched.now();
                let hidden_bytes = self.engine.model.hidden as u64 * 2;
                // Work for each next server, and its bytes.
                let mut out: Vec<(usize, Vec<Item>, u64)> = Vec::new();
                let mut freed = false;
                for it in items {
                    let r = it.request;
                    let path = &self.paths[r];
                    let at = path.iter().position(|&x| x == i).expect("on its pipeline");
                    let (to, next, bytes) = if at + 1 < path.len() {
                        (path[at + 1], it, it.tokens as u64 * hidden_bytes)
                    } else if it.samples {
                        self.generated[r] += 1;
                        self.first_token[r].get_or_insert(now);
                        let q = &self.requests[r];
                        if self.generated[r] >= q.output_tokens.max(1) {
                            self.finished[r] = Some(now);
                            let need = self.blocks_for(r);
                            for &k in &self.paths[r] {
                                self.servers[k].blocks_free += need;
                            }
                            freed = true;
                            continue;
                        }
                        let step = Item {
                            request: r,
                            tokens: 1,
                            context: q.prompt_tokens + self.generated[r] - 1,
                            decode: true,
                            samples: true,
                        };
                        (path[0], step, 4)
                    } else {
                        continue; // a prompt chunk that samples nothing
                    };
                    match out.iter_mut().find(|o| o.0 == to) {
                        Some(o) => {
                            o.1.push(next);
                            o.2 += bytes;
                        }
                        None => out.push((to, vec![next], bytes)),
                    }
                }
                for (to, items, bytes) in out {
                    self.hand_off((i, to), items, bytes, sched);
                }
                self.start(i, sched);
                if freed {
                    self.admit(sched);
                }
            }
        }
    }
}

/// Simulates a placed fleet serving `c`'s requests.
pub(super) fn run(
    c: &ServingConfig,
    p: &PlacedFleet,
) -> Result<ServingRun, crate::key_error::KeyError> {
    let (tier, memory, seed) = (c.tier, c.memory, c.seed);
    let groups = &p.groups;
    let engine = Engine {
        model: c.model.clone(),
        memory,
        max_batch_size: c.max_batch_size,
        max_batch_tokens: c.max_batch_tokens,
        chunked: c.scheduler == SchedulerKind::Sarathi,
    };
    let requests = c.requests.clone();
    let mut sends = Sends::new(p.between.clone(), tier);
    let problem = problem(groups, &engine, &mut sends, Lengths::of(&requests));
    let placements = place_all(&problem, seed);
    let (_, placement, _) = placements
        .iter()
        .find(|x| x.0 == p.method)
        .expect("every method placed");
    let flow = problem.flow(placement);
    let max_flow = flow.tokens_per_s;
    let placed = Placed::new(groups, engine, (placement, flow.clone()), sends, requests);
    let fits = max_flow > 0.0
        && placed
            .servers
            .iter()
            .all(|sv| !sv.placed() || sv.kind.blocks > 0);
    let mut sim = Simulation::new(placed);
    let stats = if fits {
        sim.run_to_end()
    } else {
        sim.run_until(SimTime::ZERO)
    };
    if sim.process.iterations.len() as u64 >= super::MAX_WORK {
        return Err(super::too_many_iterations());
    }
    let outcome = Outcome {
        c,
        p,
        problem: &problem,
        placements: &placements,
        flow: &flow,
        fits,
    };
    Ok(report::report(&outcome, sim.process, stats.events))
}

/// Every placement method's placement of `problem`, with the max-flow it reaches (tokens per
/// second), in `Method::ALL`'s order, each drawing from the seed's "placement" stream.
fn place_all(problem: &Problem, seed: u64) -> Vec<(Method, Placement, f64)> {
    let streams = RngStreams::new(seed);
    Method::ALL
        .iter()
        .map(|&m| {
            let p = problem.place(m, &mut streams.stream("placement"));
            let v = problem.flow(&p).tokens_per_s;
            (m, p, v)
        })
        .collect()
}
