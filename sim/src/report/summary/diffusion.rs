//! The summary of a diffusion run: the video, its latency and breakdown, memory, the queue.

use super::*;

/// The summary of a diffusion run.
pub(super) fn render_diffusion(r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  [diffusion]",
        r["scenario"].as_str().unwrap_or("scenario")
    );
    video_rows(&mut out, r);
    let q = &r["serving"];
    if q.is_object() {
        queue_rows(&mut out, r, q);
    } else {
        row(
            &mut out,
            "latency",
            format!(
                "{}{} a video, {} a denoising step, {:.1} videos/hour",
                seconds(num(r, "latency_s")),
                band(r, "latency_s", seconds),
                seconds(num(r, "denoise_step_s")),
                num(r, "videos_per_hour")
            ),
        );
    }
    breakdown_rows(&mut out, r);
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

/// The video, the model and the GPUs a video runs on.
fn video_rows(out: &mut String, r: &Value) {
    let v = &r["video"];
    let p = &r["parallel"];
    let c = &r["cluster"];
    row(
        out,
        "video",
        format!(
            "{} x {}, {} frames, {} steps{}: latent {} -> {} tokens",
            v["width"],
            v["height"],
            v["frames"],
            v["steps"],
            match (v["guidance"] == true, v["branches"].as_u64()) {
                (false, _) => String::new(),
                (true, Some(n)) if n != 2 => format!(", guidance: {n} branches a step"),
                (true, _) => ", classifier-free guidance".into(),
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
        out,
        "model",
        format!(
            "{} ({}{:.2} B parameters, {} blocks, {})",
            r["model"]["name"].as_str().unwrap_or("?"),
            match r["model"]["experts"].as_u64() {
                Some(n) if n > 1 => format!("{n} experts of "),
                _ => String::new(),
            },
            num(r, "model.params") / 1e9,
            r["model"]["blocks"],
            r["model"]["dtype"].as_str().unwrap_or("?")
        ),
    );
    row(
        out,
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
}

/// A queue of videos `q`: its mix, latency and queueing percentiles, and throughput.
fn queue_rows(out: &mut String, r: &Value, q: &Value) {
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
        out,
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
            out,
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
        out,
        "throughput",
        format!("{:.1} videos/hour", num(r, "videos_per_hour")),
    );
    row(
        out,
        "first video",
        format!("{} a denoising step", seconds(num(r, "denoise_step_s"))),
    );
}

/// Where a video's time goes, the denoiser's TFLOP/s and memory per GPU.
fn breakdown_rows(out: &mut String, r: &Value) {
    let b = |k: &str| seconds(num(r, &format!("breakdown_s.{k}")));
    row(
        out,
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
        out,
        "TFLOP/s per GPU",
        format!("{:.1} while denoising", num(r, "tflops_per_gpu")),
    );
    let m = |k: &str| gib(num(r, &format!("memory.{k}")));
    row(
        out,
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
}
