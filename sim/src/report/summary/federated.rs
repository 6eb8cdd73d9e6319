//! The summary of a federated run: rounds, devices, what was uploaded; read from the typed
//! report (`report::federated`).

use super::*;
use crate::report::federated::FederatedReport;

/// The summary of a federated scenario; `r` is its JSON, for the sections kept untyped.
pub(super) fn render_federated(f: &FederatedReport, r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}  [federated]", f.scenario);
    let mb = |bytes: f64| format!("{:.1} MB", bytes / 1e6);
    let or_nan = |x: Option<f64>| x.unwrap_or(f64::NAN);
    row(
        &mut out,
        "model",
        format!(
            "{} ({:.1} M parameters, {:.1}% trainable)",
            f.model.name,
            f.model.params as f64 / 1e6,
            100.0 * f.update.trainable_fraction
        ),
    );
    row(
        &mut out,
        "population",
        format!(
            "{} devices, {:.0}% online, cohort {} a round, {} reports a round",
            f.population.devices,
            100.0 * f.population.availability,
            f.selected_per_round,
            f.reports_per_round
        ),
    );
    row(
        &mut out,
        "per device",
        format!(
            "download {}, upload {}, {:.2} TFLOP of local training",
            mb(f.download_bytes_per_device),
            mb(f.upload_bytes_per_device),
            f.local_flops_per_device / 1e12
        ),
    );
    row(
        &mut out,
        "round time",
        format!(
            "p50 {}, p90 {}, p99 {}: {:.2} rounds an hour ({} failed)",
            seconds(or_nan(f.round_time_s.p50)),
            seconds(or_nan(f.round_time_s.p90)),
            seconds(or_nan(f.round_time_s.p99)),
            f.rounds_per_hour,
            f.rounds_failed
        ),
    );
    row(
        &mut out,
        "uploaded a round",
        format!(
            "{}; {} stragglers dropped, {} drop-outs over {} rounds",
            mb(f.upload_bytes_per_round),
            f.stragglers_dropped,
            f.dropouts,
            f.rounds
        ),
    );
    row(&mut out, "device memory", mb(f.device_memory_bytes));
    if let Some(dp) = &f.dp {
        row(
            &mut out,
            "DP noise / signal",
            format!("{:.2}", or_nan(dp.noise_to_signal)),
        );
    }
    assumption_rows(&mut out, r);
    row(
        &mut out,
        "simulated",
        format!(
            "{} events, {} of rounds in {}",
            f.sim.events,
            seconds(f.simulated_s),
            seconds(or_nan(f.sim.wall_s))
        ),
    );
    out
}
