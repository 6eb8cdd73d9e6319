//! `kind = "federated"` lowered: `[federated]` and `[model]` checked at their keys into a
//! `workload::federated::FederatedConfig`, each default applied and recorded.

use crate::engine::SimTime;
use crate::model::Transformer;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::federated::{EmbeddingRows, FederatedSection, TrainedBody, TrainedEmbedding};
use crate::workload::federated::local::LocalWork;
use crate::workload::federated::population::{PopulationSpec, Spread};
use crate::workload::federated::round::Policy;
use crate::workload::federated::update::{Body, Rows, Update};
use crate::workload::federated::{Download, FederatedConfig};

/// The scenario's federated run, every key checked.
pub fn lower(s: &Scenario) -> Result<FederatedConfig, ScenarioError> {
    let f = section(s)?;
    let mut assumptions = Vec::new();
    let model = resolve_model(s, &mut assumptions)?;
    let devices = at_least_one(s, f.population, "population", "100000")?;
    if devices as u64 > MAX_POPULATION {
        return Err(s
            .error_at(
                "federated.population",
                format!("a population of {devices} devices; a run draws each one, at most {MAX_POPULATION}"),
            )
            .with_help("a sample of the population with the same spreads behaves alike"));
    }
    let cohort = at_least_one(s, f.cohort, "cohort", "1000")?;
    if cohort > devices {
        return Err(s
            .error_at(
                "federated.cohort",
                format!("a cohort of {cohort} is larger than the population of {devices}"),
            )
            .with_help(format!("choose a cohort of at most {devices}")));
    }
    let local_steps = at_least_one(s, f.local_steps, "local_steps", "10")?;
    let batch = at_least_one(s, f.batch, "batch", "16")?;
    let population = population(s, &f, devices, &mut assumptions)?;
    let policy = policy(s, &f, cohort, &mut assumptions)?;
    let (body, rows) = trained(s, &f, &model, &mut assumptions)?;
    let classes = classes(s, &f, &model, &mut assumptions)?;
    let bits = update_bits(s, &f, &mut assumptions)?;
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
    Ok(FederatedConfig {
        scenario: s.name(),
        model,
        population,
        policy,
        body,
        local,
        update,
        download,
        dp_noise_multiplier,
        seed,
        assumptions,
    })
}

/// `[federated]`, refusing the sections and `[sim]` keys that describe a datacentre network.
fn section(s: &Scenario) -> Result<FederatedSection, ScenarioError> {
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
    Ok(f)
}

/// A required count in `[federated]`, at least 1.
fn at_least_one(
    s: &Scenario,
    v: Option<u32>,
    key: &str,
    example: &str,
) -> Result<u32, ScenarioError> {
    match v {
        None => Err(missing(s, key, example)),
        Some(0) => Err(s.error_at(
            &format!("federated.{key}"),
            format!("`federated.{key}` must be at least 1"),
        )),
        Some(v) => Ok(v),
    }
}

/// An optional probability in `[federated]`: 0 to 1, or below 1 when `open_at_one`.
fn probability(
    s: &Scenario,
    v: Option<f64>,
    key: &str,
    open_at_one: bool,
) -> Result<Option<f64>, ScenarioError> {
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
}

/// A required per-device median and its optional log-normal spread (`{key}_sigma`, default 0).
fn spread(
    s: &Scenario,
    median: Option<f64>,
    sigma: Option<f64>,
    key: &str,
    example: &str,
    assumptions: &mut Vec<String>,
) -> Result<Spread, ScenarioError> {
    let median = median.ok_or_else(|| missing(s, key, example))?;
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
}

