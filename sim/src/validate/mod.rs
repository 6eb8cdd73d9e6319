//! Validation against published measurements: every case of a `published.json` (see
//! shared/validation/README.md) set up as the source states it, run, and its predicted value read
//! in the case's own convention.
//!
//! Each training case becomes the TOML text of a scenario, parsed with [`Scenario::parse`] and
//! run with [`crate::run()`], so every check of the normal pipeline applies and a feature the
//! simulator lacks is refused with its own message (the row is then "not expressible"). Collective
//! cases are priced with [`crate::collective::cost`] on an 8-GPU board, as nccl-tests runs them.
//! Nothing is tuned per case: where a source leaves a field unstated, one documented default
//! applies to every case, and the row lists it in `assumptions`, followed by the simulator's own.
//!
//! Conventions: Megatron-LM's TFLOP/s per GPU (Eq. 3, counting the recomputed forward) is
//! `hardware_tflops_per_gpu`; llm-foundry's MFU is `mfu` x 100 (non-causal attention counted);
//! NCCL's busBW is nccl-tests' bus bandwidth; a per-layer time is read from the simulated timeline
//! of one micro-batch. All of them: "Metrics" in docs/VALIDATION.md (text in `cli::validate`).

mod case;
mod cluster;
mod collective;
pub mod coverage;
mod diffusion;
mod layer;
mod model;
mod parallel;
mod prose;
pub mod residuals;
mod row;
mod serving;
mod serving_batch;
mod summary;
mod training;
mod validation;

use crate::scenario::Scenario;
use diffusion::{denoise_only, diffusion_row};
use layer::layer_rows;
use serde_json::Value;
use serving::serving_row;
use std::path::Path;
use std::time::Instant;
use training::training_rows;

pub use case::{Case, LoadError, load, parse};
pub use row::{Row, Status};
pub use summary::{Stats, Summary, summarize};
pub use validation::Validation;

/// Where `clustersim validate` looks when given no file: the shared data beside the repository,
/// relative to the current directory (the repository root).
pub const DEFAULT_FILE: &str = "../shared/validation/published.json";

const GIB: f64 = (1u64 << 30) as f64;

/// Runs every case. `file_name` names the scenarios built from the cases ("published.json#id").
pub fn validate(cases: &[Case], file_name: &str) -> Validation {
    let started = Instant::now();
    let rows: Vec<Row> = cases
        .iter()
        .flat_map(|c| validate_case(c, file_name))
        .collect();
    Validation {
        summary: summarize(&rows),
        rows,
        wall_s: started.elapsed().as_secs_f64(),
    }
}

// ---------------------------------------------------------------------------------------------
// Classification

/// What a case measures, read from its fields.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum CaseKind {
    Training(TrainingMetric),
    LayerTime,
    Collective,
    Serving,
    Diffusion,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum TrainingMetric {
    /// TFLOP/s per GPU that count the recomputed forward (Megatron-LM Eq. 3).
    HardwareTflops,
    /// "achieved TFLOP/s per GPU" without a stated convention.
    Tflops,
    MfuPercent,
    StepTime,
    TokensPerGpu,
}

fn classify(c: &Case) -> Result<CaseKind, String> {
    let metric = c.metric.to_lowercase();
    let unit = c.unit.to_lowercase();
    let has = |section: &str, key: &str| c.get(section, key).is_some();
    if has("parallel", "collective") || metric.contains("busbw") {
        return Ok(CaseKind::Collective);
    }
    if metric.contains("one transformer layer") {
        return Ok(CaseKind::LayerTime);
    }
    if has("model", "steps")
        || has("model", "frames")
        || has("model", "resolution")
        || metric.contains("generation latency")
    {
        return Ok(CaseKind::Diffusion);
    }
    if has("parallel", "engine") || metric.contains("output throughput") || unit.contains("output")
    {
        return Ok(CaseKind::Serving);
    }
    let training = if metric.contains("mfu") {
        TrainingMetric::MfuPercent
    } else if metric.contains("tflop/s") {
        let notes = c.notes().to_lowercase();
        if metric.contains("incl. recompute") || notes.contains("counts the recompute") {
            TrainingMetric::HardwareTflops
        } else {
            TrainingMetric::Tflops
        }
    } else if metric.contains("step time") {
        TrainingMetric::StepTime
    } else if metric.contains("tokens/s/gpu") || unit == "tokens/s/gpu" {
        TrainingMetric::TokensPerGpu
    } else {
        return Err(format!(
            "no reading of the metric \"{}\" ({}) is defined",
            c.metric, c.unit
        ));
    };
    Ok(CaseKind::Training(training))
}

fn short_name(kind: &Result<CaseKind, String>, c: &Case) -> String {
    match kind {
        Ok(CaseKind::Training(TrainingMetric::HardwareTflops)) => "HW TFLOP/s/GPU".into(),
        Ok(CaseKind::Training(TrainingMetric::Tflops)) => "TFLOP/s/GPU".into(),
        Ok(CaseKind::Training(TrainingMetric::MfuPercent)) => "MFU %".into(),
        Ok(CaseKind::Training(TrainingMetric::StepTime)) => "step time s".into(),
        Ok(CaseKind::Training(TrainingMetric::TokensPerGpu)) => "tokens/s/GPU".into(),
        Ok(CaseKind::LayerTime) => "layer fwd+bwd ms".into(),
        Ok(CaseKind::Collective) if c.unit == "us" => "time us".into(),
        Ok(CaseKind::Collective) => "busBW GB/s".into(),
        Ok(CaseKind::Serving) if serving_batch::is_small_batch(c) => {
            serving_batch::short(c).unwrap_or_default()
        }
        Ok(CaseKind::Serving) => "output tok/s".into(),
        Ok(CaseKind::Diffusion) if diffusion::memory_unit(c).is_some() => {
            format!("peak memory {}", c.unit.trim())
        }
        Ok(CaseKind::Diffusion) if denoise_only(c) => "DiT latency s".into(),
        Ok(CaseKind::Diffusion) => "latency s".into(),
        Err(_) => c.unit.clone(),
    }
}

