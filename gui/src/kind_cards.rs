//! The cards of a serving, diffusion, collective or federated run, each in its own terms: a
//! fleet's throughput, latencies against its SLO, replicas and KV cache; a video's latency,
//! denoising step, videos per hour, where its time goes and its memory; a collective's time,
//! bandwidths and algorithm; federated rounds' time, rate, uploads and stragglers.
//!
//! [`KindCards::of`] reads the typed report into plain fields (testable without a window);
//! [`show`] lays them out with the training cards' pieces (`cards.rs`). A figure the report does
//! not give (a mixed fleet's memory per GPU) shows as "—"; one with an interval (`band.rs`) has
//! it under. Ignored: latency distributions and per-replica curves (the metrics tab draws them).

use crate::band::Bands;
use crate::cards::{BAD, GOOD, banded, card, dash, legend, stacked_bar};
use crate::metrics::{DIFFUSION_PHASES, Phase};
use crate::units;
use clustersim::report::any::Report;
use clustersim::report::diffusion::{DiffusionReport, Phases};
use egui::{Color32, RichText, Ui};

/// The cards of a run that is not a training step.
#[derive(Clone, Debug, PartialEq)]
pub enum KindCards {
    Serving(Serving),
    Diffusion(Diffusion),
    Collective(Collective),
    Federated(Federated),
}

/// Federated training's figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Federated {
    pub round_p50: Option<f64>,
    pub round_p90: Option<f64>,
    pub rounds_per_hour: Option<f64>,
    pub rounds: Option<f64>,
    pub rounds_succeeded: Option<f64>,
    pub upload_per_device: Option<f64>,
    pub upload_per_round: Option<f64>,
    pub device_p50: Option<f64>,
    pub stragglers_dropped: Option<f64>,
    pub dropouts: Option<f64>,
    pub selected_per_round: Option<f64>,
}

/// A fleet's figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Serving {
    pub requests_per_s: Option<f64>,
    pub output_tokens_per_s: Option<f64>,
    pub ttft_p50: Option<f64>,
    pub ttft_p99: Option<f64>,
    pub tpot_p50: Option<f64>,
    pub tpot_p99: Option<f64>,
    pub e2e_p50: Option<f64>,
    pub e2e_p99: Option<f64>,
    pub attainment: Option<f64>,
    pub goodput: Option<f64>,
    pub completed: Option<f64>,
    pub requests: Option<f64>,
    pub replicas: Option<u64>,
    pub tp: Option<u64>,
    pub pp: Option<u64>,
    pub kv_peak: Option<f64>,
    pub preemptions: Option<f64>,
    pub weights_bytes: Option<f64>,
    pub kv_bytes: Option<f64>,
    pub capacity_bytes: Option<f64>,
    pub fits: Option<bool>,
}

/// A video's figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Diffusion {
    pub latency_s: Option<f64>,
    pub step_s: Option<f64>,
    pub steps: Option<u64>,
    pub videos_per_hour: Option<f64>,
    pub tflops_per_gpu: Option<f64>,
    pub gpus_per_video: Option<u64>,
    pub peak_bytes: Option<f64>,
    pub capacity_bytes: Option<f64>,
    pub fits: Option<bool>,
    /// Text encoding, denoising compute, exposed communication, ...: seconds of one video, one
    /// after another, with the Metrics tab's colours.
    pub time_parts: Vec<(&'static str, f64, Color32)>,
    /// The phase whose memory is the peak (`encode`, `denoise`, `decode`), and what it holds:
    /// weights and that phase's activations, bytes per GPU.
    pub peak_phase: Option<String>,
    pub memory_parts: Vec<(&'static str, f64, Color32)>,
}

/// A collective's figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Collective {
    pub op: Option<String>,
    pub size_bytes: Option<f64>,
    pub ranks: Option<u64>,
    pub time_s: Option<f64>,
    pub busbw: Option<f64>,
    pub algbw: Option<f64>,
    pub algorithm: Option<String>,
    pub protocol: Option<String>,
    /// Time against the same collective uncompressed (compressed runs only).
    pub speedup: Option<f64>,
}

