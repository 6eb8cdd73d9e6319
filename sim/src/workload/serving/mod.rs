//! LLM serving: a fleet of replicas behind a router, each an inference engine that
//! batches at every iteration (vLLM, Sarathi-Serve) or per batch (static), with a paged KV cache.
//!
//! The fleet is a reactive process on the engine: an arrival is routed to a replica; an idle
//! replica plans an iteration (`replica`), prices it (`cost`) and schedules its end; at the end
//! the iteration's requests advance, sampled tokens are stamped, and the replica plans again.
//! Requests come from `traffic`. Each replica is `tp` consecutive GPUs of one node (replica j on
//! GPUs j x tp to (j + 1) x tp - 1); the network prices each replica's tensor-parallel
//! all-reduces.
//!
//! Disaggregated serving (DistServe, Splitwise; `[serving.disaggregation]`): the first
//! `prefill_replicas` replicas only prefill. A request's first token is sampled there (its TTFT);
//! then its KV cache (prompt tokens x the KV bytes of a token, each tensor-parallel shard from
//! GPU k of the prefill replica to GPU k of the decode replica) crosses the modelled network to a
//! decode replica chosen by the router among the `decode_replicas`, which admits it without a
//! prefill once it has the KV blocks, and decodes the remaining tokens; the transfer counts in
//! its time per output token. Each shard's transfer is priced as NCCL's send/recv by the
//! collective layer, on its own (concurrent transfers do not share links).
//!
//! Swap preemption copies a preempted request's KV cache to host memory and back when it is
//! readmitted, each GPU its shard over its own PCIe link at the link's efficiency; the copies
//! lengthen the iteration that makes them (the engine waits for them, as vLLM's swaps block the
//! step).
//!
//! A mixed fleet (`[[serving.group]]`) holds replicas of several GPU types, each group on nodes of
//! its own (`kind` sizes and prices each); routers weigh a replica's outstanding tokens by its
//! kind's speed on a reference iteration, and `weighted` deals requests in proportion to it.
//!
//! Pipeline-parallel replicas (`pp`) run one engine per stage (`kind` prices their iterations
//! with the stage hand-offs); the fleet schedules engines, so a replica of pp stages is pp
//! schedulers sharing its GPUs.
//!
//! Mixture-of-experts models are served with their experts split by tensor parallelism (no
//! expert parallelism), tokens spread evenly over the experts (`cost`).
//!
//! A placed fleet (`serving.placement`, Helix) spreads one model's layers over the servers of
//! a mixed fleet by max-flow; `pipelines` simulates it and `placement` places it.
//!
//! Energy (`energy`): each device's idle power for the run and its board power while its
//! replica's iterations run; per output token.
//!
//! Not modelled yet: expert parallelism in serving, disaggregated pools of pipeline-parallel or
//! mixed replicas. They are refused with a clear message.

pub mod cost;
pub mod energy;
pub mod kind;
pub mod offload;
pub mod pipelines;
pub mod placement;
pub mod policy;
pub mod replica;
pub mod request;
mod trace;

use crate::engine::{Process, RngStreams, Scheduler, SimTime, Simulation};
use crate::exec::{Graph, Timeline};
use crate::hw::host::HostSpec;
use crate::hw::{ComputeModel, Dtype, GpuSpec, gpu};
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::cluster::{self, Needs};
use crate::scenario::serving::{GroupSection, ServingSection, SloSection};
use kind::{MemoryPolicy, ReplicaKind};
use policy::{OffloadMode, Preemption, RouterKind, SchedulerKind};
use rand::RngExt;
use rand::rngs::ChaCha8Rng;
use replica::{Limits, Plan, Progress, Replica};
use request::Request;
use serde_json::{Value, json};

enum Ev {
    Arrival(usize),
    Done(usize),
    /// A request's KV cache has reached the decode pool.
    KvArrived(usize),
}

const GIB: f64 = (1u64 << 30) as f64;

struct Fleet {
    requests: Vec<Request>,
    progress: Vec<Progress>,
    replicas: Vec<Replica>,
    plans: Vec<Option<(Plan, SimTime)>>,
    /// The kinds of replica, and each replica's kind.
    kinds: Vec<ReplicaKind>,
    kind_of: Vec<usize>,
    /// Weighted round-robin credit of each replica.
    credit: Vec<f64>,
    router: RouterKind,
    next_rr: usize,
    rng: ChaCha8Rng,
    first_token: Vec<Option<SimTime>>,
    finished: Vec<Option<SimTime>>,
    admitted: Vec<Option<SimTime>>,
    replica_of: Vec<usize>,
    /// (replica, start, end, prefill tokens, decodes) of every iteration, for the trace.
    iterations: Vec<(usize, SimTime, SimTime, u64, u32)>,
    /// Disaggregated: the first this many replicas only prefill.
    prefill_replicas: Option<usize>,
    /// (request, from, to, start, end, bytes) of every KV transfer.
    transfers: Vec<(usize, usize, usize, SimTime, SimTime, f64)>,
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

