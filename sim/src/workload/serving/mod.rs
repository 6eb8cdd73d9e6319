//! LLM serving: a fleet of replicas behind a router, each an inference engine that batches at
//! every iteration (vLLM, Sarathi-Serve) or per batch (static), with a paged KV cache.
//!
//! The fleet (`fleet`) is a reactive process: an arrival from `traffic` is routed to a replica,
//! whose scheduler (`replica`) plans an iteration that `kind` and `cost` price; it runs on its own
//! engine or beside a cluster's other jobs (`cluster`). Each replica is `tp` consecutive GPUs of
//! one node (replica j on GPUs j x tp to (j + 1) x tp - 1); one of `pp` stages runs `pp` engines.
//! The network prices tensor-parallel all-reduces, stage hand-offs and, disaggregated
//! (`[serving.disaggregation]`), each request's KV cache from its prefill to its decode replica;
//! swapped KV caches cross PCIe within the iteration. A mixed fleet (`[[serving.group]]`) prices
//! each kind apart; a placed fleet (`placement`, `pipelines`) spreads layers over unlike servers
//! by max-flow. Units: seconds, bytes, tokens.
//!
//! Not modelled yet, refused with a clear message: expert parallelism, disaggregated pools of
//! pipeline-parallel or mixed replicas. In full: docs/SERVING.md#what-is-modelled.

pub(crate) mod cluster;
pub mod config;
pub(crate) mod cost;
pub(crate) mod energy;
pub mod engine;
pub(crate) mod fleet;
pub(crate) mod kind;
pub(crate) mod offload;
pub(crate) mod over_time;
pub mod overhead;
pub(crate) mod pipelines;
pub(crate) mod placement;
pub mod policy;
pub(crate) mod replica;
pub(crate) mod request;
mod trace;

use crate::engine::{SimTime, Simulation};
use crate::exec::{Graph, Timeline};
use crate::report::percentiles::Percentiles;
use crate::report::serving::{
    Cluster as ClusterReport, Disaggregation, Engine as EngineReport, Fidelity as FidelityReport,
    KvCache, Latency, Memory as MemoryReport, Model as ModelReport, ServingReport,
    Slo as SloReport, Throughput,
};
use crate::report::typed::{Sim, TypedReport};
use crate::stats::histogram;
use config::{FleetConfig, Replicas, ServingConfig, Slo};
use fleet::{Fleet, new_fleet};
use kind::ReplicaKind;
use replica::Limits;
use request::Request;
use serde_json::{Value, json};

/// Mean and percentiles of a sample, in seconds.
pub(crate) fn summary(v: Vec<f64>) -> Value {
    json!(crate::report::percentiles::Percentiles::of(v))
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
    pub fn report(&self, slo: &Slo) -> (Vec<usize>, Latency) {
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
        let last_arrival = self.requests.iter().map(|r| r.arrival).max();
        let arrivals = last_arrival.map_or(0.0, |l| secs(l - start));
        let output_tokens: u64 = done.iter().map(|&r| self.outputs[r] as u64).sum();
        let meets = |r: usize| {
            slo.ttft_s.is_none_or(|d| ttft(r) <= d)
                && slo.tpot_s.is_none_or(|d| tpot(r).unwrap_or(0.0) <= d)
                && slo.e2e_s.is_none_or(|d| e2e(r) <= d)
        };
        let meeting = done.iter().filter(|&&r| meets(r)).count();
        let ttfts: Vec<f64> = done.iter().map(|&r| ttft(r)).collect();
        let tpots: Vec<f64> = done.iter().filter_map(|&r| tpot(r)).collect();
        let e2es: Vec<f64> = done.iter().map(|&r| e2e(r)).collect();
        let histograms = histogram::report(&[
            ("ttft_s", ttfts.as_slice()),
            ("tpot_s", tpots.as_slice()),
            ("e2e_s", e2es.as_slice()),
        ]);
        let report = Latency {
            requests: n as u64,
            requests_completed: done.len() as u64,
            throughput: Throughput {
                requests_per_s: done.len() as f64 / span,
                output_tokens_per_s: output_tokens as f64 / span,
                span_s: span,
                arrival_span_s: arrivals,
            },
            ttft_s: Percentiles::of(ttfts),
            tpot_s: Percentiles::of(tpots),
            e2e_s: Percentiles::of(e2es),
            histograms,
            queueing_s: Percentiles::of(queueing),
            slo: SloReport {
                attainment: if done.is_empty() {
                    0.0
                } else {
                    meeting as f64 / n as f64
                },
                goodput_requests_per_s: meeting as f64 / span,
            },
        };
        (done, report)
    }
}