/// What adds to a video's latency beside the Metrics tab's phases: moving offloaded weights.
const OFFLOAD: Phase = Phase {
    seconds: |b| b.offload,
    name: "offload",
    color: Color32::from_rgb(200, 90, 140),
    beside: false,
};

/// The colours of what a GPU holds: the denoiser's weights, the encoder's and VAE's, the
/// denoiser's activations, the VAE's.
const HELD_COLORS: [Color32; 4] = [
    Color32::from_rgb(95, 110, 200),
    Color32::from_rgb(150, 90, 190),
    Color32::from_rgb(66, 133, 244),
    Color32::from_rgb(60, 170, 90),
];

impl KindCards {
    /// The cards of `report`'s kind, or None for a training run (and any kind without cards
    /// here).
    pub fn of(report: &Report) -> Option<KindCards> {
        Some(match report {
            Report::Serving(r) => KindCards::Serving(Serving {
                requests_per_s: Some(r.throughput.requests_per_s),
                output_tokens_per_s: Some(r.throughput.output_tokens_per_s),
                ttft_p50: r.ttft_s.p50,
                ttft_p99: r.ttft_s.p99,
                tpot_p50: r.tpot_s.p50,
                tpot_p99: r.tpot_s.p99,
                e2e_p50: r.e2e_s.p50,
                e2e_p99: r.e2e_s.p99,
                attainment: Some(r.slo.attainment),
                goodput: Some(r.slo.goodput_requests_per_s),
                completed: Some(r.requests_completed as f64),
                requests: Some(r.requests as f64),
                replicas: Some(u64::from(r.cluster.replicas)),
                tp: r.cluster.tp.map(u64::from),
                pp: r.cluster.pp.map(u64::from),
                kv_peak: Some(r.kv_cache.peak_use),
                preemptions: Some(r.kv_cache.preemptions as f64),
                weights_bytes: r.memory.weights_bytes_per_gpu.map(|b| b as f64),
                kv_bytes: r.memory.kv_bytes_per_gpu.map(|b| b as f64),
                capacity_bytes: r.memory.capacity_bytes.map(|b| b as f64),
                fits: Some(r.memory.fits),
            }),
            Report::Diffusion(r) => KindCards::Diffusion(diffusion_cards(r)),
            Report::Federated(r) => KindCards::Federated(Federated {
                round_p50: r.round_time_s.p50,
                round_p90: r.round_time_s.p90,
                rounds_per_hour: Some(r.rounds_per_hour),
                rounds: Some(r.rounds as f64),
                rounds_succeeded: Some(r.rounds_succeeded as f64),
                upload_per_device: Some(r.upload_bytes_per_device),
                upload_per_round: Some(r.upload_bytes_per_round),
                device_p50: r.device_time_s.total.p50,
                stragglers_dropped: Some(r.stragglers_dropped as f64),
                dropouts: Some(r.dropouts as f64),
                selected_per_round: Some(r.selected_per_round),
            }),
            Report::Collective(r) => KindCards::Collective(Collective {
                op: Some(r.op.clone()),
                size_bytes: Some(r.size_bytes as f64),
                ranks: Some(u64::from(r.ranks)),
                time_s: Some(r.time_s),
                busbw: Some(r.busbw_gbps),
                algbw: Some(r.algbw_gbps),
                algorithm: Some(r.algorithm.clone()),
                protocol: Some(r.protocol.clone()),
                speedup: r.speedup,
            }),
            Report::Training(_) | Report::Kernels(_) | Report::Cluster(_) => return None,
        })
    }
}

