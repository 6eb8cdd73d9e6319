//! LLM serving: a fleet of identical replicas behind a router, each an inference engine that
//! batches at every iteration (vLLM, Sarathi-Serve) or per batch (static), with a paged KV cache.
//!
//! The fleet is a reactive process on the engine: an arrival is routed to a replica; an idle
//! replica plans an iteration (`replica`), prices it (`cost`) and schedules its end; at the end
//! the iteration's requests advance, sampled tokens are stamped, and the replica plans again.
//! Requests come from `traffic`. Each replica is `tp` GPUs of one node; replicas do not share
//! links, so the network prices only each replica's tensor-parallel all-reduces.
//!
//! Not modelled yet: pipeline-parallel replicas, disaggregated prefill and decode pools, mixed GPU
//! fleets, swap preemption, mixture-of-experts models. They are refused with a clear message.

pub mod cost;
pub mod replica;
pub mod traffic;

use crate::engine::{Process, RngStreams, Scheduler, SimTime, Simulation};
use crate::exec::{Graph, Op, OpKind, Timeline};
use crate::hw::{ComputeModel, Dtype, gpu};
use crate::net::Topology;
use crate::net::tier::Tier;
use crate::net::topology::spec::{IntraKind, TopologySpec};
use crate::scenario::error::ScenarioError;
use crate::scenario::serving::{Preemption, RouterKind, SchedulerKind};
use crate::scenario::{NetworkTier, Scenario};
use cost::{IterationCost, kv_bytes_per_token_layer};
use rand::RngExt;
use rand::rngs::ChaCha8Rng;
use replica::{Limits, Plan, Progress, Replica};
use serde_json::{Value, json};
use std::borrow::Cow;
use traffic::Request;

/// Memory an engine keeps aside for activations and workspaces, bytes a GPU (vLLM profiles a
/// forward pass to size it; 1 GiB is typical for 8-70B models at a few thousand batched tokens).
const ACTIVATION_RESERVE: f64 = 1.0 * (1u64 << 30) as f64;

enum Ev {
    Arrival(usize),
    Done(usize),
}

struct Fleet {
    requests: Vec<Request>,
    progress: Vec<Progress>,
    replicas: Vec<Replica>,
    plans: Vec<Option<(Plan, SimTime)>>,
    cost: IterationCost,
    router: RouterKind,
    next_rr: usize,
    rng: ChaCha8Rng,
    first_token: Vec<Option<SimTime>>,
    finished: Vec<Option<SimTime>>,
    admitted: Vec<Option<SimTime>>,
    replica_of: Vec<usize>,
    /// (replica, start, end, prefill tokens, decodes) of every iteration, for the trace.
    iterations: Vec<(usize, SimTime, SimTime, u64, u32)>,
}

impl Fleet {
    fn route(&mut self) -> usize {
        let n = self.replicas.len();
        match self.router {
            RouterKind::RoundRobin => {
                let i = self.next_rr;
                self.next_rr = (self.next_rr + 1) % n;
                i
            }
            RouterKind::LeastLoaded => (0..n)
                .min_by_key(|&i| (self.replicas[i].outstanding(&self.progress), i))
                .expect("at least one replica"),
            RouterKind::PowerOfTwo => {
                let a = self.rng.random_range(0..n);
                let b = self.rng.random_range(0..n);
                let load = |i: usize| self.replicas[i].outstanding(&self.progress);
                if (load(b), b) < (load(a), a) { b } else { a }
            }
        }
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
        let seconds = self.cost.iteration(&plan.batch);
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
                let i = self.route();
                self.replica_of[r] = i;
                self.replicas[i].waiting.push_back(r);
                self.start(i, sched);
            }
            Ev::Done(i) => {
                let (plan, _) = self.plans[i].take().expect("a running iteration");
                let now = sched.now();
                for r in self.replicas[i].complete(&plan, &mut self.progress) {
                    self.first_token[r].get_or_insert(now);
                    if self.progress[r].generated >= self.progress[r].output {
                        self.finished[r] = Some(now);
                        self.replicas[i].finish(r, &mut self.progress);
                    }
                }
                self.replicas[i].busy = false;
                self.start(i, sched);
            }
        }
    }
}

