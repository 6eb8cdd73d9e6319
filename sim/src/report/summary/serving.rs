//! The summary of a serving run: fleet, throughput, latencies against the SLO, the KV cache;
//! read from the typed report (`report::serving`; each group's row and the placement are JSON).

use super::*;
use crate::report::percentiles::Percentiles;
use crate::report::serving::{Cluster, ServingReport};

/// The figure, or NaN (printed as such) where the sample was empty.
fn or_nan(x: Option<f64>) -> f64 {
    x.unwrap_or(f64::NAN)
}

/// "4 replica(s) of tp 2 on H100-SXM5-80GB", or for a mixed fleet each group's.
fn fleet_text(c: &Cluster, placed: bool) -> String {
    if let Some(tp) = c.tp {
        format!("{} replica(s) of tp {tp} on {}", c.replicas, c.gpu)
    } else {
        let groups: Vec<String> = c
            .groups
            .iter()
            .map(|g| {
                format!(
                    "{} x tp {} on {}",
                    g["replicas"],
                    g["tp"],
                    g["gpu"].as_str().unwrap_or("?")
                )
            })
            .collect();
        if placed {
            format!("placed fleet of {} servers", groups.join(" + "))
        } else {
            format!("mixed fleet of {}", groups.join(" + "))
        }
    }
}

/// The summary of a serving run.
pub(super) fn render_serving(s: &ServingReport, r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}  [serving]", s.scenario);
    fleet_rows(&mut out, s);
    latency_rows(&mut out, r, s);
    if s.placement.is_some() {
        row(
            &mut out,
            "KV cache",
            format!(
                "peak use {:.0}% (the fullest server), no preemption: a request's whole \
                 length is reserved on its pipeline when it is admitted",
                100.0 * s.kv_cache.peak_use
            ),
        );
        assumption_rows(&mut out, r);
        simulated_row(&mut out, s);
        return out;
    }
    kv_cache_row(&mut out, s);
    memory_rows(&mut out, s);
    assumption_rows(&mut out, r);
    simulated_row(&mut out, s);
    out
}

/// The fleet, its placement or disaggregated pools, and the model it serves.
fn fleet_rows(out: &mut String, s: &ServingReport) {
    let c = &s.cluster;
    row(
        out,
        "fleet",
        format!(
            "{}, {} scheduler{}",
            fleet_text(c, s.placement.is_some()),
            s.serving.scheduler,
            c.profile
                .as_ref()
                .map(|p| format!(", kernels priced by profile {p}"))
                .unwrap_or_default()
        ),
    );
    if let Some(p) = &s.placement {
        placement_rows(out, s, p);
    }
    if let Some(d) = &s.disaggregation {
        row(
            out,
            "disaggregated",
            format!(
                "{} prefill + {} decode replicas; {} KV transfers of {} in all, p50 {}, p99 {}",
                d.prefill_replicas,
                d.decode_replicas,
                d.kv_transfers,
                gib(d.kv_transfer_bytes),
                seconds(or_nan(d.kv_transfer_s.p50)),
                seconds(or_nan(d.kv_transfer_s.p99))
            ),
        );
    }
    row(
        out,
        "model",
        format!(
            "{} ({:.2} B parameters, {})",
            s.model.name,
            s.model.params as f64 / 1e9,
            s.model.dtype
        ),
    );
}

/// Requests completed, throughput, the latency percentiles and SLO attainment (`r` holds the
/// intervals).
fn latency_rows(out: &mut String, r: &Value, s: &ServingReport) {
    row(
        out,
        "requests",
        format!("{} of {} completed", s.requests_completed, s.requests),
    );
    let t = &s.throughput;
    row(
        out,
        "throughput",
        format!(
            "{:.2} requests/s{}, {:.0} output tokens/s{}",
            t.requests_per_s,
            band(r, "throughput.requests_per_s", |x| format!("{x:.2}")),
            t.output_tokens_per_s,
            band(r, "throughput.output_tokens_per_s", |x| format!("{x:.0}"))
        ),
    );
    let figures: [(&str, &str, &Percentiles); 4] = [
        ("TTFT", "ttft_s", &s.ttft_s),
        ("TPOT", "tpot_s", &s.tpot_s),
        ("end to end", "e2e_s", &s.e2e_s),
        ("queueing", "queueing_s", &s.queueing_s),
    ];
    for (label, key, p) in figures {
        row(
            out,
            label,
            format!(
                "mean {}, p50 {}{}, p90 {}, p99 {}",
                seconds(or_nan(p.mean)),
                seconds(or_nan(p.p50)),
                band(r, &format!("{key}.p50"), seconds),
                seconds(or_nan(p.p90)),
                seconds(or_nan(p.p99))
            ),
        );
    }
    row(
        out,
        "SLO attainment",
        format!(
            "{:.1}% (goodput {:.2} requests/s)",
            100.0 * s.slo.attainment,
            s.slo.goodput_requests_per_s
        ),
    );
}