/// A video's cards: its time by phase, one after another, and what a GPU holds at its peak.
fn diffusion_cards(r: &DiffusionReport) -> Diffusion {
    let phase = peak_phase(&r.memory.phase_bytes_per_gpu);
    let m = &r.memory;
    let held = [
        (m.weights_bytes_per_gpu, "denoiser weights", None),
        (
            m.encoder_and_vae_weights_bytes_per_gpu,
            "encoder and VAE weights",
            None,
        ),
        (
            m.denoise_activation_bytes_per_gpu,
            "denoiser activations",
            Some("denoise"),
        ),
        (
            m.vae_activation_bytes_per_gpu,
            "VAE activations",
            Some("decode"),
        ),
    ];
    Diffusion {
        latency_s: Some(r.latency_s),
        step_s: Some(r.denoise_step_s),
        steps: Some(u64::from(r.video.steps)),
        videos_per_hour: Some(r.videos_per_hour),
        tflops_per_gpu: Some(r.tflops_per_gpu),
        gpus_per_video: Some(u64::from(r.parallel.gpus_per_video)),
        peak_bytes: Some(m.peak_bytes_per_gpu),
        capacity_bytes: Some(m.capacity_bytes as f64),
        fits: Some(m.fits),
        time_parts: DIFFUSION_PHASES
            .iter()
            .filter(|p| !p.beside)
            .chain([&OFFLOAD])
            .map(|p| (p.name, (p.seconds)(&r.breakdown_s), p.color))
            .filter(|p| p.1 > 0.0)
            .collect(),
        memory_parts: held
            .iter()
            .zip(HELD_COLORS)
            .filter(|((_, _, lives), _)| lives.is_none() || *lives == Some(phase))
            .map(|(&(bytes, name, _), color)| (name, bytes, color))
            .filter(|p| p.1 > 0.0)
            .collect(),
        peak_phase: Some(phase.to_string()),
    }
}

/// The phase of a video whose memory per GPU is the largest (the first of equals).
fn peak_phase(p: &Phases) -> &'static str {
    [
        ("encode", p.encode),
        ("denoise", p.denoise),
        ("decode", p.decode),
    ]
    .into_iter()
    .fold(
        ("encode", f64::MIN),
        |best, x| if x.1 > best.1 { x } else { best },
    )
    .0
}

/// Lays out the cards of a serving, diffusion or collective run.
pub fn show(ui: &mut Ui, k: &KindCards, gpus: Option<u64>, gpu: Option<&str>, b: &Bands) {
    match k {
        KindCards::Serving(s) => serving(ui, s, gpus, gpu, b),
        KindCards::Diffusion(d) => diffusion(ui, d, gpu, b),
        KindCards::Collective(c) => collective(ui, c, b),
        KindCards::Federated(f) => federated(ui, f),
    }
}

fn federated(ui: &mut Ui, f: &Federated) {
    ui.columns(4, |cols| {
        card(
            &mut cols[0],
            "Round time, p50",
            dash(f.round_p50.map(units::duration)),
            RichText::new(format!("p90 {}", dash(f.round_p90.map(units::duration)))),
        );
        let failed = match (f.rounds, f.rounds_succeeded) {
            (Some(n), Some(ok)) if ok < n => {
                RichText::new(format!("{:.0} of {n:.0} rounds failed", n - ok)).color(BAD)
            }
            (Some(n), _) => RichText::new(format!("{n:.0} rounds simulated")),
            _ => RichText::new(""),
        };
        card(
            &mut cols[1],
            "Rounds per hour",
            dash(f.rounds_per_hour.map(|r| format!("{r:.1}"))),
            failed,
        );
        card(
            &mut cols[2],
            "Upload per device",
            dash(f.upload_per_device.map(units::bytes)),
            RichText::new(format!(
                "{} a round",
                dash(f.upload_per_round.map(units::bytes))
            )),
        );
        card(
            &mut cols[3],
            "Stragglers dropped",
            dash(f.stragglers_dropped.map(|n| format!("{n:.0}"))),
            RichText::new(format!(
                "{} dropped out · {} selected a round · device p50 {}",
                dash(f.dropouts.map(|n| format!("{n:.0}"))),
                dash(f.selected_per_round.map(|n| format!("{n:.0}"))),
                dash(f.device_p50.map(units::duration))
            )),
        );
    });
}