    fn start(&mut self, i: usize, sched: &mut Scheduler<Ev>) {
        if self.replicas[i].busy {
            return;
        }
        let Some(plan) = self.replicas[i].plan(&mut self.progress) else {
            return;
        };
        let now = sched.now();
        for &(r, _) in &plan.prefill {
            self.admitted[r].get_or_insert(now);
        }
        let kind = &mut self.kinds[self.kind_of[i]];
        let seconds =
            kind.iteration(&plan.batch) + plan.swap_tokens as f64 * kind.swap_seconds_per_token;
        let end = now + SimTime::from_secs_f64(seconds);
        self.replicas[i].busy = true;
        self.iterations.push((
            i,
            now,
            end,
            plan.batch.tokens() - plan.batch.decodes as u64,
            plan.batch.decodes,
        ));
        self.plans[i] = Some((plan, now));
        sched.at(end, Ev::Done(i));
    }
}

impl Process for Fleet {
    type Event = Ev;

    fn start(&mut self, sched: &mut Scheduler<Ev>) {
        for (k, r) in self.requests.iter().enumerate() {
            sched.at(r.arrival, Ev::Arrival(k));
        }
    }

    fn handle(&mut self, ev: Ev, sched: &mut Scheduler<Ev>) {
        match ev {
            Ev::Arrival(r) => {
                let i = self.route(self.entry_pool());
                self.replica_of[r] = i;
                self.replicas[i].waiting.push_back(r);
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
                        let end = now + SimTime::from_secs_f64(seconds);
                        let bytes = tokens as f64 * kind.kv_per_token * kind.tp as f64;
                        self.transfers.push((r, i, to, now, end, bytes));
                        self.replica_of[r] = to;
                        sched.at(end, Ev::KvArrived(r));
                    }
                }
                self.replicas[i].busy = false;
                self.start(i, sched);
            }
            Ev::KvArrived(r) => {
                let to = self.replica_of[r];
                self.replicas[to].waiting.push_back(r);
                self.start(to, sched);
            }
        }
    }
}

/// Mean and percentiles of a sample, in seconds.
pub(crate) fn summary(mut v: Vec<f64>) -> Value {
    if v.is_empty() {
        return json!({ "mean": null, "p50": null, "p90": null, "p99": null });
    }
    v.sort_by(f64::total_cmp);
    let pick = |q: f64| v[((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)];
    json!({
        "mean": v.iter().sum::<f64>() / v.len() as f64,
        "p50": pick(0.5),
        "p90": pick(0.9),
        "p99": pick(0.99),
    })
}

/// When each request arrived, was admitted, sampled its first token and finished, and how many
/// tokens it was to generate: what the latency figures of every kind of fleet come from.
pub(super) struct Lives<'a> {
    pub requests: &'a [Request],
    pub outputs: &'a [u32],
    pub admitted: &'a [Option<SimTime>],
    pub first_token: &'a [Option<SimTime>],
    pub finished: &'a [Option<SimTime>],
}

