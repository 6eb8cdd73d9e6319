//! The readable summary `clustersim run` prints without `--json`.

use serde_json::Value;
use std::fmt::Write;

fn num(v: &Value, path: &str) -> f64 {
    path.split('.')
        .try_fold(v, |v, p| v.get(p))
        .and_then(Value::as_f64)
        .unwrap_or(f64::NAN)
}

/// "1 node of 8", "8 nodes of 8": the report's cluster shape.
fn nodes_of(r: &Value) -> String {
    let nodes = num(r, "cluster.nodes");
    let noun = if nodes == 1.0 { "node" } else { "nodes" };
    format!("{nodes} {noun} of {}", num(r, "cluster.gpus_per_node"))
}

fn gib(bytes: f64) -> String {
    format!("{:.1} GiB", bytes / (1u64 << 30) as f64)
}

fn seconds(s: f64) -> String {
    match s {
        s if s >= 7200.0 => format!("{:.1} h", s / 3600.0),
        s if s >= 120.0 => format!("{:.1} min", s / 60.0),
        s if s >= 1.0 => format!("{s:.3} s"),
        s if s >= 1e-3 => format!("{:.3} ms", s * 1e3),
        s => format!("{:.3} us", s * 1e6),
    }
}

/// One labelled row of the summary.
fn row(out: &mut String, label: &str, value: String) {
    let _ = writeln!(out, "  {label:<22}{value}");
}

/// One row per assumption the run made, the first labelled "assumed".
fn assumption_rows(out: &mut String, r: &Value) {
    let items = r["assumptions"].as_array().into_iter().flatten();
    for (i, item) in items.enumerate() {
        row(
            out,
            if i == 0 { "assumed" } else { "" },
            item.as_str().unwrap_or("").to_string(),
        );
    }
}

pub fn render(r: &Value) -> String {
    if r["kind"] == "serving" {
        return render_serving(r);
    }
    if r["kind"] == "diffusion" {
        return render_diffusion(r);
    }
    if r["kind"] == "collective" {
        return render_collective(r);
    }
    if r["kind"] == "federated" {
        return render_federated(r);
    }
    let mut out = String::new();
    let name = r["scenario"].as_str().unwrap_or("scenario");
    let kind = r["kind"].as_str().unwrap_or("?");
    let _ = writeln!(out, "{name}  [{kind}]");
    row(
        &mut out,
        "GPUs",
        format!(
            "{} x {} ({})",
            num(r, "cluster.gpus"),
            r["cluster"]["gpu"].as_str().unwrap_or("?"),
            nodes_of(r)
        ),
    );
    row(
        &mut out,
        "model",
        format!(
            "{} ({:.2} B parameters)",
            r["model"]["name"].as_str().unwrap_or("?"),
            num(r, "model.params") / 1e9
        ),
    );
    let p = &r["parallel"];
    row(
        &mut out,
        "parallel",
        format!(
            "dp {} tp {} pp {} cp {} ep {}{}{}, micro-batch {}, global batch {} ({} accumulation steps), recompute {}, ZeRO {}",
            p["dp"],
            p["tp"],
            p["pp"],
            p["cp"],
            p["ep"],
            if p["sequence_parallel"] == true {
                " (sequence parallel)"
            } else {
                ""
            },
            if p["pp"].as_u64().unwrap_or(1) > 1 {
                format!(
                    ", {} schedule with {} virtual stages",
                    p["schedule"].as_str().unwrap_or("?"),
                    p["virtual_stages"]
                )
            } else {
                String::new()
            },
            p["micro_batch"],
            p["global_batch"],
            p["accumulation_steps"],
            p["recompute"].as_str().unwrap_or("?"),
            p["zero"]
        ),
    );
    row(
        &mut out,
        "iteration time",
        seconds(num(r, "iteration_time_s")),
    );
    row(
        &mut out,
        "tokens/s",
        format!("{:.0}", num(r, "tokens_per_s")),
    );
    row(
        &mut out,
        "TFLOP/s per GPU",
        format!(
            "{:.1} model ({:.1}% MFU), {:.1} hardware ({:.1}% HFU)",
            num(r, "tflops_per_gpu"),
            100.0 * num(r, "mfu"),
            num(r, "hardware_tflops_per_gpu"),
            100.0 * num(r, "hfu")
        ),
    );
    row(
        &mut out,
        "step breakdown",
        format!(
            "compute {} ({} of it from collectives slowing the kernels beside them), exposed \
             communication {}, pipeline bubble {}",
            seconds(num(r, "breakdown_s.compute")),
            seconds(num(r, "contention.compute_s")),
            seconds(num(r, "breakdown_s.exposed_communication")),
            seconds(num(r, "breakdown_s.pipeline_bubble"))
        ),
    );
    let fits = r["memory"]["fits"].as_bool().unwrap_or(false);
    row(
        &mut out,
        "memory per GPU",
        format!(
            "{} of {} ({})",
            gib(num(r, "memory.peak_bytes_per_gpu")),
            gib(num(r, "memory.capacity_bytes")),
            if fits { "fits" } else { "DOES NOT FIT" }
        ),
    );
    capacity_rows(&mut out, r);
    let f = &r["fidelity"];
    row(
        &mut out,
        "fidelity",
        format!(
            "compute {}, network {}; {}",
            f["compute"].as_str().unwrap_or("?"),
            f["network"].as_str().unwrap_or("?"),
            f["symmetry"].as_str().unwrap_or("")
        ),
    );
    assumption_rows(&mut out, r);
    row(
        &mut out,
        "simulated",
        format!(
            "{} events in {}",
            num(r, "sim.events"),
            seconds(num(r, "sim.wall_s"))
        ),
    );
    out
}

