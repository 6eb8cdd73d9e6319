//! The summary of a diffusion run: the video, its latency and breakdown, memory, the queue; read
//! from the typed report (`report::diffusion`), so a key it lacks is an error, not a blank.

use super::*;
use crate::report::diffusion::{DiffusionReport, Queue};

/// The summary of a diffusion run; `r` is its JSON, for the sections kept untyped.
pub(super) fn render_diffusion(d: &DiffusionReport, r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}  [diffusion]", d.scenario);
    video_rows(&mut out, d);
    if let Some(q) = &d.serving {
        queue_rows(&mut out, d, q);
    } else {
        row(
            &mut out,
            "latency",
            format!(
                "{}{} a video, {} a denoising step, {:.1} videos/hour",
                seconds(d.latency_s),
                band(r, "latency_s", seconds),
                seconds(d.denoise_step_s),
                d.videos_per_hour
            ),
        );
    }
    breakdown_rows(&mut out, d);
    assumption_rows(&mut out, r);
    row(
        &mut out,
        "simulated",
        format!(
            "{} operations in {}",
            d.sim.ops.unwrap_or(0),
            seconds(d.sim.wall_s.unwrap_or(f64::NAN))
        ),
    );
    out
}

/// The video, the model and the GPUs a video runs on.
fn video_rows(out: &mut String, d: &DiffusionReport) {
    let (v, p, m) = (&d.video, &d.parallel, &d.model);
    row(
        out,
        "video",
        format!(
            "{} x {}, {} frames, {} steps{}: latent {} -> {} tokens",
            v.width,
            v.height,
            v.frames,
            v.steps,
            match (v.guidance, v.branches) {
                (false, _) => String::new(),
                (true, 2) => ", classifier-free guidance".into(),
                (true, n) => format!(", guidance: {n} branches a step"),
            },
            v.latent.map(|x| x.to_string()).join(" x "),
            v.tokens
        ),
    );
    row(
        out,
        "model",
        format!(
            "{} ({}{:.2} B parameters, {} blocks, {})",
            m.name,
            if m.experts > 1 {
                format!("{} experts of ", m.experts)
            } else {
                String::new()
            },
            m.params as f64 / 1e9,
            m.blocks,
            m.dtype
        ),
    );
    row(
        out,
        "GPUs",
        format!(
            "{} a video on {}: ulysses {} x ring {} x pipefusion {} ({} patches) x cfg {} x tp {}{}; \
             {} video(s) at once",
            p.gpus_per_video,
            d.cluster.gpu,
            p.ulysses,
            p.ring,
            p.pipefusion,
            p.pipefusion_patches,
            p.cfg,
            p.tp,
            if p.vae_parallel { ", parallel VAE" } else { "" },
            p.videos_at_once
        ),
    );
}

/// A queue of videos `q`: its mix, latency and queueing percentiles, and throughput.
fn queue_rows(out: &mut String, d: &DiffusionReport, q: &Queue) {
    let sizes: Vec<String> = q
        .videos
        .iter()
        .map(|v| {
            format!(
                "{}x{}x{} ({} requests, {} each)",
                v.width,
                v.height,
                v.frames,
                v.requests,
                seconds(v.latency_s)
            )
        })
        .collect();
    row(
        out,
        "serving",
        format!(
            "{} requests on {} groups, {}: {}",
            q.requests,
            q.groups,
            q.scheduler,
            sizes.join(", ")
        ),
    );
    for (label, p) in [("latency", &q.latency_s), ("queueing", &q.queueing_s)] {
        let s = |x: Option<f64>| seconds(x.unwrap_or(f64::NAN));
        row(
            out,
            label,
            format!(
                "mean {}, p50 {}, p90 {}, p99 {}",
                s(p.mean),
                s(p.p50),
                s(p.p90),
                s(p.p99)
            ),
        );
    }
    row(
        out,
        "throughput",
        format!("{:.1} videos/hour", d.videos_per_hour),
    );
    row(
        out,
        "first video",
        format!("{} a denoising step", seconds(d.denoise_step_s)),
    );
}

/// Where a video's time goes, the denoiser's TFLOP/s and memory per GPU.
fn breakdown_rows(out: &mut String, d: &DiffusionReport) {
    let b = &d.breakdown_s;
    row(
        out,
        "breakdown",
        format!(
            "text encode {}, denoise {} (compute {}, communication {} of which exposed {}, \
             pipeline wait {}), VAE decode {}",
            seconds(b.text_encode),
            seconds(b.denoise),
            seconds(b.denoise_compute),
            seconds(b.communication),
            seconds(b.exposed_communication),
            seconds(b.pipeline_wait),
            seconds(b.vae_decode)
        ),
    );
    row(
        out,
        "TFLOP/s per GPU",
        format!("{:.1} while denoising", d.tflops_per_gpu),
    );
    let m = &d.memory;
    row(
        out,
        "memory per GPU",
        format!(
            "{} of {} ({}): denoiser weights {}, encoders and VAE {}, denoising activations {}, \
             VAE activations {}",
            gib(m.peak_bytes_per_gpu),
            gib(m.capacity_bytes as f64),
            if m.fits { "fits" } else { "DOES NOT FIT" },
            gib(m.weights_bytes_per_gpu),
            gib(m.encoder_and_vae_weights_bytes_per_gpu),
            gib(m.denoise_activation_bytes_per_gpu),
            gib(m.vae_activation_bytes_per_gpu)
        ),
    );
}