impl Lives<'_> {
    /// The completed requests, and the report's request counts, throughput, latency summaries
    /// and SLO attainment under `slo`.
    pub fn report(&self, slo: &SloSection) -> (Vec<usize>, Value) {
        let n = self.requests.len();
        let done: Vec<usize> = (0..n).filter(|&r| self.finished[r].is_some()).collect();
        let secs = |t: SimTime| t.as_secs_f64();
        let arrival = |r: usize| self.requests[r].arrival;
        let first = |r: usize| self.first_token[r].expect("a completed request sampled");
        let last = |r: usize| self.finished[r].expect("completed");
        let ttft = |r: usize| secs(first(r) - arrival(r));
        let e2e = |r: usize| secs(last(r) - arrival(r));
        let tpot = |r: usize| {
            let out = self.outputs[r];
            (out > 1).then(|| secs(last(r) - first(r)) / (out - 1) as f64)
        };
        let queueing: Vec<f64> = done
            .iter()
            .map(|&r| secs(self.admitted[r].expect("admitted") - arrival(r)))
            .collect();
        let start = self
            .requests
            .iter()
            .map(|r| r.arrival)
            .min()
            .unwrap_or(SimTime::ZERO);
        let end = done.iter().map(|&r| last(r)).max().unwrap_or(start);
        let span = secs(end - start).max(f64::MIN_POSITIVE);
        let output_tokens: u64 = done.iter().map(|&r| self.outputs[r] as u64).sum();
        let meets = |r: usize| {
            slo.ttft.is_none_or(|d| ttft(r) <= d.secs())
                && slo.tpot.is_none_or(|d| tpot(r).unwrap_or(0.0) <= d.secs())
                && slo.e2e.is_none_or(|d| e2e(r) <= d.secs())
        };
        let meeting = done.iter().filter(|&&r| meets(r)).count();
        let report = json!({
            "requests": n,
            "requests_completed": done.len(),
            "throughput": {
                "requests_per_s": done.len() as f64 / span,
                "output_tokens_per_s": output_tokens as f64 / span,
            },
            "ttft_s": summary(done.iter().map(|&r| ttft(r)).collect()),
            "tpot_s": summary(done.iter().filter_map(|&r| tpot(r)).collect()),
            "e2e_s": summary(done.iter().map(|&r| e2e(r)).collect()),
            "queueing_s": summary(queueing),
            "slo": {
                "attainment": if done.is_empty() { 0.0 } else { meeting as f64 / n as f64 },
                "goodput_requests_per_s": meeting as f64 / span,
            },
        });
        (done, report)
    }
}

/// Adds the keys of `extra` (an object) to `report`.
pub(super) fn merge(report: &mut Value, extra: Value) {
    if let (Some(r), Value::Object(e)) = (report.as_object_mut(), extra) {
        r.extend(e);
    }
}

/// What a serving run produced.
pub struct ServingRun {
    pub report: Value,
    pub graph: Graph,
    pub timeline: Timeline,
}

/// One `[[serving.group]]`, checked: its GPU, degrees, replicas and the node they sit in.
pub(super) struct GroupSetup {
    pub gpu: &'static GpuSpec,
    pub tp: u32,
    pub pp: u32,
    pub replicas: u32,
    pub gpus_per_node: u32,
    pub node: cluster::ClusterSetup,
}

/// Group `i` of a mixed fleet, its keys checked at their places; `dtype` is the model's format,
/// `tier` prices the node's transfers.
fn group_setup(
    s: &Scenario,
    i: usize,
    group: &GroupSection,
    (dtype, tier): (Dtype, crate::net::tier::Tier),
    assumptions: &mut Vec<String>,
) -> Result<GroupSetup, ScenarioError> {
    let at = |key: &str| format!("serving.group.{key}");
    let name = group.gpu.as_deref().ok_or_else(|| {
        s.error_at("serving.group", format!("group {} has no `gpu`", i + 1))
            .with_help("e.g. gpu = \"A100-80GB\" (see `clustersim list gpus`)")
    })?;
    let g = gpu::find(name).map_err(|close| {
        s.error_at(
            &at("gpu"),
            format!("unknown GPU \"{name}\" in group {}", i + 1),
        )
        .with_help(format!("closest catalog names: {}", close.join(", ")))
    })?;
    if g.peak_flops(dtype).is_none() {
        return Err(s
            .error_at(&at("gpu"), format!("{} has no {dtype} arithmetic", g.name))
            .with_help("choose a model.dtype the GPU supports"));
    }
    let positive = |v: Option<u32>, key: &str| cluster::positive(s, v.unwrap_or(1), &at(key));
    let tp = positive(group.tp, "tp")?;
    let pp = positive(group.pp, "pp")?;
    let replicas = positive(group.replicas, "replicas")?;
    let most = crate::net::topology::spec::MAX_GPUS;
    if replicas as u64 * tp as u64 * pp as u64 > most {
        return Err(s
            .error_at(
                &at("replicas"),
                format!(
                    "group {}: {replicas} replicas of tp x pp = {} x {pp} GPUs; a fleet holds \
                     at most {most} GPUs",
                    i + 1,
                    tp
                ),
            )
            .with_help("fewer replicas"));
    }
    let gpus_per_node = match group.gpus_per_node {
        Some(n) => cluster::positive(s, n, &at("gpus_per_node"))?,
        None => {
            assumptions.push(format!("group {}: 8 GPUs per node", i + 1));
            8
        }
    };
    if tp as u64 * pp as u64 > gpus_per_node as u64 {
        return Err(s.error_at(
            &at("tp"),
            format!(
                "group {}: tp x pp = {} is more than a node's {gpus_per_node} GPUs (a group's \
                 replicas stay within a node)",
                i + 1,
                tp as u64 * pp as u64
            ),
        ));
    }
    let node = cluster::datasheet_node(s, g, gpus_per_node, tier)?;
    assumptions.push(format!(
        "group {}: intra-node bandwidth {} GB/s per GPU per direction ({} datasheet)",
        i + 1,
        g.intra_bandwidth / 1e9,
        g.name
    ));
    Ok(GroupSetup {
        gpu: g,
        tp,
        pp,
        replicas,
        gpus_per_node,
        node,
    })
}

