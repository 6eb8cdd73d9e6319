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

pub mod local;
pub mod population;
pub mod round;
pub mod update;

use crate::engine::{RngStreams, SimTime, Simulation};
use crate::exec::{Graph, Op, OpKind, Timeline};
use crate::model::Transformer;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::federated::{
    Download, EmbeddingRows, FederatedSection, TrainedBody, TrainedEmbedding,
};
use crate::workload::serving::summary;
use local::LocalWork;
use population::{Population, PopulationSpec, Spread};
use round::{Policy, Server, Work};
use serde_json::{Value, json};
use update::{Body, Rows, Update};

/// A federated run: the report, and the rounds as operations on a server lane for traces.
pub struct FederatedRun {
    pub report: Value,
    pub graph: Graph,
    pub timeline: Timeline,
}

/// Everything a run needs, resolved from the scenario.
struct Setup {
    model: Transformer,
    population: PopulationSpec,
    policy: Policy,
    body: Body,
    local: LocalWork,
    update: Update,
    download: Download,
    dp_noise_multiplier: Option<f64>,
    seed: u64,
    assumptions: Vec<String>,
}

/// Simulates the scenario's rounds.
pub fn simulate(s: &Scenario) -> Result<FederatedRun, ScenarioError> {
    let setup = resolve(s)?;
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
        return Err(s
            .error_at(
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
    let report = report(s, &setup, &server, work, stats.events);
    let (graph, timeline) = trace(&server, work);
    Ok(FederatedRun {
        report,
        graph,
        timeline,
    })
}

fn report(s: &Scenario, setup: &Setup, server: &Server, work: Work, events: u64) -> Value {
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
    let per_device =
        |f: &dyn Fn(&round::DeviceTimes) -> f64| summary(server.reported.iter().map(f).collect());
    let mut report = json!({
        "kind": "federated",
        "scenario": s.name(),
        "model": {
            "name": model.name,
            "params": model.params(),
            "layers": model.layers,
            "hidden": model.hidden,
            "vocab": model.vocab,
            "seq_len": model.seq_len,
            "dtype": model.dtype.name(),
        },
        "population": {
            "devices": setup.population.devices,
            "availability": setup.population.availability,
            "dropout": setup.population.dropout,
            "compute_flops_median": setup.population.compute.median,
            "uplink_bytes_per_s_median": setup.population.uplink.median,
            "downlink_bytes_per_s_median": setup.population.downlink.median,
        },
        "update": {
            "train": match setup.body { Body::Full => "full", Body::Lora(_) => "lora" },
            "lora_rank": match setup.body { Body::Full => Value::Null, Body::Lora(r) => json!(r) },
            "embedding_rows": u.rows,
            "tables": u.tables,
            "body_coordinates": u.body,
            "trainable_coordinates": u.coordinates,
            "trainable_fraction": u.coordinates / model.params() as f64,
            "output_classes": setup.local.classes,
        },
        "local_tokens_per_device": setup.local.tokens(model),
        "local_flops_per_device": work.flops,
        "download_bytes_per_device": work.download_bytes,
        "upload_bytes_per_device": work.upload_bytes,
        "upload_bytes_per_round": reports as f64 * work.upload_bytes / n,
        "upload_bytes_total": reports as f64 * work.upload_bytes,
        "device_memory_bytes": weights + gradients + activations + logits,
        "device_memory_breakdown_bytes": {
            "weights": weights,
            "gradients": gradients,
            "activations": activations,
            "logits": logits,
        },
        "round_time_s": summary(times),
        "rounds": rounds.len(),
        "rounds_succeeded": succeeded,
        "rounds_failed": rounds.len() - succeeded,
        "rounds_per_hour": rounds.len() as f64 / hours,
        "successful_rounds_per_hour": succeeded as f64 / hours,
        "simulated_s": end,
        "selected_per_round": mean(&|r| r.selected),
        "reports_per_round": mean(&|r| r.reports),
        "dropouts": rounds.iter().map(|r| r.dropouts as u64).sum::<u64>(),
        "stragglers_dropped": rounds.iter().map(|r| r.stragglers as u64).sum::<u64>(),
        "device_time_s": {
            "download": per_device(&|d| d.download),
            "compute": per_device(&|d| d.compute),
            "upload": per_device(&|d| d.upload),
            "total": per_device(&|d| d.download + d.compute + d.upload),
        },
        "fidelity": {
            "devices": "every selected device simulated event by event at its own drawn speed and links",
            "compute": "device FLOPs over its achieved FLOP/s (an input, not a kernel model)",
            "network": "each device limited by its own uplink and downlink; no shared bottleneck",
        },
        "assumptions": setup.assumptions,
        "sim": { "events": events },
    });
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
        report["dp"] = json!({
            "noise_multiplier": sigma,
            "noised_coordinates": u.coordinates,
            "noise_to_signal": mean_ratio,
        });
    }
    report
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
            },
            &[],
        );
        start.push(r.start);
        end.push(r.end);
    }
    (graph, Timeline { start, end })
}

