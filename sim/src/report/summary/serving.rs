//! The summary of a serving run: fleet, throughput, latencies against the SLO, the KV cache.

use super::*;

/// "4 replica(s) of tp 2 on H100-SXM5-80GB", or for a mixed fleet each group's.
fn fleet_text(c: &Value, placed: bool) -> String {
    if c["tp"].is_null() {
        let groups: Vec<String> = c["groups"]
            .as_array()
            .into_iter()
            .flatten()
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
    } else {
        format!(
            "{} replica(s) of tp {} on {}",
            c["replicas"],
            c["tp"],
            c["gpu"].as_str().unwrap_or("?")
        )
    }
}

/// The summary of a serving run.
pub(super) fn render_serving(r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  [serving]",
        r["scenario"].as_str().unwrap_or("scenario")
    );
    let c = &r["cluster"];
    fleet_rows(&mut out, r, c);
    latency_rows(&mut out, r);
    if r["placement"].is_object() {
        row(
            &mut out,
            "KV cache",
            format!(
                "peak use {:.0}% (the fullest server), no preemption: a request's whole \
                 length is reserved on its pipeline when it is admitted",
                100.0 * num(r, "kv_cache.peak_use")
            ),
        );
        assumption_rows(&mut out, r);
        simulated_row(&mut out, r);
        return out;
    }
    kv_cache_row(&mut out, r, c);
    memory_rows(&mut out, r, c);
    assumption_rows(&mut out, r);
    simulated_row(&mut out, r);
    out
}

/// The fleet `c`, its placement or disaggregated pools, and the model it serves.
fn fleet_rows(out: &mut String, r: &Value, c: &Value) {
    row(
        out,
        "fleet",
        format!(
            "{}, {} scheduler{}",
            fleet_text(c, r["placement"].is_object()),
            r["serving"]["scheduler"].as_str().unwrap_or("?"),
            c["profile"]
                .as_str()
                .map(|p| format!(", kernels priced by profile {p}"))
                .unwrap_or_default()
        ),
    );
    if r["placement"].is_object() {
        placement_rows(out, r);
    }
    let d = &r["disaggregation"];
    if !d.is_null() {
        row(
            out,
            "disaggregated",
            format!(
                "{} prefill + {} decode replicas; {} KV transfers of {} in all, p50 {}, p99 {}",
                d["prefill_replicas"],
                d["decode_replicas"],
                d["kv_transfers"],
                gib(num(r, "disaggregation.kv_transfer_bytes")),
                seconds(num(r, "disaggregation.kv_transfer_s.p50")),
                seconds(num(r, "disaggregation.kv_transfer_s.p99"))
            ),
        );
    }
    row(
        out,
        "model",
        format!(
            "{} ({:.2} B parameters, {})",
            r["model"]["name"].as_str().unwrap_or("?"),
            num(r, "model.params") / 1e9,
            r["model"]["dtype"].as_str().unwrap_or("?")
        ),
    );
}

/// Requests completed, throughput, the latency percentiles and SLO attainment.
fn latency_rows(out: &mut String, r: &Value) {
    row(
        out,
        "requests",
        format!("{} of {} completed", r["requests_completed"], r["requests"]),
    );
    row(
        out,
        "throughput",
        format!(
            "{:.2} requests/s{}, {:.0} output tokens/s{}",
            num(r, "throughput.requests_per_s"),
            band(r, "throughput.requests_per_s", |x| format!("{x:.2}")),
            num(r, "throughput.output_tokens_per_s"),
            band(r, "throughput.output_tokens_per_s", |x| format!("{x:.0}"))
        ),
    );
    for (label, key) in [
        ("TTFT", "ttft_s"),
        ("TPOT", "tpot_s"),
        ("end to end", "e2e_s"),
        ("queueing", "queueing_s"),
    ] {
        row(
            out,
            label,
            format!(
                "mean {}, p50 {}{}, p90 {}, p99 {}",
                seconds(num(r, &format!("{key}.mean"))),
                seconds(num(r, &format!("{key}.p50"))),
                band(r, &format!("{key}.p50"), seconds),
                seconds(num(r, &format!("{key}.p90"))),
                seconds(num(r, &format!("{key}.p99")))
            ),
        );
    }
    row(
        out,
        "SLO attainment",
        format!(
            "{:.1}% (goodput {:.2} requests/s)",
            100.0 * num(r, "slo.attainment"),
            num(r, "slo.goodput_requests_per_s")
        ),
    );
}

/// The KV cache of a fleet of replicas: blocks a replica, peak use and preemptions.
fn kv_cache_row(out: &mut String, r: &Value, c: &Value) {
    row(
        out,
        "KV cache",
        format!(
            "{} blocks of {} tokens a replica, peak use {:.0}%, {} preemptions",
            if c["tp"].is_null() {
                c["groups"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|g| g["kv_blocks_per_replica"].to_string())
                    .collect::<Vec<_>>()
                    .join(" / ")
            } else {
                r["kv_cache"]["blocks_per_replica"].to_string()
            },
            r["kv_cache"]["block_tokens"],
            100.0 * num(r, "kv_cache.peak_use"),
            r["kv_cache"]["preemptions"]
        ),
    );
}

/// Memory per GPU: weights, KV cache and capacity (each group's in a mixed fleet).
fn memory_rows(out: &mut String, r: &Value, c: &Value) {
    let fits = r["memory"]["fits"].as_bool().unwrap_or(false);
    if c["tp"].is_null() {
        for g in c["groups"].as_array().into_iter().flatten() {
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
        row(
            out,
            "memory per GPU",
            format!(
                "weights {}, KV cache {} of {} ({})",
                gib(num(r, "memory.weights_bytes_per_gpu")),
                gib(num(r, "memory.kv_bytes_per_gpu")),
                gib(num(r, "memory.capacity_bytes")),
                if fits { "fits" } else { "DOES NOT FIT" }
            ),
        );
    }
}

/// The events and iterations a serving run took.
fn simulated_row(out: &mut String, r: &Value) {
    row(
        out,
        "simulated",
        format!(
            "{} events, {} iterations in {}",
            num(r, "sim.events"),
            num(r, "sim.iterations"),
            seconds(num(r, "sim.wall_s"))
        ),
    );
}

/// A placed fleet's placement: its flow against the other methods', and each group's layers.
fn placement_rows(out: &mut String, r: &Value) {
    let p = &r["placement"];
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
            num(r, "placement.max_flow_tokens_per_s"),
            p["servers_used"],
            compared.join(", ")
        ),
    );
    let servers = p["servers"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    for (gi, g) in r["cluster"]["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
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