/// Adds the keys of `extra` (an object) to `report`.
pub(super) fn merge(report: &mut Value, extra: Value) {
    if let (Some(r), Value::Object(e)) = (report.as_object_mut(), extra) {
        r.extend(e);
    }
}

/// What only the fleet knows of its report: its KV cache, memory, GPUs and how it was simulated.
pub(super) struct FleetSections {
    pub kv_cache: KvCache,
    pub memory: MemoryReport,
    pub cluster: ClusterReport,
    pub fidelity: FidelityReport,
}

/// A serving report of `c` (scenario, model, engine and assumptions), the fleet's `latency`
/// figures and sections, and the engine's counts; the sections only some fleets have are None,
/// for the caller to add.
pub(super) fn serving_report(
    c: &ServingConfig,
    latency: Latency,
    fleet: FleetSections,
    events: u64,
    iterations: usize,
) -> ServingReport {
    ServingReport {
        kind: "serving".into(),
        scenario: c.scenario.clone(),
        requests: latency.requests,
        requests_completed: latency.requests_completed,
        throughput: latency.throughput,
        ttft_s: latency.ttft_s,
        tpot_s: latency.tpot_s,
        e2e_s: latency.e2e_s,
        queueing_s: latency.queueing_s,
        histograms: latency.histograms,
        slo: latency.slo,
        kv_cache: fleet.kv_cache,
        memory: fleet.memory,
        cluster: fleet.cluster,
        disaggregation: None,
        model: ModelReport {
            name: c.model.name.clone(),
            params: c.model.params(),
            dtype: c.model.dtype.name().into(),
        },
        serving: EngineReport {
            engine: c.memory.engine.name().into(),
            scheduler: c.scheduler.name().into(),
            max_batch_size: c.max_batch_size,
            max_batch_tokens: c.max_batch_tokens,
        },
        fidelity: fleet.fidelity,
        assumptions: c.assumptions.clone(),
        sim: Sim {
            iterations: Some(iterations as u64),
            ..Sim::events(events)
        },
        over_time: None,
        energy: None,
        offload: None,
        placement: None,
        uncertainty: None,
        cost: None,
    }
}

/// Work a run simulates at most, over every replica: an iteration counts one, and one more for
/// every `REQUESTS_PER_WORK` requests in its batch (planning an iteration costs about that), so
/// a run stays within seconds.
pub const MAX_WORK: u64 = 1 << 22;
const REQUESTS_PER_WORK: u64 = 128;

/// The refusal of a run that reached [`MAX_WORK`] before serving every request.
pub(crate) fn too_many_iterations() -> crate::key_error::KeyError {
    crate::key_error::KeyError::new(
        "workload.requests",
        format!(
            "the fleet ran as many iterations as a run simulates ({MAX_WORK}, a batch of \
             {REQUESTS_PER_WORK} requests counting as one more) before serving every request"
        ),
    )
    .with_help("simulate fewer requests: throughput and latency percentiles settle long before")
}

/// What a serving run produced.
pub struct ServingRun {
    pub report: Value,
    pub graph: Graph,
    pub timeline: Timeline,
}

/// Simulates the configuration's fleet serving its requests; refused past
/// [`MAX_WORK`].
pub fn simulate(c: &ServingConfig) -> Result<ServingRun, crate::key_error::KeyError> {
    match &c.fleet {
        FleetConfig::Replicas(r) => replicas(c, r),
        FleetConfig::Placed(p) => pipelines::run(c, p),
    }
}

/// The fleet of `r` at time 0, and whether its weights fit (a fleet that does not fit serves
/// nothing).
pub(crate) fn fleet_of(c: &ServingConfig, r: &Replicas) -> (Fleet, bool) {
    let limits = Limits {
        scheduler: c.scheduler,
        max_batch_size: c.max_batch_size,
        max_batch_tokens: c.max_batch_tokens,
        block_tokens: c.memory.block_tokens,
        swap: r.swap,
    };
    let fits = r.kinds.iter().all(ReplicaKind::fits);
    let fleet = new_fleet(
        c.requests.clone(),
        r.kinds.clone(),
        limits,
        r.router,
        c.seed,
        r.pools.map(|(p, _)| p as usize),
    );
    (fleet, fits)
}