pub fn simulate(s: &Scenario) -> Result<ServingRun, ScenarioError> {
    let f = &s.file;
    let mut assumptions: Vec<String> = Vec::new();
    let serving = f.serving.clone().unwrap_or_default();
    let workload = f.workload.clone().ok_or_else(|| {
        s.error_at("workload", "a serving scenario needs a [workload] table")
            .with_help("add [workload] with requests, arrival and prompt_tokens / output_tokens")
    })?;
    let model = crate::scenario::lower::model::resolve_scenario(s, &mut assumptions)?;
    if s.file.model.elementwise.is_some() {
        return Err(s
            .error_at(
                "model.elementwise",
                "model.elementwise describes a training layer's kernels; serving prices its own",
            )
            .with_help("remove elementwise from [model]"));
    }
    if model.moe.is_some() {
        assumptions.push(
            "mixture of experts: tokens spread evenly over the experts, experts split by tensor \
             parallelism (no expert parallelism in serving)"
                .into(),
        );
    }
    let positive = |v: Option<u32>,
                    path: &str,
                    default: u32,
                    assumptions: &mut Vec<String>,
                    say: &str|
     -> Result<u32, ScenarioError> {
        let v = match v {
            Some(v) => v,
            None => {
                if !say.is_empty() {
                    assumptions.push(say.to_string());
                }
                default
            }
        };
        if v == 0 {
            return Err(s.error_at(path, format!("`{path}` must be at least 1")));
        }
        Ok(v)
    };
    let swap = serving.preemption == Some(Preemption::Swap);
    let pools = match &serving.disaggregation {
        None => None,
        Some(d) => {
            let pool = |v: Option<u32>, key: &str| -> Result<u32, ScenarioError> {
                let path = format!("serving.disaggregation.{key}");
                match v {
                    None => Err(s
                        .error_at(
                            "serving.disaggregation",
                            format!("missing key `{key}` in [serving.disaggregation]"),
                        )
                        .with_help("a disaggregated fleet names both pools, e.g. prefill_replicas = 2 and decode_replicas = 6")),
                    Some(0) => Err(s.error_at(&path, format!("`{path}` must be at least 1"))),
                    Some(n) => Ok(n),
                }
            };
            Some((
                pool(d.prefill_replicas, "prefill_replicas")?,
                pool(d.decode_replicas, "decode_replicas")?,
            ))
        }
    };
    let scheduler = serving.scheduler.unwrap_or_else(|| {
        assumptions.push("vLLM scheduler (continuous batching)".into());
        SchedulerKind::Vllm
    });
    if pools.is_some() && scheduler == SchedulerKind::Static {
        return Err(s
            .error_at(
                "serving.scheduler",
                "static batching with disaggregated pools is not modelled",
            )
            .with_help("use scheduler = \"vllm\" or \"sarathi\""));
    }
    let max_batch_size = positive(
        serving.max_batch_size,
        "serving.max_batch_size",
        256,
        &mut assumptions,
        "max_batch_size 256 (vLLM's default)",
    )?;
    let max_batch_tokens = positive(
        serving.max_batch_tokens,
        "serving.max_batch_tokens",
        8192,
        &mut assumptions,
        "max_batch_tokens 8192",
    )?;
    let block_tokens = positive(
        serving.kv_block_tokens,
        "serving.kv_block_tokens",
        16,
        &mut assumptions,
        "",
    )?;
    let fraction = serving.kv_memory_fraction.unwrap_or(0.9);
    if !(fraction > 0.0 && fraction <= 1.0) {
        return Err(s.error_at(
            "serving.kv_memory_fraction",
            "kv_memory_fraction must be in (0, 1]",
        ));
    }
    let router = serving.router.unwrap_or(RouterKind::LeastLoaded);
    let kv_dtype = match serving.kv_cache_dtype {
        Some(d @ (Dtype::Bf16 | Dtype::Fp16 | Dtype::Fp8)) => d,
        Some(other) => {
            return Err(s
                .error_at(
                    "serving.kv_cache_dtype",
                    format!("a KV cache in {other} is not modelled"),
                )
                .with_help("use \"bf16\", \"fp16\" or \"fp8\""));
        }
        None => {
            assumptions.push("KV cache in bf16".into());
            Dtype::Bf16
        }
    };
    let offload_mode = match (serving.weights_offload_mode, serving.weights_offload) {
        (Some(mode), None) => {
            return Err(s
                .error_at(
                    "serving.weights_offload_mode",
                    format!(
                        "weights_offload_mode = \"{}\" with no weights offloaded",
                        mode.name()
                    ),
                )
                .with_help("add weights_offload = \"<bytes per GPU>\", or remove the mode"));
        }
        (Some(mode), Some(_)) => mode,
        (None, Some(_)) => {
            assumptions.push(
                "offloaded weights read over PCIe before each iteration's kernels (serial, as vLLM)"
                    .into(),
            );
            OffloadMode::Serial
        }
        (None, None) => OffloadMode::Serial,
    };
    // The host is resolved only where something is computed on it or its capacity matters.
    let host = match offload_mode {
        OffloadMode::Serial => None,
        OffloadMode::Prefetch | OffloadMode::Cpu => {
            Some(crate::scenario::lower::host::resolve(s, &mut assumptions)?)
        }
    };
    let memory = MemoryPolicy {
        fraction,
        block_tokens,
        kv_dtype,
        offload_bytes: serving.weights_offload.map_or(0.0, |b| b.0 as f64),
        offload_mode,
        host: host.filter(|_| offload_mode == OffloadMode::Cpu),
    };
    let supports = |g: &GpuSpec, path: &str| -> Result<(), ScenarioError> {
        if g.peak_flops(model.dtype).is_none() {
            return Err(s
                .error_at(
                    path,
                    format!("{} has no {} arithmetic", g.name, model.dtype),
                )
                .with_help("choose a model.dtype the GPU supports"));
        }
        Ok(())
    };

    // The fleet's hardware: one kind of replica on `[cluster]`, or a mixed fleet of groups.
    let mut profile_name = None;
    let mut prefill_replicas = None;
    let tier;
    let nodes;
    let kinds: Vec<ReplicaKind> = match &serving.group {
        None => {
            if serving.placement.is_some() {
                return Err(s
                    .error_at(
                        "serving.placement",
                        "a placement spreads layers over the servers of [[serving.group]] tables",
                    )
                    .with_help(
                        "add [[serving.group]] tables (gpu, replicas = servers, tp) and remove                          cluster.gpu",
                    ));
            }
            let disaggregated = pools.is_some();
            let tp = positive(serving.tp, "serving.tp", 1, &mut assumptions, "")?;
            let pp = positive(serving.pp, "serving.pp", 1, &mut assumptions, "")?;
            if pp > 1 && disaggregated {
                return Err(s.error_at(
                    "serving.pp",
                    "pipeline-parallel replicas in disaggregated pools are not modelled by this \
                     version",
                ));
            }
            let stages_cross_nodes = tp * pp > f.cluster.gpus_per_node.unwrap_or(8);
            let needs = Needs {
                sizes: false,
                inter_node: disaggregated || stages_cross_nodes,
            };
            let cluster = cluster::resolve(s, &mut assumptions, needs)?;
            let g = cluster.gpu;
            supports(g, "model.dtype")?;
            let gpus_per_node = cluster.gpus_per_node;
            if tp > gpus_per_node {
                return Err(s.error_at(
                    "serving.tp",
                    format!("tp = {tp} is more than a node's {gpus_per_node} GPUs"),
                ));
            }
            let replicas = match (pools, serving.replicas) {
                (Some((p, q)), Some(r)) if r != p + q => {
                    return Err(s
                        .error_at(
                            "serving.replicas",
                            format!(
                                "replicas = {r}, but the disaggregated pools hold {p} + {q} = {}",
                                p + q
                            ),
                        )
                        .with_help(
                            "remove `replicas`, or make it prefill_replicas + decode_replicas",
                        ));
                }
                (Some((p, q)), _) => p + q,
                (None, r) => positive(r, "serving.replicas", 1, &mut assumptions, "one replica")?,
            };
            nodes = cluster.nodes;
            if replicas * tp * pp > nodes * gpus_per_node {
                return Err(s
                    .error_at(
                        "serving.replicas",
                        format!(
                            "{replicas} replicas of tp = {tp} x pp = {pp} need {} GPUs; the \
                             cluster has {}",
                            replicas * tp * pp,
                            nodes * gpus_per_node
                        ),
                    )
                    .with_help("raise cluster.nodes, or lower serving.replicas"));
            }
            tier = cluster.tier;
            let profile = cluster::resolve_profile(s, g, model.dtype, &mut assumptions)?;
            let mut compute = match &profile {
                Some(p) => ComputeModel::with_profile(g, p.profile.clone())
                    .map_err(|e| s.error_at("cluster.profile", e))?,
                None => ComputeModel::new(g),
            };
            cluster::apply_attention_kernel(s, &mut compute, &mut assumptions)?;
            crate::scenario::lower::power_limit::apply(s, &mut compute, false, &mut assumptions)?;
            profile_name = profile.map(|p| p.name);
            let kind = ReplicaKind::new(
                g,
                (tp, pp),
                replicas,
                &model,
                memory,
                compute,
                (cluster.topology, tier, cluster.in_switch_reduction),
            );
            prefill_replicas = pools.map(|(p, _)| p as usize);
            vec![kind]
        }
        Some(groups) => {
            refuse_in_mixed_fleet(s, &serving, pools, groups)?;
            tier = cluster::network_tier(s, &mut assumptions);
            let mut setups = Vec::new();
            for (i, group) in groups.iter().enumerate() {
                setups.push(group_setup(
                    s,
                    i,
                    group,
                    (model.dtype, tier),
                    &mut assumptions,
                )?);
            }
            if let Some(method) = serving.placement {
                let settings = pipelines::Settings {
                    method,
                    scheduler,
                    max_batch_size,
                    max_batch_tokens,
                    memory,
                    tier,
                };
                return pipelines::run(s, model, setups, settings, assumptions);
            }
            let mut kinds = Vec::new();
            let mut group_nodes = 0;
            for g in setups {
                group_nodes += (g.replicas * g.tp * g.pp).div_ceil(g.gpus_per_node);
                kinds.push(ReplicaKind::new(
                    g.gpu,
                    (g.tp, g.pp),
                    g.replicas,
                    &model,
                    memory,
                    ComputeModel::new(g.gpu),
                    (g.node.topology, tier, g.node.in_switch_reduction),
                ));
            }
            nodes = group_nodes;
            kinds
        }
    };
    check_offload(s, &kinds, &memory, &host)?;
    let replicas: u32 = kinds.iter().map(|k| k.replicas).sum();
    let fits = kinds.iter().all(ReplicaKind::fits);

    let seed = f.sim.seed.unwrap_or(1);
    let requests =
        crate::scenario::lower::traffic::generate(&workload, seed, s.source.path.parent())
            .map_err(|e| e.locate(s))?;
    let limits = Limits {
        scheduler,
        max_batch_size,
        max_batch_tokens,
        block_tokens,
        swap,
    };
    let fleet = new_fleet(requests, kinds, limits, router, seed, prefill_replicas);
    let mut sim = Simulation::new(fleet);
    let stats = if fits {
        sim.run_to_end()
    } else {
        sim.run_until(SimTime::ZERO)
    };
    let fleet = sim.process;

    let slo = f.slo.clone().unwrap_or_default();
    let outputs: Vec<u32> = fleet.progress.iter().map(|p| p.output).collect();
    let lives = Lives {
        requests: &fleet.requests,
        outputs: &outputs,
        admitted: &fleet.admitted,
        first_token: &fleet.first_token,
        finished: &fleet.finished,
    };
    let (done, latency) = lives.report(&slo);
    let preemptions: u64 = fleet.replicas.iter().map(|r| r.preemptions).sum();
    let kind = |i: usize| &fleet.kinds[fleet.kind_of[i]];
    let swapped_bytes: f64 = fleet
        .replicas
        .iter()
        .enumerate()
        .map(|(i, r)| {
            r.swapped_tokens as f64 * kind(i).kv_per_token * (kind(i).tp * kind(i).pp) as f64
        })
        .sum();
    let peak_kv = fleet
        .replicas
        .iter()
        .map(|r| r.peak_blocks_used as f64 / r.blocks_total.max(1) as f64)
        .fold(0.0, f64::max);
    let groups = groups_report(&fleet, &done, block_tokens);
    // One kind: its figures at the top level, as before; a mixed fleet: per group only.
    let single = (fleet.kinds.len() == 1).then(|| &fleet.kinds[0]);

    let (graph, timeline) = trace::build(&trace::of_fleet(&fleet, &lives, &done), tier);

    let transfer_s: Vec<f64> = fleet
        .transfers
        .iter()
        .map(|&(_, _, _, a, b, _)| (b - a).as_secs_f64())
        .collect();
    let disaggregation = match pools {
        Some((p, q)) => json!({
            "prefill_replicas": p,
            "decode_replicas": q,
            "kv_transfers": fleet.transfers.len(),
            "kv_transfer_bytes": fleet.transfers.iter().map(|t| t.5).sum::<f64>(),
            "kv_transfer_s": summary(transfer_s),
        }),
        None => Value::Null,
    };
    let mut report = json!({
        "kind": "serving",
        "scenario": s.name(),
        "kv_cache": {
            "blocks_per_replica": single.map(|k| k.blocks),
            "block_tokens": block_tokens,
            "peak_use": peak_kv,
            "preemptions": preemptions,
            "preemption": if swap { "swap" } else { "recompute" },
            "swapped_bytes": swapped_bytes,
        },
        "memory": {
            "weights_bytes_per_gpu": single.map(|k| k.weights_per_gpu.round() as u64),
            "weights_offload_bytes_per_gpu": memory.offload_bytes,
            "kv_bytes_per_gpu": single.map(|k| kv_bytes(k, block_tokens).round() as u64),
            "capacity_bytes": single.map(|k| k.gpu.memory_bytes),
            "fits": fits,
        },
        "cluster": {
            "gpu": single.map_or("mixed", |k| k.gpu.name),
            "gpus": (0..fleet.kind_of.len()).map(|i| kind(i).tp * kind(i).pp).sum::<u32>(),
            "nodes": nodes,
            "replicas": replicas,
            "tp": single.map(|k| k.tp),
            "pp": single.map(|k| k.pp),
            "groups": groups,
            "profile": profile_name,
        },
        "disaggregation": disaggregation,
        "model": { "name": model.name, "params": model.params(), "dtype": model.dtype.name() },
        "serving": {
            "scheduler": match scheduler { SchedulerKind::Vllm => "vllm", SchedulerKind::Sarathi => "sarathi", SchedulerKind::Static => "static" },
            "max_batch_size": max_batch_size,
            "max_batch_tokens": max_batch_tokens,
        },
        "fidelity": {
            "compute": if profile_name.is_some() {
                "profile where it has a measurement, roofline for the rest"
            } else {
                "roofline"
            },
            "network": tier.name(),
            "symmetry": "none: every replica and request simulated",
        },
        "assumptions": assumptions,
        "sim": { "events": stats.events, "iterations": fleet.iterations.len() },
    });
    merge(&mut report, latency);
    report["energy"] = energy_report(s, &fleet, &done, &outputs)?;
    if memory.offload_bytes > 0.0 {
        report["offload"] = offload::report(&fleet.kinds, &memory);
    }
    Ok(ServingRun {
        report,
        graph,
        timeline,
    })
}