/// Training's energy, goodput, cost and time to train, where the scenario asked for them.
fn capacity_rows(out: &mut String, r: &Value) {
    if r["energy"].is_object() {
        row(
            out,
            "energy",
            format!(
                "{:.0} W per GPU ({:.0}% busy), {:.2} kWh per million tokens",
                num(r, "energy.board_watts_per_gpu"),
                100.0 * num(r, "energy.gpu_busy_fraction"),
                num(r, "energy.kwh_per_million_tokens")
            ),
        );
    }
    if r["power"].is_object() {
        let limit = if r["power"]["limited"] == true {
            format!(
                "; held to {:.0} W, GEMMs at {:.0}% of their clock",
                num(r, "power.limit_watts"),
                100.0 * num(r, "power.gemm_clock")
            )
        } else {
            String::new()
        };
        row(
            out,
            "power",
            format!(
                "{:.0} W peak, {:.0} W mean, {:.0} W while waiting (per GPU, by kernel){limit}",
                num(r, "power.peak_watts"),
                num(r, "power.mean_watts"),
                num(r, "power.p1_watts"),
            ),
        );
    }
    if r["reliability"].is_object() {
        row(
            out,
            "goodput",
            format!(
                "{:.1}% with synchronous restart, {:.1}% fault-tolerant ({} replicas); {:.1} failures a day, checkpoint every {}",
                100.0 * num(r, "reliability.synchronous_restart.goodput"),
                100.0 * num(r, "reliability.fault_tolerant.goodput"),
                num(r, "reliability.fault_tolerant.replicas"),
                num(r, "reliability.failures_per_day"),
                seconds(num(r, "reliability.checkpoint_interval_s"))
            ),
        );
    }
    if r["cost"].is_object() && r["cost"]["usd_per_million_tokens"].is_number() {
        row(
            out,
            "cost",
            format!(
                "${:.2} of GPU time per million tokens",
                num(r, "cost.usd_per_million_tokens")
            ),
        );
    }
    if r["capacity"].is_object() {
        let c = &r["capacity"];
        let usd = c["cost_usd"]["total"]
            .as_f64()
            .map_or(String::new(), |u| format!(", ${:.2} M", u / 1e6));
        row(
            out,
            "to train",
            format!(
                "{:.3e} tokens in {:.1} days, {:.0} GPU-hours, {:.0} MWh{usd}",
                num(c, "tokens"),
                num(c, "time_to_train_days"),
                num(c, "gpu_hours"),
                num(c, "energy_kwh") / 1e3
            ),
        );
    }
}

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
fn render_serving(r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  [serving]",
        r["scenario"].as_str().unwrap_or("scenario")
    );
    let c = &r["cluster"];
    row(
        &mut out,
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
        placement_rows(&mut out, r);
    }
    let d = &r["disaggregation"];
    if !d.is_null() {
        row(
            &mut out,
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
        &mut out,
        "model",
        format!(
            "{} ({:.2} B parameters, {})",
            r["model"]["name"].as_str().unwrap_or("?"),
            num(r, "model.params") / 1e9,
            r["model"]["dtype"].as_str().unwrap_or("?")
        ),
    );
    row(
        &mut out,
        "requests",
        format!("{} of {} completed", r["requests_completed"], r["requests"]),
    );
    row(
        &mut out,
        "throughput",
        format!(
            "{:.2} requests/s, {:.0} output tokens/s",
            num(r, "throughput.requests_per_s"),
            num(r, "throughput.output_tokens_per_s")
        ),
    );
    for (label, key) in [
        ("TTFT", "ttft_s"),
        ("TPOT", "tpot_s"),
        ("end to end", "e2e_s"),
        ("queueing", "queueing_s"),
    ] {
        row(
            &mut out,
            label,
            format!(
                "mean {}, p50 {}, p90 {}, p99 {}",
                seconds(num(r, &format!("{key}.mean"))),
                seconds(num(r, &format!("{key}.p50"))),
                seconds(num(r, &format!("{key}.p90"))),
                seconds(num(r, &format!("{key}.p99")))
            ),
        );
    }
    row(
        &mut out,
        "SLO attainment",
        format!(
            "{:.1}% (goodput {:.2} requests/s)",
            100.0 * num(r, "slo.attainment"),
            num(r, "slo.goodput_requests_per_s")
        ),
    );
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
    row(
        &mut out,
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
    let fits = r["memory"]["fits"].as_bool().unwrap_or(false);
    if c["tp"].is_null() {
        for g in c["groups"].as_array().into_iter().flatten() {
            row(
                &mut out,
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
            &mut out,
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
    assumption_rows(&mut out, r);
    simulated_row(&mut out, r);
    out
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

/// The summary of a diffusion run.
fn render_diffusion(r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  [diffusion]",
        r["scenario"].as_str().unwrap_or("scenario")
    );
    let v = &r["video"];
    let p = &r["parallel"];
    let c = &r["cluster"];
    row(
        &mut out,
        "video",
        format!(
            "{} x {}, {} frames, {} steps{}: latent {} -> {} tokens",
            v["width"],
            v["height"],
            v["frames"],
            v["steps"],
            if v["guidance"] == true {
                ", classifier-free guidance"
            } else {
                ""
            },
            v["latent"]
                .as_array()
                .map(|l| l
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(" x "))
                .unwrap_or_default(),
            v["tokens"]
        ),
    );
    row(
        &mut out,
        "model",
        format!(
            "{} ({:.2} B parameters, {} blocks, {})",
            r["model"]["name"].as_str().unwrap_or("?"),
            num(r, "model.params") / 1e9,
            r["model"]["blocks"],
            r["model"]["dtype"].as_str().unwrap_or("?")
        ),
    );
    row(
        &mut out,
        "GPUs",
        format!(
            "{} a video on {}: ulysses {} x ring {} x pipefusion {} ({} patches) x cfg {} x tp {}{}; \
             {} video(s) at once",
            p["gpus_per_video"],
            c["gpu"].as_str().unwrap_or("?"),
            p["ulysses"],
            p["ring"],
            p["pipefusion"],
            p["pipefusion_patches"],
            p["cfg"],
            p["tp"],
            if p["vae_parallel"] == true {
                ", parallel VAE"
            } else {
                ""
            },
            p["videos_at_once"]
        ),
    );
    let q = &r["serving"];
    if q.is_object() {
        let sizes: Vec<String> = q["videos"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| {
                format!(
                    "{}x{}x{} ({} requests, {} each)",
                    v["width"],
                    v["height"],
                    v["frames"],
                    v["requests"],
                    seconds(v["latency_s"].as_f64().unwrap_or(0.0))
                )
            })
            .collect();
        row(
            &mut out,
            "serving",
            format!(
                "{} requests on {} groups, {}: {}",
                q["requests"],
                q["groups"],
                q["scheduler"].as_str().unwrap_or("?"),
                sizes.join(", ")
            ),
        );
        for (label, key) in [("latency", "latency_s"), ("queueing", "queueing_s")] {
            row(
                &mut out,
                label,
                format!(
                    "mean {}, p50 {}, p90 {}, p99 {}",
                    seconds(num(q, &format!("{key}.mean"))),
                    seconds(num(q, &format!("{key}.p50"))),
                    seconds(num(q, &format!("{key}.p90"))),
                    seconds(num(q, &format!("{key}.p99")))
                ),
            );
        }
        row(
            &mut out,
            "throughput",
            format!("{:.1} videos/hour", num(r, "videos_per_hour")),
        );
        row(
            &mut out,
            "first video",
            format!("{} a denoising step", seconds(num(r, "denoise_step_s"))),
        );
    } else {
        row(
            &mut out,
            "latency",
            format!(
                "{} a video, {} a denoising step, {:.1} videos/hour",
                seconds(num(r, "latency_s")),
                seconds(num(r, "denoise_step_s")),
                num(r, "videos_per_hour")
            ),
        );
    }
    let b = |k: &str| seconds(num(r, &format!("breakdown_s.{k}")));
    row(
        &mut out,
        "breakdown",
        format!(
            "text encode {}, denoise {} (compute {}, communication {} of which exposed {}, \
             pipeline wait {}), VAE decode {}",
            b("text_encode"),
            b("denoise"),
            b("denoise_compute"),
            b("communication"),
            b("exposed_communication"),
            b("pipeline_wait"),
            b("vae_decode")
        ),
    );
    row(
        &mut out,
        "TFLOP/s per GPU",
        format!("{:.1} while denoising", num(r, "tflops_per_gpu")),
    );
    let m = |k: &str| gib(num(r, &format!("memory.{k}")));
    row(
        &mut out,
        "memory per GPU",
        format!(
            "{} of {} ({}): denoiser weights {}, encoders and VAE {}, denoising activations {}, \
             VAE activations {}",
            m("peak_bytes_per_gpu"),
            m("capacity_bytes"),
            if r["memory"]["fits"] == true {
                "fits"
            } else {
                "DOES NOT FIT"
            },
            m("weights_bytes_per_gpu"),
            m("encoder_and_vae_weights_bytes_per_gpu"),
            m("denoise_activation_bytes_per_gpu"),
            m("vae_activation_bytes_per_gpu")
        ),
    );
    assumption_rows(&mut out, r);
    row(
        &mut out,
        "simulated",
        format!(
            "{} operations in {}",
            num(r, "sim.ops"),
            seconds(num(r, "sim.wall_s"))
        ),
    );
    out
}

/// The summary of a collective scenario.
fn render_collective(r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  [collective]",
        r["scenario"].as_str().unwrap_or("scenario")
    );
    row(
        &mut out,
        "operation",
        format!(
            "{} of {} B over {} of {} x {} ({})",
            r["op"].as_str().unwrap_or("?"),
            num(r, "size_bytes"),
            num(r, "ranks"),
            num(r, "cluster.gpus"),
            r["cluster"]["gpu"].as_str().unwrap_or("?"),
            nodes_of(r)
        ),
    );
    row(
        &mut out,
        "time",
        format!(
            "{} ({}, {}): algbw {:.2} GB/s, busbw {:.2} GB/s",
            seconds(num(r, "time_s")),
            r["algorithm"].as_str().unwrap_or("?"),
            r["protocol"].as_str().unwrap_or("?"),
            num(r, "algbw_GBps"),
            num(r, "busbw_GBps")
        ),
    );
    if r["uncompressed"].is_object() {
        row(
            &mut out,
            "uncompressed",
            format!(
                "{} ({}): compression {:.2}x faster at ratio {}",
                seconds(num(r, "uncompressed.time_s")),
                r["uncompressed"]["algorithm"].as_str().unwrap_or("?"),
                num(r, "speedup"),
                num(r, "compression.ratio")
            ),
        );
    }
    row(
        &mut out,
        "fidelity",
        format!(
            "network {} on {}",
            r["fidelity"]["network"].as_str().unwrap_or("?"),
            r["fidelity"]["topology"].as_str().unwrap_or("?")
        ),
    );
    assumption_rows(&mut out, r);
    out
}

fn render_federated(r: &Value) -> String {
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