/// Mean and percentiles of a sample, in seconds.
fn summary(mut v: Vec<f64>) -> Value {
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

/// What a serving run produced.
pub struct ServingRun {
    pub report: Value,
    pub graph: Graph,
    pub timeline: Timeline,
}

pub fn simulate(s: &Scenario) -> Result<ServingRun, ScenarioError> {
    let f = &s.file;
    let mut assumptions: Vec<String> = Vec::new();
    let serving = f.serving.clone().unwrap_or_default();
    let workload = f.workload.clone().ok_or_else(|| {
        s.error_at("workload", "a serving scenario needs a [workload] table")
            .with_help("add [workload] with requests, arrival and prompt_tokens / output_tokens")
    })?;
    let gpu_name = f.cluster.gpu.clone().ok_or_else(|| {
        s.error_at("cluster", "missing key `gpu` in [cluster]")
            .with_help("add it, e.g. gpu = \"H100\" (see `clustersim list gpus`)")
    })?;
    let g = gpu::find(&gpu_name).map_err(|close| {
        s.error_at("cluster.gpu", format!("unknown GPU \"{gpu_name}\""))
            .with_help(format!("closest catalog names: {}", close.join(", ")))
    })?;
    let resolved =
        crate::model::resolve_noted(&f.model, s.source.path.parent()).map_err(|e| e.locate(s))?;
    let mut model = resolved.model;
    if model.name.is_empty() {
        model.name = s.name();
    }
    assumptions.extend(resolved.notes);
    if model.moe.is_some() {
        return Err(s.error_at(
            "model",
            "serving mixture-of-experts models is not modelled by this version",
        ));
    }
    if g.peak_flops(model.dtype).is_none() {
        return Err(s
            .error_at(
                "model.dtype",
                format!("{} has no {} arithmetic", g.name, model.dtype),
            )
            .with_help("choose a format the GPU supports"));
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
    let tp = positive(serving.tp, "serving.tp", 1, &mut assumptions, "")?;
    if serving.pp.is_some_and(|p| p > 1) {
        return Err(s.error_at(
            "serving.pp",
            "pipeline-parallel replicas are not modelled by this version",
        ));
    }
    if serving.disaggregation.is_some() {
        return Err(s.error_at(
            "serving.disaggregation",
            "disaggregated prefill and decode pools are not modelled by this version",
        ));
    }
    if serving.preemption == Some(Preemption::Swap) {
        return Err(s
            .error_at(
                "serving.preemption",
                "swap preemption is not modelled by this version",
            )
            .with_help("use preemption = \"recompute\" (vLLM's default)"));
    }
    let gpus_per_node = positive(
        f.cluster.gpus_per_node,
        "cluster.gpus_per_node",
        8,
        &mut assumptions,
        "8 GPUs per node",
    )?;
    if tp > gpus_per_node {
        return Err(s.error_at(
            "serving.tp",
            format!("tp = {tp} is more than a node's {gpus_per_node} GPUs"),
        ));
    }
    let replicas = positive(
        serving.replicas,
        "serving.replicas",
        1,
        &mut assumptions,
        "one replica",
    )?;
    let nodes = f.cluster.nodes.unwrap_or(1);
    if replicas * tp > nodes * gpus_per_node {
        return Err(s
            .error_at(
                "serving.replicas",
                format!(
                    "{replicas} replicas of tp = {tp} need {} GPUs; the cluster has {}",
                    replicas * tp,
                    nodes * gpus_per_node
                ),
            )
            .with_help("raise cluster.nodes, or lower serving.replicas"));
    }
    let scheduler = serving.scheduler.unwrap_or_else(|| {
        assumptions.push("vLLM scheduler (continuous batching)".into());
        SchedulerKind::Vllm
    });
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

    // Memory: weights split over tp, an activation reserve, the rest of the budget for KV.
    let weights = model.params() as f64 * model.dtype.bytes() / tp as f64;
    let budget = g.memory_bytes as f64 * fraction;
    let kv_space = budget - weights - ACTIVATION_RESERVE;
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
    let kv_per_token = kv_bytes_per_token_layer(&model, tp, kv_dtype) * model.layers as f64;
    let blocks = if kv_space > 0.0 {
        (kv_space / (kv_per_token * block_tokens as f64)).floor() as u32
    } else {
        0
    };
    let fits = blocks > 0;

    let seed = f.sim.seed.unwrap_or(1);
    let requests =
        traffic::generate(&workload, seed, s.source.path.parent()).map_err(|e| e.locate(s))?;
    let mut spec = TopologySpec::new(1, gpus_per_node);
    spec.intra = match g.intra_link {
        gpu::IntraLinkKind::NvSwitch => IntraKind::NvSwitch,
        gpu::IntraLinkKind::Mesh => IntraKind::NvLinkMesh,
        gpu::IntraLinkKind::Pcie => IntraKind::Pcie,
    };
    spec.intra_bandwidth = g.intra_bandwidth;
    spec.pcie_bandwidth = g.pcie_bandwidth;
    let topology = Topology::build(&spec).map_err(|e| s.error_at("cluster", e))?;
    let tier = match f.sim.network {
        Some(NetworkTier::Flow) => Tier::Flow,
        _ => Tier::Analytical,
    };
    let compute = ComputeModel::new(g);
    let nvls = g.in_switch_reduction && spec.intra == IntraKind::NvSwitch;
    let cost = IterationCost::new(model.clone(), compute, tp, (topology, tier, nvls), kv_dtype);
    let limits = Limits {
        scheduler,
        max_batch_size,
        max_batch_tokens,
        block_tokens,
    };
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
    let fleet = Fleet {
        requests,
        progress,
        replicas: (0..replicas)
            .map(|_| Replica::new(limits.clone(), blocks))
            .collect(),
        plans: vec![None; replicas as usize],
        cost,
        router,
        next_rr: 0,
        rng: RngStreams::new(seed).stream("router"),
        first_token: vec![None; n],
        finished: vec![None; n],
        admitted: vec![None; n],
        replica_of: vec![0; n],
        iterations: Vec::new(),
    };
    let mut sim = Simulation::new(fleet);
    let stats = if fits {
        sim.run_to_end()
    } else {
        sim.run_until(SimTime::ZERO)
    };
    let fleet = sim.process;

    // Metrics.
    let done: Vec<usize> = (0..n).filter(|&r| fleet.finished[r].is_some()).collect();
    let secs = |t: SimTime| t.as_secs_f64();
    let arrival = |r: usize| fleet.requests[r].arrival;
    let ttft: Vec<f64> = done
        .iter()
        .map(|&r| secs(fleet.first_token[r].unwrap() - arrival(r)))
        .collect();
    let e2e: Vec<f64> = done
        .iter()
        .map(|&r| secs(fleet.finished[r].unwrap() - arrival(r)))
        .collect();
    let tpot: Vec<f64> = done
        .iter()
        .filter(|&&r| fleet.progress[r].output > 1)
        .map(|&r| {
            secs(fleet.finished[r].unwrap() - fleet.first_token[r].unwrap())
                / (fleet.progress[r].output - 1) as f64
        })
        .collect();
    let queueing: Vec<f64> = done
        .iter()
        .map(|&r| secs(fleet.admitted[r].unwrap() - arrival(r)))
        .collect();
    let start = fleet
        .requests
        .iter()
        .map(|r| r.arrival)
        .min()
        .unwrap_or(SimTime::ZERO);
    let end = done
        .iter()
        .map(|&r| fleet.finished[r].unwrap())
        .max()
        .unwrap_or(start);
    let span = secs(end - start).max(f64::MIN_POSITIVE);
    let output_tokens: u64 = done.iter().map(|&r| fleet.progress[r].output as u64).sum();
    let slo = f.slo.clone().unwrap_or_default();
    let meets = |r: usize| {
        let t = secs(fleet.first_token[r].unwrap() - arrival(r));
        let e = secs(fleet.finished[r].unwrap() - arrival(r));
        let out = fleet.progress[r].output;
        let p = if out > 1 {
            secs(fleet.finished[r].unwrap() - fleet.first_token[r].unwrap()) / (out - 1) as f64
        } else {
            0.0
        };
        slo.ttft.is_none_or(|d| t <= d.secs())
            && slo.tpot.is_none_or(|d| p <= d.secs())
            && slo.e2e.is_none_or(|d| e <= d.secs())
    };
    let meeting = done.iter().filter(|&&r| meets(r)).count();
    let preemptions: u64 = fleet.replicas.iter().map(|r| r.preemptions).sum();
    let peak_kv = fleet
        .replicas
        .iter()
        .map(|r| r.peak_blocks_used)
        .max()
        .unwrap_or(0) as f64
        / blocks.max(1) as f64;

    // The trace: one lane per replica, one operation per iteration.
    let mut graph = Graph::new();
    let lanes: Vec<_> = (0..replicas)
        .map(|i| graph.add_lane("iterations", format!("replica {i}")))
        .collect();
    let mut timeline = Timeline {
        start: Vec::new(),
        end: Vec::new(),
    };
    for &(i, a, b, prefill, decodes) in &fleet.iterations {
        graph.add(
            Op {
                name: Cow::Borrowed(if prefill > 0 && decodes > 0 {
                    "mixed"
                } else if prefill > 0 {
                    "prefill"
                } else {
                    "decode"
                }),
                lane: lanes[i],
                kind: OpKind::Compute,
                duration: b - a,
                flops: 0.0,
                bytes: 0.0,
                tier: "roofline",
                layer: None,
                micro_batch: Some(decodes),
                model_flops: true,
            },
            &[],
        );
        timeline.start.push(a);
        timeline.end.push(b);
    }
    let report = json!({
        "kind": "serving",
        "scenario": s.name(),
        "requests": n,
        "requests_completed": done.len(),
        "throughput": {
            "requests_per_s": done.len() as f64 / span,
            "output_tokens_per_s": output_tokens as f64 / span,
        },
        "ttft_s": summary(ttft),
        "tpot_s": summary(tpot),
        "e2e_s": summary(e2e),
        "queueing_s": summary(queueing),
        "slo": {
            "attainment": if done.is_empty() { 0.0 } else { meeting as f64 / n as f64 },
            "goodput_requests_per_s": meeting as f64 / span,
        },
        "kv_cache": {
            "blocks_per_replica": blocks,
            "block_tokens": block_tokens,
            "peak_use": peak_kv,
            "preemptions": preemptions,
        },
        "memory": {
            "weights_bytes_per_gpu": weights.round() as u64,
            "kv_bytes_per_gpu": (blocks as f64 * block_tokens as f64 * kv_per_token).round() as u64,
            "capacity_bytes": g.memory_bytes,
            "fits": fits,
        },
        "cluster": { "gpu": g.name, "replicas": replicas, "tp": tp },
        "model": { "name": model.name, "params": model.params(), "dtype": model.dtype.name() },
        "serving": {
            "scheduler": match scheduler { SchedulerKind::Vllm => "vllm", SchedulerKind::Sarathi => "sarathi", SchedulerKind::Static => "static" },
            "max_batch_size": max_batch_size,
            "max_batch_tokens": max_batch_tokens,
        },
        "fidelity": {
            "compute": "roofline",
            "network": tier.name(),
            "symmetry": "none: every replica and request simulated",
        },
        "assumptions": assumptions,
        "sim": { "events": stats.events, "iterations": fleet.iterations.len() },
    });
    Ok(ServingRun {
        report,
        graph,
        timeline,
    })
}