/// Refuses the keys of `[cluster]`, `[model]` and `[serving]` that do not apply to a mixed fleet
/// of `[[serving.group]]` tables.
fn refuse_in_mixed_fleet(
    s: &Scenario,
    serving: &ServingSection,
    pools: Option<(u32, u32)>,
    groups: &[GroupSection],
) -> Result<(), ScenarioError> {
    let f = &s.file;
    let refuse = |path: &str, what: &str| {
        Err(s
            .error_at(path, format!("{what} does not apply to a mixed fleet"))
            .with_help("each [[serving.group]] names its gpu, replicas, tp and gpus_per_node"))
    };
    if f.cluster.gpu.is_some() {
        return refuse("cluster.gpu", "cluster.gpu");
    }
    if f.cluster.accelerator.is_some() {
        return refuse("cluster.accelerator", "[cluster.accelerator]");
    }
    if f.cluster.nodes.is_some() {
        return refuse("cluster.nodes", "cluster.nodes");
    }
    if f.cluster.profile.is_some() {
        return refuse("cluster.profile", "a calibration profile (one GPU's)");
    }
    if f.model.attention_kernel.is_some() {
        return refuse("model.attention_kernel", "model.attention_kernel");
    }
    if serving.replicas.is_some() {
        return refuse("serving.replicas", "serving.replicas");
    }
    if serving.tp.is_some() {
        return refuse("serving.tp", "serving.tp");
    }
    if serving.pp.is_some() {
        return refuse("serving.pp", "serving.pp");
    }
    if pools.is_some() {
        return Err(s.error_at(
            "serving.disaggregation",
            "disaggregated pools in a mixed fleet are not modelled by this version",
        ));
    }
    if s.file.cluster.power_limit.is_some() {
        return Err(s
            .error_at(
                "cluster.power_limit",
                "a power limit in watts applies to a cluster of one GPU type, not to a \
                 mixed fleet",
            )
            .with_help("remove cluster.power_limit"));
    }
    if groups.is_empty() {
        return Err(s
            .error_at("serving.group", "a mixed fleet needs at least one group")
            .with_help("add [[serving.group]] with gpu, replicas and tp"));
    }
    Ok(())
}

