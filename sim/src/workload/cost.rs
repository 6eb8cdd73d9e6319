//! Prices of GPU time and energy (`[cost]`), shared by every kind of workload: what a unit of
//! work (a million tokens, a video) costs at the simulated throughput.
//!
//! GPU time is billed for every GPU of the run, busy or not; energy (training, which has the
//! power model) is the GPUs' board power times the facility's power usage effectiveness.

use crate::scenario::error::ScenarioError;
use crate::scenario::{Kind, Scenario};
use serde_json::{Value, json};

/// The resolved `[cost]` section.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Prices {
    pub usd_per_gpu_hour: Option<f64>,
    pub usd_per_kwh: Option<f64>,
    /// Power usage effectiveness (1 when not given: board power alone).
    pub pue: f64,
}

impl Prices {
    /// Reads `[cost]`; None when the scenario has none.
    pub fn resolve(s: &Scenario) -> Result<Option<Prices>, ScenarioError> {
        let Some(c) = &s.file.cost else {
            return Ok(None);
        };
        for (value, key) in [
            (c.usd_per_gpu_hour, "cost.usd_per_gpu_hour"),
            (c.usd_per_kwh, "cost.usd_per_kwh"),
        ] {
            if let Some(v) = value
                && !(v.is_finite() && v >= 0.0)
            {
                return Err(s.error_at(
                    key,
                    format!("`{key}` must be a price of 0 or more, not {v}"),
                ));
            }
        }
        if let Some(pue) = c.pue
            && !(pue.is_finite() && pue >= 1.0)
        {
            return Err(s
                .error_at("cost.pue", format!("power usage effectiveness is 1 or more, not {pue}"))
                .with_help("facility power over IT power: about 1.1 for a modern hyperscale data centre, 1.5 for an average one"));
        }
        if c.usd_per_gpu_hour.is_none() && c.usd_per_kwh.is_none() {
            return Err(s
                .error_at("cost", "[cost] needs usd_per_gpu_hour, usd_per_kwh or both")
                .with_help("e.g. usd_per_gpu_hour = 2.5"));
        }
        Ok(Some(Prices {
            usd_per_gpu_hour: c.usd_per_gpu_hour,
            usd_per_kwh: c.usd_per_kwh,
            pue: c.pue.unwrap_or(1.0),
        }))
    }

    /// Dollars of GPU time for `gpus` GPUs over `seconds`.
    pub fn gpu_usd(&self, gpus: u32, seconds: f64) -> Option<f64> {
        self.usd_per_gpu_hour
            .map(|p| p * gpus as f64 * seconds / 3600.0)
    }

    /// The report's `cost` section for `gpus` GPUs doing `units` of work (named `unit`, e.g.
    /// "million_output_tokens") in `seconds`.
    pub fn per_unit(&self, gpus: u32, seconds: f64, units: f64, unit: &str) -> Value {
        let mut v = json!({ "usd_per_gpu_hour": self.usd_per_gpu_hour });
        if let Some(usd) = self.gpu_usd(gpus, seconds)
            && units > 0.0
        {
            v[format!("usd_per_{unit}")] = json!(usd / units);
            v[format!("gpu_hours_per_{unit}")] = json!(gpus as f64 * seconds / 3600.0 / units);
        }
        v
    }
}

/// Serving and diffusion: adds the report's `cost` section from its throughput and GPU count
/// (`cluster.gpus`) when the scenario has `[cost]`: dollars and GPU-hours per million output
/// tokens, or per video, and for serving runs with an `energy` section the energy's dollars per
/// million output tokens. Diffusion (and placed serving fleets) have no energy model yet, so the
/// energy keys are refused there.
pub fn stamp(s: &Scenario, report: &mut Value) -> Result<(), ScenarioError> {
    let Some(prices) = Prices::resolve(s)? else {
        return Ok(());
    };
    let c = s.file.cost.as_ref().expect("resolved from it");
    let joules_per_token = report["energy"]["joules_per_output_token"].as_f64();
    let has_energy = s.kind == Kind::Training || report["energy"].is_object();
    if !has_energy {
        s.refuse_set(
            &[
                (c.usd_per_kwh.is_some(), "cost.usd_per_kwh"),
                (c.pue.is_some(), "cost.pue"),
            ],
            |key| {
                format!(
                    "`{key}` needs the power model, which training and serving fleets of \
                     replicas have, not this run"
                )
            },
            "price GPU time with usd_per_gpu_hour (energy included, as clouds bill it)",
        )?;
    }
    let gpus = report["cluster"]["gpus"].as_u64().unwrap_or(0) as u32;
    let section = match s.kind {
        Kind::Serving => {
            let tokens = report["throughput"]["output_tokens_per_s"]
                .as_f64()
                .unwrap_or(0.0);
            let mut v = prices.per_unit(gpus, 1.0, tokens / 1e6, "million_output_tokens");
            if let (Some(kwh), Some(j)) = (prices.usd_per_kwh, joules_per_token) {
                // The report's joules already include the PUE.
                v["usd_per_million_output_tokens_energy"] = json!(kwh * j / 3.6e6 * 1e6);
            }
            v
        }
        Kind::Diffusion => {
            let videos = report["videos_per_hour"].as_f64().unwrap_or(0.0);
            prices.per_unit(gpus, 3600.0, videos, "video")
        }
        Kind::Training => return Ok(()),
        Kind::Collective | Kind::Federated | Kind::Kernels => {
            let kind = s.kind.name();
            return Err(s
                .error_at(
                    "cost",
                    format!("a {kind} scenario has no GPU time to price"),
                )
                .with_help("remove [cost]"));
        }
    };
    report["cost"] = section;
    Ok(())
}
