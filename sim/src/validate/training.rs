//! Training cases: the scenario a case becomes, with every choice where the source is silent, run
//! through the normal pipeline (recomputation raised where an unstated choice does not fit), and
//! the metric read in the case's convention.

use super::cluster::cluster_table;
use super::model::model_table;
use super::parallel::parallel_table;
use super::prose::{number, text};
use super::{Case, GIB, Refusal, Row, RowFn, Status, TrainingMetric, quote, with_report_notes};
use crate::report::training::{Memory, TrainingReport};
use crate::report::typed::TypedReport;
use crate::scenario::Scenario;
use crate::workload::training::framework::Framework;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

/// A case set up as a scenario.
pub(super) struct Built {
    pub(super) toml: String,
    pub(super) assumptions: Vec<String>,
    gpus: u32,
    recompute: &'static str,
    /// Whether the source states the recomputation (else it may be raised to make the run fit).
    recompute_stated: bool,
}

/// The scenario TOML of a training case (or a per-layer micro-benchmark), with every choice made
/// where the source is silent.
fn build_training(c: &Case, one_micro_batch: bool) -> Result<Built, Refusal> {
    let mut a: Vec<String> = Vec::new();
    let par = |k: &str| c.get("parallel", k);
    let framework = Framework::of(
        text(c.raw.get("source")).unwrap_or(""),
        text(par("zero")).unwrap_or(""),
    );
    let precision = text(par("precision")).unwrap_or("").to_lowercase();
    let (cluster, gpu, count) = cluster_table(c, &mut a)?;
    let (model, dtype) = model_table(c, gpu, framework, &precision, &mut a)?;
    let (p, recompute, recompute_stated) = parallel_table(
        c,
        framework,
        count,
        one_micro_batch,
        dtype,
        &precision,
        &mut a,
    )?;
    let toml = format!(
        "# {}: {}\nname = {}\nkind = \"training\"\n\n{cluster}\n{model}\n{p}\n[sim]\nnetwork = \"flow\"\n",
        c.id,
        c.raw.get("table").and_then(Value::as_str).unwrap_or(""),
        quote(&c.id),
    );
    Ok(Built {
        toml,
        assumptions: a,
        gpus: count,
        recompute,
        recompute_stated,
    })
}

/// Whether a scenario error says the simulator lacks a feature (rather than a bad set-up).
fn lacks_feature(message: &str) -> bool {
    message.contains("not modelled by this version")
}

/// Parses and runs a built scenario.
fn run_built(
    c: &Case,
    file_name: &str,
    built: &Built,
) -> Result<crate::RunOutput, (Status, Vec<String>)> {
    let path = format!("{file_name}#{}", c.id);
    let outcome =
        Scenario::parse(Path::new(&path), built.toml.clone(), &[]).and_then(|s| crate::run(&s));
    outcome.map_err(|e| {
        let mut message = e.message.clone();
        if let Some(help) = &e.help
            && !lacks_feature(&message)
        {
            let _ = write!(message, " ({help})");
        }
        let status = if lacks_feature(&e.message) {
            Status::NotExpressible(e.message.clone())
        } else {
            Status::Failed(message)
        };
        (status, built.assumptions.clone())
    })
}

/// Builds the case's training scenario and runs it; a refusal or a failed run becomes the row
/// that reports it (with the scenario text when there is one).
pub(super) fn build_and_run(
    c: &Case,
    file_name: &str,
    one_micro_batch: bool,
    row: &RowFn,
) -> Result<(Built, crate::RunOutput), Box<Row>> {
    let built = build_training(c, one_micro_batch)
        .map_err(|r| Box::new(row(r.status, None, r.assumptions)))?;
    match run_built(c, file_name, &built) {
        Ok(output) => Ok((built, output)),
        Err((status, assumptions)) => {
            let mut r = row(status, None, assumptions);
            r.scenario = Some(built.toml);
            Err(Box::new(r))
        }
    }
}