/// Refuses weights to offload beyond a GPU's share, or beyond the host memory of a server.
fn check_offload(
    s: &Scenario,
    kinds: &[ReplicaKind],
    memory: &MemoryPolicy,
    host: &Option<HostSpec>,
) -> Result<(), ScenarioError> {
    if let Some(k) = kinds
        .iter()
        .find(|k| k.offloaded_bytes < memory.offload_bytes)
    {
        return Err(s
            .error_at(
                "serving.weights_offload",
                format!(
                    "{:.1} GiB to offload, but a {} GPU's share of the weights is {:.1} GiB",
                    memory.offload_bytes / GIB,
                    k.gpu.name,
                    k.offloaded_bytes / GIB
                ),
            )
            .with_help("offload at most a GPU's share of the weights"));
    }
    for (h, k) in host.iter().flat_map(|h| kinds.iter().map(move |k| (h, k))) {
        let per_server = memory.offload_bytes * k.offload_users as f64;
        if per_server > h.memory_bytes {
            return Err(s
                .error_at(
                    "serving.weights_offload",
                    format!(
                        "{} GPUs a server each keep {:.1} GiB in host memory: {:.1} GiB, more \
                         than the host's {:.1} GiB",
                        k.offload_users,
                        memory.offload_bytes / GIB,
                        per_server / GIB,
                        h.memory_bytes / GIB
                    ),
                )
                .with_help("offload less, or raise cluster.host.memory"));
        }
    }
    Ok(())
}