/// Whole replicas behind a router.
fn replicas(c: &ServingConfig, r: &Replicas) -> Result<ServingRun, crate::key_error::KeyError> {
    let (memory, tier, swap, pools, nodes) = (c.memory, c.tier, r.swap, r.pools, r.nodes);
    let block_tokens = memory.block_tokens;
    let replicas: u32 = r.kinds.iter().map(|k| k.replicas).sum();
    let profile_name = &r.profile;
    let (fleet, fits) = fleet_of(c, r);
    let mut sim = Simulation::new(fleet);
    let stats = if fits {
        sim.run_to_end()
    } else {
        sim.run_until(SimTime::ZERO)
    };
    let fleet = sim.process;
    if fleet.work >= MAX_WORK {
        return Err(too_many_iterations());
    }

    let outputs = fleet.outputs();
    let lives = fleet.lives(&outputs);
    let (done, latency) = lives.report(&c.slo);
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
    let disaggregation = pools.map(|(p, q)| Disaggregation {
        prefill_replicas: p,
        decode_replicas: q,
        kv_transfers: fleet.transfers.len() as u64,
        kv_transfer_bytes: fleet.transfers.iter().map(|t| t.5).sum::<f64>(),
        kv_transfer_s: Percentiles::of(transfer_s),
    });
    let sections = FleetSections {
        kv_cache: KvCache {
            blocks_per_replica: single.map(|k| k.blocks),
            block_tokens,
            peak_use: peak_kv,
            preemptions,
            preemption: if swap { "swap" } else { "recompute" }.into(),
            swapped_bytes,
        },
        memory: MemoryReport {
            weights_bytes_per_gpu: single.map(|k| k.weights_per_gpu.round() as u64),
            weights_offload_bytes_per_gpu: memory.offload_bytes,
            kv_bytes_per_gpu: single.map(|k| kv_bytes(k, block_tokens).round() as u64),
            capacity_bytes: single.map(|k| k.gpu.memory_bytes),
            fits,
        },
        cluster: ClusterReport {
            gpu: single.map_or("mixed", |k| &*k.gpu.name).into(),
            gpus: (0..fleet.kind_of.len())
                .map(|i| kind(i).tp * kind(i).pp)
                .sum::<u32>(),
            nodes,
            replicas,
            tp: single.map(|k| k.tp),
            pp: single.map(|k| k.pp),
            groups,
            profile: profile_name.clone(),
        },
        fidelity: FidelityReport {
            compute: if profile_name.is_some() {
                "profile where it has a measurement, roofline for the rest"
            } else {
                "roofline"
            }
            .into(),
            network: tier.name().into(),
            symmetry: "none: every replica and request simulated".into(),
        },
    };
    let report = ServingReport {
        disaggregation,
        over_time: Some(over_time::report(
            &fleet.samples,
            fleet.replicas.len(),
            stats.end,
        )),
        energy: Some(energy_report(&fleet, &done, &outputs, r)),
        offload: (memory.offload_bytes > 0.0).then(|| offload::report(&fleet.kinds, &memory)),
        ..serving_report(c, latency, sections, stats.events, fleet.iterations.len())
    };
    Ok(ServingRun {
        report: report.to_value(),
        graph,
        timeline,
    })
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
fn energy_report(fleet: &Fleet, done: &[usize], outputs: &[u32], r: &Replicas) -> Value {
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
            gpu: k.gpu.clone(),
            gpus: k.replicas * k.tp * k.pp,
            busy_gpu_seconds,
            power_limit_watts: r.power_limit_watts,
        })
        .collect();
    let first_arrival = fleet.requests.iter().map(|r| r.arrival).min();
    let last_done = fleet.finished.iter().flatten().max();
    let span = match (first_arrival, last_done) {
        (Some(a), Some(&b)) => (b - a).as_secs_f64(),
        _ => 0.0,
    };
    let output_tokens: u64 = done.iter().map(|&r| outputs[r] as u64).sum();
    energy::report(&uses, span, output_tokens, r.pue)
}
