//! Federated training over a population of devices (`kind = "federated"`, `[federated]`), as
//! cross-device federated learning runs it (Bonawitz et al. 2019; Xu et al. 2023): each round
//! the server selects a cohort among the devices online, each selected device downloads the
//! model, trains on its own tokens and uploads its update, and the server closes the round on a
//! quorum of reports, when every device has reported or dropped out, or at a deadline.
//!
//! `population.rs` draws the devices (achieved FLOP/s, uplink and downlink in bytes/s,
//! availability, drop-out), `update.rs` sizes what trains and what is uploaded (full weights,
//! LoRA adapters, all, some or no embedding rows; bits per coordinate), `local.rs` prices a
//! device's local training (FLOPs and memory), `round.rs` runs the rounds as a `Process`. This
//! file checks the scenario (every default recorded in `assumptions`, every refusal located)
//! and writes the report: round time percentiles (s), rounds per hour, bytes uploaded per device
//! and per round, stragglers dropped, and, with `dp_noise_multiplier`, the relative size of the
//! central DP noise on the aggregate. Deliberately ignored: the server's own bandwidth and
//! aggregation compute, secure aggregation's key exchange, and the accuracy an update buys (a
//! performance model: how much a smaller update costs in convergence is the paper's question,
//! not ours).

pub(crate) mod local;
pub(crate) mod population;
pub(crate) mod round;
pub(crate) mod update;

use crate::engine::{RngStreams, SimTime, Simulation};
use crate::exec::{Graph, Op, OpKind, Timeline};
use crate::key_error::KeyError;
use crate::model::Transformer;
use crate::report::federated::{
    DeviceMemory, DeviceTime, Dp, FederatedReport, Fidelity, Model, Population as PopulationShape,
    Update as UpdateShape,
};
use crate::report::percentiles::Percentiles;
use crate::report::typed::{Sim, TypedReport};
use local::LocalWork;
use population::{Population, PopulationSpec};
use round::{Policy, Server, Work};
use serde::Deserialize;
use serde_json::Value;
use update::{Body, Update};

/// A federated run: the report, and the rounds as operations on a server lane for traces.
pub struct FederatedRun {
    pub report: Value,
    pub graph: Graph,
    pub timeline: Timeline,
}

/// What a device downloads each round: the whole model, or only what it trains.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Download {
    Model,
    Trainable,
}

/// A federated run, fully specified (`scenario/lower/federated.rs` builds it).
#[derive(Clone, Debug)]
pub struct FederatedConfig {
    /// The scenario's name, for the report.
    pub scenario: String,
    pub model: Transformer,
    pub population: PopulationSpec,
    pub policy: Policy,
    pub body: Body,
    pub local: LocalWork,
    pub update: Update,
    pub download: Download,
    pub dp_noise_multiplier: Option<f64>,
    pub seed: u64,
    pub assumptions: Vec<String>,
}

/// Simulates the rounds; a round that cannot close within the simulated time is refused at
/// `federated`.
pub fn simulate(setup: &FederatedConfig) -> Result<FederatedRun, KeyError> {
    let local_flops = setup.local.flops(&setup.model, setup.body, &setup.update);
    let model_bytes = setup.model.params() as f64 * setup.model.dtype.bytes();
    let download_bytes = match setup.download {
        Download::Model => model_bytes,
        Download::Trainable => setup.update.coordinates * setup.model.dtype.bytes(),
    };
    let work = Work {
        download_bytes,
        flops: local_flops,
        upload_bytes: setup.update.bytes,
    };
    let streams = RngStreams::new(setup.seed);
    let population = Population::draw(&setup.population, &streams);
    let mut sim = Simulation::new(Server::new(population, work, setup.policy));
    let stats = sim.run_to_end();
    let server = sim.process;
    let closed = server.rounds.len() as u32 - u32::from(server.unfinished().is_some());
    if closed < setup.policy.rounds {
        let (round, needed) = server.unfinished().unwrap_or((closed, 0.0));
        // A round that never started (the server's pause after the last close ran past the end)
        // would have started when that round closed, plus the pause.
        let start = match server.rounds.get(round as usize) {
            Some(r) => r.start.as_secs_f64(),
            None => {
                let closed_at = server.rounds.last().map_or(0.0, |r| r.end.as_secs_f64());
                closed_at + setup.policy.server_time.as_secs_f64()
            }
        };
        let days = |secs: f64| secs / 86_400.0;
        let needs = if needed.is_infinite() {
            ", where one of its devices is so slow that its speed rounds to zero".to_string()
        } else if needed > 0.0 {
            format!(", where one of its devices needs {:.3e} days", days(needed))
        } else {
            String::new()
        };
        return Err(KeyError::new(
            "federated",
            format!(
                "round {} (starting at day {:.1}) cannot close within the {} simulated time \
                     spans{needs}",
                round + 1,
                days(start),
                SimTime::SPAN,
            ),
        )
        .with_help(
            "set a round deadline or a quorum, narrow the devices' spread (the *_sigma keys), \
                 or simulate fewer rounds",
        ));
    }
    let report = report(setup, &server, work, stats.events);
    let (graph, timeline) = trace(&server, work);
    Ok(FederatedRun {
        report,
        graph,
        timeline,
    })
}

