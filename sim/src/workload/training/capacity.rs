//! What a whole training run takes: energy per step from the per-kernel power model (`power.rs`:
//! the step's mean board power), goodput under
//! failures (`reliability`), and the time, GPU-hours, energy and money to train on `[capacity]
//! tokens` at the simulated step time.
//!
//! Wall time to train = tokens / (tokens per second x goodput), goodput being synchronous
//! restart's (the usual practice; the fault-tolerant figure is in `reliability`), or 1 without a
//! `[reliability]` section (said in the report). GPUs draw power for the whole wall time, at the
//! step's utilisation while training and idle the rest (checkpoint writes, restarts) — an
//! approximation that errs low for rework, which runs busy.

use super::setup::TrainingConfig;
use crate::hw::power;
use crate::report::training::TrainingReport;
use serde_json::json;

/// The measured step, as the capacity figures need it.
pub struct Step {
    pub seconds: f64,
    pub tokens: f64,
    /// Share of the step the busiest stage's compute stream is busy.
    pub busy: f64,
    /// Mean board power of a GPU over the step, watts: the per-kernel power model's (the
    /// report's `power.mean_watts`, `power.rs`).
    pub board_watts: f64,
}

/// The report sections `energy`, and when asked for, `reliability`, `capacity` and `cost`.
pub fn report(s: &TrainingConfig, step: &Step, report: &mut TrainingReport) {
    let gpus = s.gpus();
    let idle_watts = power::idle_watts(&s.gpu);
    let watts = step.board_watts;
    let pue = s.prices.map_or(1.0, |p| p.pue);
    let joules = watts * gpus as f64 * step.seconds * pue;
    report.energy = Some(json!({
        "gpu_busy_fraction": step.busy,
        "board_watts_per_gpu": watts,
        "joules_per_step": joules,
        "kwh_per_million_tokens": joules / 3.6e6 / step.tokens * 1e6,
        "pue": pue,
        "model": format!(
            "board power of the per-kernel power model, averaged over the step (power.mean_watts); {}",
            if s.prices.is_some_and(|p| p.pue > 1.0) {
                "times the facility's PUE"
            } else {
                "GPUs only (no PUE given)"
            }
        ),
    }));
    let goodput = match &s.reliability {
        Some(r) => {
            let section = r.report(gpus, s.fabric.nodes, s.dp, step.seconds);
            let g = section["goodput"].as_f64().expect("a goodput");
            report.reliability = Some(section);
            g
        }
        None => 1.0,
    };
    if let Some(prices) = &s.prices {
        let mut cost = prices.per_unit(gpus, step.seconds, step.tokens / 1e6, "million_tokens");
        if let Some(kwh) = prices.usd_per_kwh {
            cost["usd_per_million_tokens_energy"] = json!(kwh * joules / 3.6e6 / step.tokens * 1e6);
        }
        report.cost = Some(cost);
    }
    if let Some(tokens) = s.train_tokens {
        let training_s = tokens / step.tokens * step.seconds;
        let wall_s = training_s / goodput;
        let gpu_hours = gpus as f64 * wall_s / 3600.0;
        let kwh =
            (watts * training_s + idle_watts * (wall_s - training_s)) * gpus as f64 * pue / 3.6e6;
        let mut c = json!({
            "tokens": tokens,
            "goodput": goodput,
            "goodput_source": if s.reliability.is_some() { "synchronous restart ([reliability])" } else { "none: no failures modelled (add [reliability])" },
            "time_to_train_s": wall_s,
            "time_to_train_days": wall_s / 86400.0,
            "gpu_hours": gpu_hours,
            "energy_kwh": kwh,
        });
        if let Some(p) = &s.prices {
            let gpu_usd = p.gpu_usd(gpus, wall_s);
            let energy_usd = p.usd_per_kwh.map(|k| k * kwh);
            c["cost_usd"] = json!({
                "gpu_time": gpu_usd,
                "energy": energy_usd,
                "total": gpu_usd.unwrap_or(0.0) + energy_usd.unwrap_or(0.0),
            });
        }
        report.capacity = Some(c);
    }
}