/// The fleet at time 0: every replica's engines empty, every request yet to arrive.
fn new_fleet(
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
        prefill_replicas,
        transfers: Vec::new(),
    }
}

/// Each kind of replica's figures, with the requests its replicas completed.
fn groups_report(fleet: &Fleet, done: &[usize], block_tokens: u32) -> Vec<Value> {
    let mut completed_by_kind = vec![0u64; fleet.kinds.len()];
    for &r in done {
        completed_by_kind[fleet.kind_of[fleet.replica_of[r]]] += 1;
    }
    fleet
        .kinds
        .iter()
        .zip(&completed_by_kind)
        .map(|(k, completed)| {
            json!({
                "requests_completed": completed,
                "gpu": k.gpu.name,
                "replicas": k.replicas,
                "pp": k.pp,
                "capacity_tokens_per_s": k.capacity_tokens_per_s,
                "tp": k.tp,
                "kv_blocks_per_replica": k.blocks,
                "weights_bytes_per_gpu": k.weights_per_gpu.round() as u64,
                "kv_bytes_per_gpu": kv_bytes(k, block_tokens).round() as u64,
                "capacity_bytes": k.gpu.memory_bytes,
                "fits": k.fits(),
            })
        })
        .collect()
}

/// The bytes of KV cache a GPU of kind `k` holds.
fn kv_bytes(k: &ReplicaKind, block_tokens: u32) -> f64 {
    k.blocks as f64 * block_tokens as f64 * k.kv_per_token
}