fn resolve(s: &Scenario) -> Result<Setup, ScenarioError> {
    let f: FederatedSection = s.file.federated.clone().ok_or_else(|| {
        s.error_at("kind", "a federated scenario needs a [federated] section")
            .with_help(
                "add [federated] with population, cohort, compute, uplink, downlink, \
                 local_steps and batch",
            )
    })?;
    for section in ["cluster", "cost"] {
        if s.span_of(section).is_some() {
            return Err(s
                .error_at(
                    section,
                    format!("[{section}] does not apply to a federated scenario"),
                )
                .with_help("devices are described in [federated]; remove it"));
        }
    }
    let sim = &s.file.sim;
    s.refuse_set(
        &[
            (sim.network.is_some(), "sim.network"),
            (sim.record_links.is_some(), "sim.record_links"),
        ],
        |key| format!("`{key}` does not apply to a federated scenario"),
        "each device is limited by its own uplink and downlink; remove it",
    )?;
    let mut assumptions = Vec::new();
    let model = resolve_model(s, &mut assumptions)?;
    let missing = |key: &str, example: &str| {
        s.error_at("federated", format!("missing key `{key}` in [federated]"))
            .with_help(format!("add {key} = {example}"))
    };
    let at_least_one = |v: Option<u32>, key: &str, example: &str| -> Result<u32, ScenarioError> {
        match v {
            None => Err(missing(key, example)),
            Some(0) => Err(s.error_at(
                &format!("federated.{key}"),
                format!("`federated.{key}` must be at least 1"),
            )),
            Some(v) => Ok(v),
        }
    };
    let devices = at_least_one(f.population, "population", "100000")?;
    let cohort = at_least_one(f.cohort, "cohort", "1000")?;
    if cohort > devices {
        return Err(s
            .error_at(
                "federated.cohort",
                format!("a cohort of {cohort} is larger than the population of {devices}"),
            )
            .with_help(format!("choose a cohort of at most {devices}")));
    }
    let local_steps = at_least_one(f.local_steps, "local_steps", "10")?;
    let batch = at_least_one(f.batch, "batch", "16")?;
    let probability =
        |v: Option<f64>, key: &str, open_at_one: bool| -> Result<Option<f64>, ScenarioError> {
            match v {
                Some(p) if !(0.0..=1.0).contains(&p) || (open_at_one && p == 1.0) || p.is_nan() => {
                    let range = if open_at_one {
                        "0 to below 1"
                    } else {
                        "above 0 to 1"
                    };
                    Err(s.error_at(
                        &format!("federated.{key}"),
                        format!("`federated.{key}` is a probability, {range}; {p} is not"),
                    ))
                }
                other => Ok(other),
            }
        };
    let availability = match probability(f.availability, "availability", false)? {
        Some(0.0) => {
            return Err(s
                .error_at(
                    "federated.availability",
                    "with availability 0 no device is ever online",
                )
                .with_help("give the fraction of devices online when a round starts, e.g. 0.1"));
        }
        Some(a) => a,
        None => {
            assumptions.push("every device online when a round starts (availability 1)".into());
            1.0
        }
    };
    let dropout = probability(f.dropout, "dropout", true)?.unwrap_or_else(|| {
        assumptions.push("no selected device drops out (dropout 0)".into());
        0.0
    });
    let spread = |median: Option<f64>,
                  sigma: Option<f64>,
                  key: &str,
                  example: &str,
                  assumptions: &mut Vec<String>|
     -> Result<Spread, ScenarioError> {
        let median = median.ok_or_else(|| missing(key, example))?;
        let sigma = match sigma {
            Some(v) if !v.is_finite() || v < 0.0 => {
                return Err(s
                    .error_at(
                        &format!("federated.{key}_sigma"),
                        format!("`federated.{key}_sigma` must be 0 or more, not {v}"),
                    )
                    .with_help("the standard deviation of the logarithm, e.g. 0.5"));
            }
            Some(v) => v,
            None => {
                assumptions.push(format!("every device has the same {key} ({key}_sigma 0)"));
                0.0
            }
        };
        Ok(Spread { median, sigma })
    };
    let compute = spread(
        f.compute.map(|t| t.0),
        f.compute_sigma,
        "compute",
        "\"20 GFLOP/s\"",
        &mut assumptions,
    )?;
    let uplink = spread(
        f.uplink.map(|b| b.0),
        f.uplink_sigma,
        "uplink",
        "\"5 Mb/s\"",
        &mut assumptions,
    )?;
    let downlink = spread(
        f.downlink.map(|b| b.0),
        f.downlink_sigma,
        "downlink",
        "\"20 Mb/s\"",
        &mut assumptions,
    )?;
    let quorum = match f.quorum {
        Some(q) if q == 0 || q > cohort => {
            return Err(s
                .error_at(
                    "federated.quorum",
                    format!("a quorum of {q} reports cannot be met by a cohort of {cohort}"),
                )
                .with_help(format!("choose 1 to {cohort}")));
        }
        Some(q) => Some(q),
        None => {
            assumptions.push(
                "no quorum: a round waits for every selected device to report or drop out".into(),
            );
            None
        }
    };
    let most = quorum.unwrap_or(cohort);
    let min_reports = match f.min_reports {
        Some(m) if m == 0 || m > most => {
            return Err(s
                .error_at(
                    "federated.min_reports",
                    format!("min_reports {m} is outside 1 to {most} (the quorum, else the cohort)"),
                )
                .with_help(format!("choose 1 to {most}")));
        }
        Some(m) => m,
        None => {
            assumptions.push("a round succeeds with at least one report (min_reports 1)".into());
            1
        }
    };
    let deadline = f.deadline.map(|d| d.0);
    if deadline == Some(SimTime::ZERO) {
        return Err(s.error_at(
            "federated.deadline",
            "a deadline of 0 closes every round at once",
        ));
    }
    if deadline.is_none() {
        assumptions.push("no round deadline".into());
    }
    let rounds = match f.rounds {
        Some(0) => {
            return Err(s.error_at("federated.rounds", "`federated.rounds` must be at least 1"));
        }
        Some(r) => r,
        None => {
            assumptions.push("20 rounds simulated".into());
            20
        }
    };
    let server_time = f.server_time.map(|d| d.0).unwrap_or_else(|| {
        assumptions.push("the next round starts as soon as a round closes (server_time 0)".into());
        SimTime::ZERO
    });
    let body = match (f.train, f.lora_rank) {
        (Some(TrainedBody::Lora), Some(r)) if r == 0 || r > model.hidden => {
            return Err(s.error_at(
                "federated.lora_rank",
                format!(
                    "a LoRA rank must be 1 to the hidden size {}, not {r}",
                    model.hidden
                ),
            ));
        }
        (Some(TrainedBody::Lora), Some(r)) => Body::Lora(r),
        (Some(TrainedBody::Lora), None) => {
            return Err(missing("lora_rank", "8")
                .with_help("train = \"lora\" needs lora_rank, e.g. lora_rank = 8"));
        }
        (_, Some(_)) => {
            return Err(s
                .error_at(
                    "federated.lora_rank",
                    "`lora_rank` applies only with train = \"lora\"",
                )
                .with_help("set train = \"lora\" or remove lora_rank"));
        }
        (Some(TrainedBody::Full), None) => Body::Full,
        (None, None) => {
            assumptions
                .push("every weight of the transformer layers trains (train = \"full\")".into());
            Body::Full
        }
    };
    let embedding = f.embedding.unwrap_or_else(|| {
        assumptions.push("the whole embedding table trains (embedding = \"full\")".into());
        TrainedEmbedding::Full
    });
    let rows = match (embedding, &f.embedding_rows) {
        (TrainedEmbedding::Partial, None) => {
            return Err(missing("embedding_rows", "10000").with_help(
                "embedding = \"partial\" needs embedding_rows: a count of rows, or \"seen\"",
            ));
        }
        (TrainedEmbedding::Partial, Some(EmbeddingRows::Count(n))) => {
            if *n == 0 || *n > model.vocab {
                return Err(s.error_at(
                    "federated.embedding_rows",
                    format!(
                        "embedding_rows must be 1 to the vocabulary ({}), not {n}",
                        model.vocab
                    ),
                ));
            }
            Rows::Count(*n)
        }
        (TrainedEmbedding::Partial, Some(EmbeddingRows::Named(name))) if name == "seen" => {
            let zipf_exponent = match f.zipf_exponent {
                Some(z) if !z.is_finite() || z < 0.0 => {
                    return Err(s.error_at(
                        "federated.zipf_exponent",
                        format!("a Zipf exponent must be 0 or more, not {z}"),
                    ));
                }
                Some(z) => z,
                None => {
                    assumptions.push(
                        "token frequencies follow Zipf's law with exponent 1 (zipf_exponent)"
                            .into(),
                    );
                    1.0
                }
            };
            Rows::Seen { zipf_exponent }
        }
        (TrainedEmbedding::Partial, Some(EmbeddingRows::Named(name))) => {
            return Err(s
                .error_at(
                    "federated.embedding_rows",
                    format!("unknown embedding_rows \"{name}\""),
                )
                .with_help("give a count of rows (embedding_rows = 10000) or \"seen\""));
        }
        (_, Some(_)) => {
            return Err(s
                .error_at(
                    "federated.embedding_rows",
                    "`embedding_rows` applies only with embedding = \"partial\"",
                )
                .with_help("set embedding = \"partial\" or remove embedding_rows"));
        }
        (TrainedEmbedding::Full, None) => Rows::All,
        (TrainedEmbedding::Frozen, None) => Rows::None,
    };
    if f.zipf_exponent.is_some() && !matches!(rows, Rows::Seen { .. }) {
        return Err(s
            .error_at(
                "federated.zipf_exponent",
                "`zipf_exponent` applies only with embedding_rows = \"seen\"",
            )
            .with_help("remove it"));
    }
    let classes = match f.nce_samples {
        Some(k) if k == 0 || k >= model.vocab => {
            return Err(s.error_at(
                "federated.nce_samples",
                format!(
                    "nce_samples must be 1 to below the vocabulary ({}), not {k}",
                    model.vocab
                ),
            ));
        }
        Some(k) => k as f64 + 1.0,
        None => {
            assumptions
                .push("the output layer scores the whole vocabulary (no nce_samples)".into());
            model.vocab as f64
        }
    };
    let bits = match f.update_bits {
        Some(b) if b == 0 || b > 32 => {
            return Err(s
                .error_at(
                    "federated.update_bits",
                    format!("update_bits must be 1 to 32, not {b}"),
                )
                .with_help("32 for fp32 updates, 16 for fp16, 8 for 8-bit quantisation"));
        }
        Some(b) => b,
        None => {
            assumptions.push("updates uploaded as fp32 (update_bits 32)".into());
            32
        }
    };
    let download = f.download.unwrap_or_else(|| {
        assumptions
            .push("each selected device downloads the whole model (download = \"model\")".into());
        Download::Model
    });
    let dp_noise_multiplier = match f.dp_noise_multiplier {
        Some(z) if !z.is_finite() || z <= 0.0 => {
            return Err(s.error_at(
                "federated.dp_noise_multiplier",
                format!("a noise multiplier must be positive, not {z}"),
            ));
        }
        other => other,
    };
    let local = LocalWork {
        batch,
        steps: local_steps,
        classes,
    };
    let update = Update::new(&model, body, rows, local.tokens(&model), bits);
    let seed = s.file.sim.seed.unwrap_or_else(|| {
        assumptions.push("seed 1".into());
        1
    });
    Ok(Setup {
        model,
        population: PopulationSpec {
            devices,
            compute,
            uplink,
            downlink,
            availability,
            dropout,
        },
        policy: Policy {
            rounds,
            cohort,
            quorum,
            min_reports,
            deadline,
            server_time,
        },
        body,
        local,
        update,
        download,
        dp_noise_multiplier,
        seed,
        assumptions,
    })
}