/// The KV cache of a fleet of replicas: blocks a replica, peak use and preemptions.
fn kv_cache_row(out: &mut String, s: &ServingReport) {
    let (c, kv) = (&s.cluster, &s.kv_cache);
    row(
        out,
        "KV cache",
        format!(
            "{} blocks of {} tokens a replica, peak use {:.0}%, {} preemptions",
            if c.tp.is_none() {
                c.groups
                    .iter()
                    .map(|g| g["kv_blocks_per_replica"].to_string())
                    .collect::<Vec<_>>()
                    .join(" / ")
            } else {
                kv.blocks_per_replica
                    .map_or("null".into(), |b| b.to_string())
            },
            kv.block_tokens,
            100.0 * kv.peak_use,
            kv.preemptions
        ),
    );
}

/// Memory per GPU: weights, KV cache and capacity (each group's in a mixed fleet).
fn memory_rows(out: &mut String, s: &ServingReport) {
    let (c, m) = (&s.cluster, &s.memory);
    if c.tp.is_none() {
        for g in &c.groups {
            row(
                out,
                "memory per GPU",
                format!(
                    "{}: weights {}, KV cache {} of {} ({})",
                    g["gpu"].as_str().unwrap_or("?"),
                    gib(g["weights_bytes_per_gpu"].as_f64().unwrap_or(0.0)),
                    gib(g["kv_bytes_per_gpu"].as_f64().unwrap_or(0.0)),
                    gib(g["capacity_bytes"].as_f64().unwrap_or(0.0)),
                    if g["fits"].as_bool() == Some(true) {
                        "fits"
                    } else {
                        "DOES NOT FIT"
                    }
                ),
            );
        }
    } else {
        let bytes = |b: Option<u64>| gib(b.map_or(f64::NAN, |b| b as f64));
        row(
            out,
            "memory per GPU",
            format!(
                "weights {}, KV cache {} of {} ({})",
                bytes(m.weights_bytes_per_gpu),
                bytes(m.kv_bytes_per_gpu),
                bytes(m.capacity_bytes),
                if m.fits { "fits" } else { "DOES NOT FIT" }
            ),
        );
    }
}

/// The events and iterations a serving run took.
fn simulated_row(out: &mut String, s: &ServingReport) {
    row(
        out,
        "simulated",
        format!(
            "{} events, {} iterations in {}",
            s.sim.events,
            s.sim
                .iterations
                .map_or(f64::NAN.to_string(), |i| i.to_string()),
            seconds(or_nan(s.sim.wall_s))
        ),
    );
}

/// A placed fleet's placement `p`: its flow against the other methods', and each group's layers.
fn placement_rows(out: &mut String, s: &ServingReport, p: &Value) {
    let compared: Vec<String> = p["compared_tokens_per_s"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(m, v)| format!("{m} {:.0}", v.as_f64().unwrap_or(0.0)))
        .collect();
    row(
        out,
        "placement",
        format!(
            "{}: max-flow {:.0} tokens/s on {} servers (flows of each method: {})",
            p["method"].as_str().unwrap_or("?"),
            num(p, "max_flow_tokens_per_s"),
            p["servers_used"],
            compared.join(", ")
        ),
    );
    let servers = p["servers"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    for (gi, g) in s.cluster.groups.iter().enumerate() {
        let ranges: Vec<String> = servers
            .iter()
            .filter(|s| s["group"].as_u64() == Some(gi as u64))
            .map(|s| match s["layers"].as_array() {
                Some(l) => format!("{}-{}", l[0], l[1].as_u64().unwrap_or(1) - 1),
                None => "idle".into(),
            })
            .collect();
        let weights = servers
            .iter()
            .filter(|s| s["group"].as_u64() == Some(gi as u64))
            .map(|s| s["weights_bytes_per_gpu"].as_f64().unwrap_or(0.0))
            .fold(0.0, f64::max);
        row(
            out,
            "layers",
            format!(
                "{}: {} (up to {} layers a server; weights up to {} of {} a GPU)",
                g["gpu"].as_str().unwrap_or("?"),
                ranges.join(", "),
                g["max_layers_per_server"],
                gib(weights),
                gib(g["capacity_bytes"].as_f64().unwrap_or(0.0))
            ),
        );
    }
    if p["max_flow_tokens_per_s"].as_f64() == Some(0.0) {
        row(
            out,
            "DOES NOT FIT",
            "no chain of servers holds every layer: nothing can be served".into(),
        );
    }
}