/// The fleet's energy over the span from the first arrival to the last completion, from each
/// kind's busy GPU-seconds.
fn energy_report(
    s: &Scenario,
    fleet: &Fleet,
    done: &[usize],
    outputs: &[u32],
) -> Result<Value, ScenarioError> {
    let kind = |i: usize| &fleet.kinds[fleet.kind_of[i]];
    let mut busy = vec![0.0; fleet.kinds.len()];
    for &(i, start, end, _, _) in &fleet.iterations {
        busy[fleet.kind_of[i]] += (end - start).as_secs_f64() * kind(i).tp as f64;
    }
    let uses: Vec<energy::Use> = fleet
        .kinds
        .iter()
        .zip(busy)
        .map(|(k, busy_gpu_seconds)| energy::Use {
            gpu: k.gpu,
            gpus: k.replicas * k.tp * k.pp,
            busy_gpu_seconds,
            power_limit_watts: s.file.cluster.power_limit.map(|p| p.0),
        })
        .collect();
    let first_arrival = fleet.requests.iter().map(|r| r.arrival).min();
    let last_done = fleet.finished.iter().flatten().max();
    let span = match (first_arrival, last_done) {
        (Some(a), Some(&b)) => (b - a).as_secs_f64(),
        _ => 0.0,
    };
    let output_tokens: u64 = done.iter().map(|&r| outputs[r] as u64).sum();
    let pue = crate::scenario::lower::cost::prices(s)?.map_or(1.0, |p| p.pue);
    Ok(energy::report(&uses, span, output_tokens, pue))
}