/// `[model]`, refusing what the device model does not price: mixture-of-experts layers, latent
/// attention and skipped attention sublayers.
fn resolve_model(
    s: &Scenario,
    assumptions: &mut Vec<String>,
) -> Result<Transformer, ScenarioError> {
    let model = crate::scenario::lower::model::resolve_scenario(s, assumptions)?;
    if model.is_moe() {
        return Err(s
            .error_at(
                "model",
                "federated training prices dense models only, not mixture-of-experts",
            )
            .with_help("choose a dense model"));
    }
    if model.mla.is_some() {
        return Err(s
            .error_at(
                "model",
                "federated training does not price multi-head latent attention",
            )
            .with_help("choose a model with multi-head or grouped-query attention"));
    }
    if model.skip_attention_layers > 0 {
        return Err(s
            .error_at(
                "model.skip_attention_layers",
                "federated training keeps every attention sublayer",
            )
            .with_help("remove skip_attention_layers"));
    }
    if s.file.model.elementwise.is_some() {
        return Err(s
            .error_at(
                "model.elementwise",
                "federated training prices its layers on the device model, not kernel by kernel",
            )
            .with_help("remove elementwise from [model]"));
    }
    if s.file.model.dtype.is_none() {
        assumptions.push(format!(
            "weights, activations and downloads in {} ([model] dtype)",
            model.dtype.name()
        ));
    }
    Ok(model)
}