fn p99(v: Option<f64>) -> RichText {
    RichText::new(format!("p99 {}", dash(v.map(units::duration))))
}

fn serving(ui: &mut Ui, s: &Serving, gpus: Option<u64>, gpu: Option<&str>, b: &Bands) {
    let rps = |r: f64| format!("{r:.2} requests/s");
    let tokens = |t: f64| format!("{} tokens/s", units::si(t, ""));
    ui.columns(4, |cols| {
        banded(
            &mut cols[0],
            "Throughput",
            dash(s.requests_per_s.map(rps)),
            b.line("throughput.requests_per_s", rps)
                .into_iter()
                .chain(b.line("throughput.output_tokens_per_s", tokens)),
            RichText::new(format!(
                "{} output tokens/s",
                dash(s.output_tokens_per_s.map(|t| units::si(t, "")))
            )),
        );
        banded(
            &mut cols[1],
            "Time to first token, p50",
            dash(s.ttft_p50.map(units::duration)),
            b.line("ttft_s.p50", units::duration),
            p99(s.ttft_p99),
        );
        banded(
            &mut cols[2],
            "Time per output token, p50",
            dash(s.tpot_p50.map(units::duration)),
            b.line("tpot_s.p50", units::duration),
            p99(s.tpot_p99),
        );
        let sub = match (s.completed, s.requests, s.goodput) {
            (Some(c), Some(n), _) if c < n => {
                RichText::new(format!("{c:.0} of {n:.0} requests completed")).color(BAD)
            }
            (_, _, Some(g)) => RichText::new(format!("goodput {g:.2} requests/s")),
            _ => RichText::new(""),
        };
        let attainment = s.attainment.map(|a| {
            let text = units::percent(a);
            if a >= 0.9 {
                text
            } else {
                format!("{text} (below 90%)")
            }
        });
        card(&mut cols[3], "SLO attainment", dash(attainment), sub);
    });
    ui.add_space(4.0);
    ui.columns(4, |cols| {
        let shape = match (s.replicas, s.tp, s.pp) {
            (Some(r), Some(tp), Some(pp)) if pp > 1 => Some(format!("{r} × TP{tp} PP{pp}")),
            (Some(r), Some(tp), _) => Some(format!("{r} × TP{tp}")),
            _ => None,
        };
        card(
            &mut cols[0],
            "Replicas",
            dash(shape),
            match (gpus, gpu) {
                (Some(n), Some(g)) => RichText::new(format!("on {n} × {g}")),
                _ => RichText::new(""),
            },
        );
        card(
            &mut cols[1],
            "End-to-end latency, p50",
            dash(s.e2e_p50.map(units::duration)),
            p99(s.e2e_p99),
        );
        card(
            &mut cols[2],
            "KV cache peak",
            dash(s.kv_peak.map(units::percent)),
            RichText::new(match s.preemptions {
                Some(p) if p > 0.0 => format!("{p:.0} preemptions"),
                Some(_) => "no preemption".to_string(),
                None => String::new(),
            }),
        );
        let memory = match (s.weights_bytes, s.kv_bytes) {
            (Some(w), Some(kv)) => Some(format!("{} + {} KV", units::bytes(w), units::bytes(kv))),
            (w, _) => w.map(units::bytes),
        };
        card(
            &mut cols[3],
            "Memory per GPU",
            dash(memory),
            fit_line(s.fits, s.capacity_bytes),
        );
    });
}

fn fit_line(fits: Option<bool>, capacity: Option<f64>) -> RichText {
    let of = capacity
        .map(|c| format!(" in {}", units::bytes(c)))
        .unwrap_or_default();
    match fits {
        Some(true) => RichText::new(format!("fits{of}")).color(GOOD),
        Some(false) => RichText::new(format!("does not fit{of}"))
            .color(BAD)
            .strong(),
        None => RichText::new(""),
    }
}