/// The device population: how many, how often online, how often dropping out, and the spread of
/// their compute, uplink and downlink.
fn population(
    s: &Scenario,
    f: &FederatedSection,
    devices: u32,
    assumptions: &mut Vec<String>,
) -> Result<PopulationSpec, ScenarioError> {
    let availability = match probability(s, f.availability, "availability", false)? {
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
    let dropout = probability(s, f.dropout, "dropout", true)?.unwrap_or_else(|| {
        assumptions.push("no selected device drops out (dropout 0)".into());
        0.0
    });
    let compute = spread(
        s,
        f.compute.map(|t| t.0),
        f.compute_sigma,
        "compute",
        "\"20 GFLOP/s\"",
        assumptions,
    )?;
    let uplink = spread(
        s,
        f.uplink.map(|b| b.0),
        f.uplink_sigma,
        "uplink",
        "\"5 Mb/s\"",
        assumptions,
    )?;
    let downlink = spread(
        s,
        f.downlink.map(|b| b.0),
        f.downlink_sigma,
        "downlink",
        "\"20 Mb/s\"",
        assumptions,
    )?;
    Ok(PopulationSpec {
        devices,
        compute,
        uplink,
        downlink,
        availability,
        dropout,
    })
}

/// Devices a population holds at most: each is drawn (its speed, links and availability), about
/// 25 bytes and a quarter of a microsecond apiece.
pub const MAX_POPULATION: u64 = 1 << 24;

/// Devices a run selects over all its rounds at most (rounds x cohort): each is a few events,
/// and a run stays within seconds.
pub const MAX_DEVICE_ROUNDS: u64 = 1 << 22;

/// How rounds run: how many, the cohort each selects, the quorum and minimum of reports that
/// close one, its deadline and the server's time between rounds.
fn policy(
    s: &Scenario,
    f: &FederatedSection,
    cohort: u32,
    assumptions: &mut Vec<String>,
) -> Result<Policy, ScenarioError> {
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
    if rounds as u64 * cohort as u64 > MAX_DEVICE_ROUNDS {
        return Err(s
            .error_at(
                "federated.rounds",
                format!(
                    "{rounds} rounds of a cohort of {cohort} select {} devices, more than a run \
                     simulates ({MAX_DEVICE_ROUNDS})",
                    rounds as u64 * cohort as u64
                ),
            )
            .with_help("simulate fewer rounds: rounds_per_hour and time to a round carry over"));
    }
    let server_time = f.server_time.map(|d| d.0).unwrap_or_else(|| {
        assumptions.push("the next round starts as soon as a round closes (server_time 0)".into());
        SimTime::ZERO
    });
    Ok(Policy {
        rounds,
        cohort,
        quorum,
        min_reports,
        deadline,
        server_time,
    })
}

/// The classes the output layer scores per token: the sampled `nce_samples` plus the true one, or
/// the whole vocabulary.
fn classes(
    s: &Scenario,
    f: &FederatedSection,
    model: &Transformer,
    assumptions: &mut Vec<String>,
) -> Result<f64, ScenarioError> {
    Ok(match f.nce_samples {
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
    })
}

/// The bits per uploaded update value, 1 to 32.
fn update_bits(
    s: &Scenario,
    f: &FederatedSection,
    assumptions: &mut Vec<String>,
) -> Result<u32, ScenarioError> {
    Ok(match f.update_bits {
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
    })
}

/// What a device trains (all the layers' weights or LoRA adapters; the embedding whole, in part
/// or frozen) and which embedding rows a partial update trains.
fn trained(
    s: &Scenario,
    f: &FederatedSection,
    model: &Transformer,
    assumptions: &mut Vec<String>,
) -> Result<(Body, Rows), ScenarioError> {
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
            return Err(missing(s, "lora_rank", "8")
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
            return Err(missing(s, "embedding_rows", "10000").with_help(
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
    Ok((body, rows))
}

/// A required key absent from `[federated]`, with an example of it.
fn missing(s: &Scenario, key: &str, example: &str) -> ScenarioError {
    s.error_at("federated", format!("missing key `{key}` in [federated]"))
        .with_help(format!("add {key} = {example}"))
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
    super::model::refuse_training_keys(
        s,
        "federated training prices its layers on the device model, not kernel by kernel",
        "federated training's memory is the device model's, not a layer's saved tensors",
    )?;
    if s.file.model.dtype.is_none() {
        assumptions.push(format!(
            "weights, activations and downloads in {} ([model] dtype)",
            model.dtype.name()
        ));
    }
    Ok(model)
}