/// When the source does not state the recomputation and the run does not fit without it, the run
/// that was measured must have recomputed: try selective, then full recomputation, and say so.
/// Where neither fits, the measured run recomputed at least as much as the memory model allows
/// for, so full recomputation is compared (and the row says it does not fit).
fn fit_by_recomputation(
    c: &Case,
    file_name: &str,
    built: Built,
    output: crate::RunOutput,
) -> (Built, crate::RunOutput) {
    if built.recompute_stated || memory(&output).is_none_or(|m| m.fits) {
        return (built, output);
    }
    let peak_gib =
        |o: &crate::RunOutput| memory(o).map_or(0.0, |m| m.peak_bytes_per_gpu as f64) / GIB;
    for level in ["selective", "full"] {
        let from = built.recompute;
        let toml = built.toml.replace(
            &format!("recompute = \"{from}\""),
            &format!("recompute = \"{level}\""),
        );
        let mut candidate = Built {
            toml,
            assumptions: built.assumptions.clone(),
            gpus: built.gpus,
            recompute: level,
            recompute_stated: false,
        };
        candidate.assumptions.push(format!(
            "recomputation raised from {from} to {level}: not stated, and {from} does not fit \
             ({:.0} GiB a GPU), so the measured run must have recomputed",
            peak_gib(&output)
        ));
        match run_built(c, file_name, &candidate) {
            Ok(o) if memory(&o).is_none_or(|m| m.fits) => return (candidate, o),
            // Selective still short: try full from the stated start, not from selective.
            Ok(_) if level == "selective" => {}
            Ok(o) => {
                candidate.assumptions.push(format!(
                    "full recomputation does not fit either ({:.0} GiB a GPU); compared with it, \
                     the most recomputation there is",
                    peak_gib(&o)
                ));
                return (candidate, o);
            }
            Err(_) => break,
        }
    }
    (built, output)
}

/// The memory section of a training run's report.
fn memory(o: &crate::RunOutput) -> Option<Memory> {
    TrainingReport::from_value(&o.report).ok().map(|t| t.memory)
}

pub(super) fn training_rows(
    c: &Case,
    file_name: &str,
    metric: TrainingMetric,
    row: &RowFn,
) -> Vec<Row> {
    let (built, output) = match build_and_run(c, file_name, false, row) {
        Ok(run) => run,
        Err(r) => return vec![*r],
    };
    let (built, output) = fit_by_recomputation(c, file_name, built, output);
    let report = &output.report;
    let Ok(t) = TrainingReport::from_value(report) else {
        return vec![row(
            Status::Failed("the run wrote no training report".into()),
            None,
            built.assumptions,
        )];
    };
    let mut assumptions = built.assumptions.clone();
    let predicted = match metric {
        TrainingMetric::HardwareTflops => {
            assumptions.push(
                "metric read as hardware_tflops_per_gpu (the stated convention counts the \
                 recomputed forward)"
                    .into(),
            );
            Some(t.hardware_tflops_per_gpu)
        }
        TrainingMetric::Tflops if built.recompute == "full" => {
            assumptions.push(
                "metric read as hardware_tflops_per_gpu: recomputation is on and the source \
                 counts FLOPs by Megatron-LM's Eq. 3, which includes the recomputed forward"
                    .into(),
            );
            Some(t.hardware_tflops_per_gpu)
        }
        TrainingMetric::Tflops => {
            assumptions.push(
                "metric read as tflops_per_gpu (no recomputed forward to count: model and \
                 hardware FLOPs are equal)"
                    .into(),
            );
            Some(t.tflops_per_gpu)
        }
        TrainingMetric::MfuPercent => Some(100.0 * t.mfu),
        TrainingMetric::StepTime => Some(t.iteration_time_s),
        TrainingMetric::TokensPerGpu => Some(t.tokens_per_s / built.gpus as f64),
    };
    let assumptions = with_report_notes(assumptions, report);
    let fits = Some(t.memory.fits);
    let regime = crate::uncertainty::regime::of_report(report);
    let mut rows = vec![row(Status::Compared, predicted, assumptions.clone())];
    rows[0].regime = regime.clone();
    rows[0].scenario = Some(built.toml.clone());
    rows[0].fits = fits;
    // A second, convention-free figure of the same row: tokens per second per GPU.
    if metric == TrainingMetric::MfuPercent
        && let Some(measured) = number(c.get("extra_metrics", "tokens_per_s_per_gpu"))
    {
        let mut r = row(
            Status::Compared,
            Some(t.tokens_per_s / built.gpus as f64),
            assumptions,
        );
        r.metric = "tokens/s per GPU (extra_metrics.tokens_per_s_per_gpu)".into();
        r.short = "tokens/s/GPU".into();
        r.unit = "tokens/s/GPU".into();
        r.measured = measured;
        r.primary = false;
        r.fits = fits;
        r.regime = regime;
        rows.push(r);
    }
    rows
}