fn diffusion(ui: &mut Ui, d: &Diffusion, gpu: Option<&str>, b: &Bands) {
    let per_hour = |v: f64| format!("{v:.1}");
    ui.columns(4, |cols| {
        banded(
            &mut cols[0],
            "Video latency",
            dash(d.latency_s.map(units::duration)),
            b.line("latency_s", units::duration),
            match (d.gpus_per_video, gpu) {
                (Some(n), Some(g)) => RichText::new(format!("one video on {n} × {g}")),
                _ => RichText::new(""),
            },
        );
        card(
            &mut cols[1],
            "Denoising step",
            dash(d.step_s.map(units::duration)),
            RichText::new(d.steps.map(|s| format!("{s} steps")).unwrap_or_default()),
        );
        banded(
            &mut cols[2],
            "Videos per hour",
            dash(d.videos_per_hour.map(per_hour)),
            b.line("videos_per_hour", per_hour),
            RichText::new(
                d.tflops_per_gpu
                    .map(|t| format!("{t:.0} TFLOP/s per GPU"))
                    .unwrap_or_default(),
            ),
        );
        card(
            &mut cols[3],
            "Memory peak per GPU",
            dash(d.peak_bytes.map(units::bytes)),
            fit_line(d.fits, d.capacity_bytes),
        );
    });
    ui.add_space(4.0);
    ui.columns(2, |cols| {
        let ui = &mut cols[0];
        ui.strong("Where a video's time goes");
        let parts = &d.time_parts;
        let total = d
            .latency_s
            .unwrap_or_else(|| parts.iter().map(|p| p.1).sum());
        stacked_bar(ui, parts, total, None);
        legend(ui, parts, total, units::duration);

        let ui = &mut cols[1];
        ui.strong(match &d.peak_phase {
            Some(p) => format!("Memory per GPU at peak ({p} phase)"),
            None => "Memory per GPU at peak".to_string(),
        });
        let parts = &d.memory_parts;
        let sum: f64 = parts.iter().map(|p| p.1).sum();
        let scale = d.capacity_bytes.map_or(sum, |c| c.max(sum));
        let marker = d
            .capacity_bytes
            .map(|c| (c, if sum <= c { GOOD } else { BAD }));
        stacked_bar(ui, parts, scale, marker);
        legend(ui, parts, sum, units::bytes);
    });
}

fn collective(ui: &mut Ui, c: &Collective, b: &Bands) {
    let gbps = |x: f64| format!("{x:.1} GB/s");
    ui.columns(4, |cols| {
        banded(
            &mut cols[0],
            "Time",
            dash(c.time_s.map(units::duration)),
            b.line("time_s", units::duration),
            RichText::new(format!(
                "{} of {} on {} ranks",
                c.op.as_deref().unwrap_or("—"),
                dash(c.size_bytes.map(units::bytes)),
                dash(c.ranks.map(|r| r.to_string()))
            )),
        );
        banded(
            &mut cols[1],
            "Bus bandwidth",
            dash(c.busbw.map(gbps)),
            b.line("busbw_GBps", gbps),
            RichText::new("as nccl-tests reports it"),
        );
        card(
            &mut cols[2],
            "Algorithm bandwidth",
            dash(c.algbw.map(gbps)),
            RichText::new("size over time"),
        );
        let sub = match c.speedup {
            Some(x) => RichText::new(format!("{x:.2}× the uncompressed speed"))
                .color(if x >= 1.0 { GOOD } else { BAD }),
            None => RichText::new(c.protocol.clone().unwrap_or_default()),
        };
        card(&mut cols[3], "Algorithm", dash(c.algorithm.clone()), sub);
    });
}

#[cfg(test)]
mod tests;