fn report(setup: &FederatedConfig, server: &Server, work: Work, events: u64) -> Value {
    let rounds = &server.rounds;
    let secs = |t: SimTime| t.as_secs_f64();
    let times: Vec<f64> = rounds.iter().map(|r| secs(r.end - r.start)).collect();
    let end = rounds.last().map_or(0.0, |r| secs(r.end));
    let hours = (end / 3600.0).max(f64::MIN_POSITIVE);
    let succeeded = rounds.iter().filter(|r| r.succeeded).count();
    let n = rounds.len().max(1) as f64;
    let reports: u64 = rounds.iter().map(|r| r.reports as u64).sum();
    let mean = |f: &dyn Fn(&round::RoundRecord) -> u32| {
        rounds.iter().map(|r| f(r) as f64).sum::<f64>() / n
    };
    let model = &setup.model;
    let u = &setup.update;
    let (weights, gradients, activations, logits) = setup.local.memory(model, setup.body, u);
    let per_device = |f: &dyn Fn(&round::DeviceTimes) -> f64| {
        Percentiles::of(server.reported.iter().map(f).collect())
    };
    let mut report = FederatedReport {
        kind: "federated".into(),
        scenario: setup.scenario.clone(),
        model: Model {
            name: model.name.clone(),
            params: model.params(),
            layers: model.layers,
            hidden: model.hidden,
            vocab: model.vocab,
            seq_len: model.seq_len,
            dtype: model.dtype.name().into(),
        },
        population: PopulationShape {
            devices: setup.population.devices,
            availability: setup.population.availability,
            dropout: setup.population.dropout,
            compute_flops_median: setup.population.compute.median,
            uplink_bytes_per_s_median: setup.population.uplink.median,
            downlink_bytes_per_s_median: setup.population.downlink.median,
        },
        update: UpdateShape {
            train: match setup.body {
                Body::Full => "full",
                Body::Lora(_) => "lora",
            }
            .into(),
            lora_rank: match setup.body {
                Body::Full => None,
                Body::Lora(r) => Some(r),
            },
            embedding_rows: u.rows,
            tables: u.tables,
            body_coordinates: u.body,
            trainable_coordinates: u.coordinates,
            trainable_fraction: u.coordinates / model.params() as f64,
            output_classes: setup.local.classes,
        },
        local_tokens_per_device: setup.local.tokens(model),
        local_flops_per_device: work.flops,
        download_bytes_per_device: work.download_bytes,
        upload_bytes_per_device: work.upload_bytes,
        upload_bytes_per_round: reports as f64 * work.upload_bytes / n,
        upload_bytes_total: reports as f64 * work.upload_bytes,
        device_memory_bytes: weights + gradients + activations + logits,
        device_memory_breakdown_bytes: DeviceMemory {
            weights,
            gradients,
            activations,
            logits,
        },
        round_time_s: Percentiles::of(times),
        rounds: rounds.len() as u64,
        rounds_succeeded: succeeded as u64,
        rounds_failed: (rounds.len() - succeeded) as u64,
        rounds_per_hour: rounds.len() as f64 / hours,
        successful_rounds_per_hour: succeeded as f64 / hours,
        simulated_s: end,
        selected_per_round: mean(&|r| r.selected),
        reports_per_round: mean(&|r| r.reports),
        dropouts: rounds.iter().map(|r| r.dropouts as u64).sum::<u64>(),
        stragglers_dropped: rounds.iter().map(|r| r.stragglers as u64).sum::<u64>(),
        device_time_s: DeviceTime {
            download: per_device(&|d| d.download),
            compute: per_device(&|d| d.compute),
            upload: per_device(&|d| d.upload),
            total: per_device(&|d| d.download + d.compute + d.upload),
        },
        fidelity: Fidelity {
            devices: "every selected device simulated event by event at its own drawn speed and \
                      links"
                .into(),
            compute: "device FLOPs over its achieved FLOP/s (an input, not a kernel model)".into(),
            network: "each device limited by its own uplink and downlink; no shared bottleneck"
                .into(),
        },
        assumptions: setup.assumptions.clone(),
        sim: Sim::events(events),
        dp: None,
        cost: None,
    };
    if let Some(sigma) = setup.dp_noise_multiplier {
        // Central DP on the average of `k` clipped updates: noise of norm sigma * C * sqrt(d) / k
        // against a mean update of norm at most C.
        let ratios: Vec<f64> = rounds
            .iter()
            .filter(|r| r.succeeded && r.reports > 0)
            .map(|r| sigma * u.coordinates.sqrt() / r.reports as f64)
            .collect();
        let mean_ratio =
            (!ratios.is_empty()).then(|| ratios.iter().sum::<f64>() / ratios.len() as f64);
        report.dp = Some(Dp {
            noise_multiplier: sigma,
            noised_coordinates: u.coordinates,
            noise_to_signal: mean_ratio,
        });
    }
    report.to_value()
}

/// One operation per round on a "server" lane, for traces and the timeline.
fn trace(server: &Server, work: Work) -> (Graph, Timeline) {
    let mut graph = Graph::new();
    let lane = graph.add_lane("rounds", "server");
    let mut start = Vec::new();
    let mut end = Vec::new();
    for (i, r) in server.rounds.iter().enumerate() {
        graph.add(
            Op {
                name: format!("round {i}").into(),
                lane,
                kind: OpKind::Communication,
                duration: r.end - r.start,
                flops: work.flops * r.reports as f64,
                bytes: work.upload_bytes * r.reports as f64,
                tier: "federated",
                layer: None,
                micro_batch: None,
                model_flops: true,
                chain: None,
            },
            &[],
        );
        start.push(r.start);
        end.push(r.end);
    }
    (graph, Timeline { start, end })
}