/// The rows of one case: its headline metric, and comparable figures of `extra_metrics`.
pub fn validate_case(c: &Case, file_name: &str) -> Vec<Row> {
    let started = Instant::now();
    let kind = classify(c);
    let row = |status: Status, predicted: Option<f64>, assumptions: Vec<String>| Row {
        id: c.id.clone(),
        group: c.group(),
        metric: c.metric.clone(),
        short: short_name(&kind, c),
        unit: c.unit.clone(),
        measured: c.value,
        predicted,
        error: None,
        status,
        assumptions,
        wall_s: 0.0,
        primary: true,
        scenario: None,
        fits: None,
        regime: None,
    };
    // A panic is a bug in the simulator; it fails this case's row rather than the whole run (the
    // panic message is printed on stderr as usual).
    let rows = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &kind {
        Err(e) => vec![row(Status::Failed(e.clone()), None, Vec::new())],
        Ok(CaseKind::Serving) if serving_batch::is_small_batch(c) => {
            vec![serving_batch::batch_row(c, file_name, &row)]
        }
        Ok(CaseKind::Serving) => vec![serving_row(c, file_name, &row)],
        Ok(CaseKind::Diffusion) => vec![diffusion_row(c, file_name, &row)],
        Ok(CaseKind::Collective) => vec![match collective::collective(c) {
            Ok((busbw, assumptions, regime)) => {
                let mut r = row(Status::Compared, Some(busbw), assumptions);
                r.regime = Some(regime);
                r
            }
            Err(Refusal {
                status,
                assumptions,
            }) => row(status, None, assumptions),
        }],
        Ok(CaseKind::Training(metric)) => training_rows(c, file_name, *metric, &row),
        Ok(CaseKind::LayerTime) => layer_rows(c, file_name, &row),
    }));
    let mut rows = rows.unwrap_or_else(|payload| {
        let message = crate::panic_message(&*payload, "");
        vec![row(
            Status::Failed(format!("the simulator panicked: {message}")),
            None,
            Vec::new(),
        )]
    });
    let wall = started.elapsed().as_secs_f64();
    for r in &mut rows {
        r.wall_s = wall;
        if r.status == Status::Compared {
            match r.predicted {
                Some(p) if p.is_finite() && p > 0.0 => {
                    r.error = Some((p - r.measured) / r.measured);
                }
                Some(p) => {
                    r.status = Status::Failed(format!(
                        "the predicted value {p} is not a finite positive number"
                    ));
                    r.predicted = None;
                }
                None => r.status = Status::Failed("no predicted value".into()),
            }
        }
    }
    rows
}

/// The reason a kind of workload is not expressible: the scenario pipeline's own refusal of a
/// minimal scenario of that kind.
struct Refusal {
    status: Status,
    assumptions: Vec<String>,
}

impl Refusal {
    fn failed(message: impl Into<String>, assumptions: &[String]) -> Self {
        Refusal {
            status: Status::Failed(message.into()),
            assumptions: assumptions.to_vec(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Shared by the scenario builders

type RowFn<'a> = dyn Fn(Status, Option<f64>, Vec<String>) -> Row + 'a;

/// TOML for a string.
fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The row of a case mapped to `toml`: the scenario parsed as `{file_name}#{id}` and run, compared
/// on the figure `read` takes from the report (it may add to the assumptions), or failed with the
/// pipeline's refusal. The row keeps the scenario.
fn scenario_row(
    toml: String,
    file_name: &str,
    id: &str,
    mut a: Vec<String>,
    row: &RowFn,
    read: impl FnOnce(&Value, &mut Vec<String>) -> Option<f64>,
) -> Row {
    let path = format!("{file_name}#{id}");
    let mut r =
        match Scenario::parse(Path::new(&path), toml.clone(), &[]).and_then(|s| crate::run(&s)) {
            Ok(out) => {
                let predicted = read(&out.report, &mut a);
                let mut r = row(
                    Status::Compared,
                    predicted,
                    with_report_notes(a, &out.report),
                );
                r.regime = crate::uncertainty::regime::of_report(&out.report);
                r
            }
            Err(e) => row(Status::Failed(e.message), None, a),
        };
    r.scenario = Some(toml);
    r
}

/// The row's assumptions: the mapping's, then the simulator's (from the report), then whether the
/// configuration fits.
fn with_report_notes(mut assumptions: Vec<String>, report: &Value) -> Vec<String> {
    if let Some(list) = report["assumptions"].as_array() {
        assumptions.extend(
            list.iter()
                .filter_map(Value::as_str)
                .map(|s| format!("simulator: {s}")),
        );
    }
    if report["memory"]["fits"] == false {
        assumptions.push(format!(
            "simulator: does not fit in memory ({:.1} GiB a GPU of {:.1} GiB); the time is still \
             reported",
            report["memory"]["peak_bytes_per_gpu"]
                .as_f64()
                .unwrap_or(0.0)
                / GIB,
            report["memory"]["capacity_bytes"].as_f64().unwrap_or(0.0) / GIB
        ));
    }
    assumptions
}
