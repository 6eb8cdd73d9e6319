//! `[cost]` read into `workload::cost::Prices` (every price checked at its key, the PUE 1 when not
//! given: board power alone), and the `cost` section stamped on serving and diffusion reports.

use crate::report::diffusion::DiffusionReport;
use crate::report::serving::ServingReport;
use crate::report::typed::TypedReport;
use crate::scenario::error::ScenarioError;
use crate::scenario::{Kind, Scenario};
use crate::workload::cost::Prices;
use serde_json::{Value, json};

/// Reads `[cost]`; None when the scenario has none.
pub fn prices(s: &Scenario) -> Result<Option<Prices>, ScenarioError> {
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

/// Serving and diffusion: adds the report's `cost` section from its throughput and GPU count
/// (`cluster.gpus`) when the scenario has `[cost]`: dollars and GPU-hours per million output
/// tokens, or per video, and for serving runs with an `energy` section the energy's dollars per
/// million output tokens. Diffusion (and placed serving fleets) have no energy model yet, so the
/// energy keys are refused there.
pub fn stamp(s: &Scenario, report: &mut Value) -> Result<(), ScenarioError> {
    let Some(prices) = prices(s)? else {
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
    let section = match s.kind {
        Kind::Serving => {
            let r = ServingReport::of_run(report);
            let tokens = r.throughput.output_tokens_per_s;
            let mut v = prices.per_unit(r.cluster.gpus, 1.0, tokens / 1e6, "million_output_tokens");
            if let (Some(kwh), Some(j)) = (prices.usd_per_kwh, joules_per_token) {
                // The report's joules already include the PUE.
                v["usd_per_million_output_tokens_energy"] = json!(kwh * j / 3.6e6 * 1e6);
            }
            v
        }
        Kind::Diffusion => {
            let r = DiffusionReport::of_run(report);
            prices.per_unit(r.cluster.gpus, 3600.0, r.videos_per_hour, "video")
        }
        Kind::Training => return Ok(()),
        Kind::Collective | Kind::Federated | Kind::Kernels | Kind::Cluster => {
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
