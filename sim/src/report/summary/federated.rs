//! The summary of a federated run: rounds, devices, what was uploaded.

use super::*;

pub(super) fn render_federated(r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  [federated]",
        r["scenario"].as_str().unwrap_or("scenario")
    );
    let mb = |path: &str| format!("{:.1} MB", num(r, path) / 1e6);
    row(
        &mut out,
        "model",
        format!(
            "{} ({:.1} M parameters, {:.1}% trainable)",
            r["model"]["name"].as_str().unwrap_or("?"),
            num(r, "model.params") / 1e6,
            100.0 * num(r, "update.trainable_fraction")
        ),
    );
    row(
        &mut out,
        "population",
        format!(
            "{} devices, {:.0}% online, cohort {} a round, {} reports a round",
            num(r, "population.devices"),
            100.0 * num(r, "population.availability"),
            num(r, "selected_per_round"),
            num(r, "reports_per_round")
        ),
    );
    row(
        &mut out,
        "per device",
        format!(
            "download {}, upload {}, {:.2} TFLOP of local training",
            mb("download_bytes_per_device"),
            mb("upload_bytes_per_device"),
            num(r, "local_flops_per_device") / 1e12
        ),
    );
    row(
        &mut out,
        "round time",
        format!(
            "p50 {}, p90 {}, p99 {}: {:.2} rounds an hour ({} failed)",
            seconds(num(r, "round_time_s.p50")),
            seconds(num(r, "round_time_s.p90")),
            seconds(num(r, "round_time_s.p99")),
            num(r, "rounds_per_hour"),
            num(r, "rounds_failed")
        ),
    );
    row(
        &mut out,
        "uploaded a round",
        format!(
            "{}; {} stragglers dropped, {} drop-outs over {} rounds",
            mb("upload_bytes_per_round"),
            num(r, "stragglers_dropped"),
            num(r, "dropouts"),
            num(r, "rounds")
        ),
    );
    row(&mut out, "device memory", mb("device_memory_bytes"));
    if r["dp"].is_object() {
        row(
            &mut out,
            "DP noise / signal",
            format!("{:.2}", num(r, "dp.noise_to_signal")),
        );
    }
    assumption_rows(&mut out, r);
    row(
        &mut out,
        "simulated",
        format!(
            "{} events, {} of rounds in {}",
            num(r, "sim.events"),
            seconds(num(r, "simulated_s")),
            seconds(num(r, "sim.wall_s"))
        ),
    );
    out
}
