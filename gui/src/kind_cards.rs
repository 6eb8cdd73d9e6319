//! The cards of a serving, diffusion, collective or federated run, each in its own terms: a
//! fleet's throughput, latencies against its SLO, replicas and KV cache; a video's latency,
//! denoising step, videos per hour, where its time goes and its memory; a collective's time,
//! bandwidths and algorithm; federated rounds' time, rate, uploads and stragglers.
//!
//! [`KindCards::from_report`] reads the report JSON into plain fields (testable without a
//! window); [`show`] lays them out with the training cards' pieces (`cards.rs`). A key the
//! report lacks shows as "—"; a figure with an interval (`band.rs`) has it under. Ignored: latency distributions and per-replica curves (the
//! metrics tab draws those).

use crate::band::Bands;
use crate::cards::{BAD, GOOD, banded, card, dash, legend, stacked_bar};
use crate::metrics::DIFFUSION_PHASES;
use crate::units;
use egui::{Color32, RichText, Ui};
use serde_json::Value;

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
const OFFLOAD: (&str, &str, Color32) = ("offload", "offload", Color32::from_rgb(200, 90, 140));

/// `(report key under memory, label, colour, phase)`: what a GPU holds, weights first; each
/// activation with the phase it lives in.
type MemoryPart = (&'static str, &'static str, Color32, Option<&'static str>);

const MEMORY_PARTS: [MemoryPart; 4] = [
    (
        "weights_bytes_per_gpu",
        "denoiser weights",
        Color32::from_rgb(95, 110, 200),
        None,
    ),
    (
        "encoder_and_vae_weights_bytes_per_gpu",
        "encoder and VAE weights",
        Color32::from_rgb(150, 90, 190),
        None,
    ),
    (
        "denoise_activation_bytes_per_gpu",
        "denoiser activations",
        Color32::from_rgb(66, 133, 244),
        Some("denoise"),
    ),
    (
        "vae_activation_bytes_per_gpu",
        "VAE activations",
        Color32::from_rgb(60, 170, 90),
        Some("decode"),
    ),
];

impl KindCards {
    /// The cards of `r`'s kind, or None for a training run (and any kind without cards here).
    pub fn from_report(r: &Value) -> Option<KindCards> {
        let f = |p: &str| r.pointer(p).and_then(Value::as_f64);
        let u = |p: &str| r.pointer(p).and_then(Value::as_u64);
        let s = |p: &str| r.pointer(p).and_then(Value::as_str).map(str::to_string);
        Some(match r["kind"].as_str()? {
            "serving" => KindCards::Serving(Serving {
                requests_per_s: f("/throughput/requests_per_s"),
                output_tokens_per_s: f("/throughput/output_tokens_per_s"),
                ttft_p50: f("/ttft_s/p50"),
                ttft_p99: f("/ttft_s/p99"),
                tpot_p50: f("/tpot_s/p50"),
                tpot_p99: f("/tpot_s/p99"),
                e2e_p50: f("/e2e_s/p50"),
                e2e_p99: f("/e2e_s/p99"),
                attainment: f("/slo/attainment"),
                goodput: f("/slo/goodput_requests_per_s"),
                completed: f("/requests_completed"),
                requests: f("/requests"),
                replicas: u("/cluster/replicas"),
                tp: u("/cluster/tp"),
                pp: u("/cluster/pp"),
                kv_peak: f("/kv_cache/peak_use"),
                preemptions: f("/kv_cache/preemptions"),
                weights_bytes: f("/memory/weights_bytes_per_gpu"),
                kv_bytes: f("/memory/kv_bytes_per_gpu"),
                capacity_bytes: f("/memory/capacity_bytes"),
                fits: r.pointer("/memory/fits").and_then(Value::as_bool),
            }),
            "diffusion" => KindCards::Diffusion(Diffusion {
                latency_s: f("/latency_s"),
                step_s: f("/denoise_step_s"),
                steps: u("/video/steps"),
                videos_per_hour: f("/videos_per_hour"),
                tflops_per_gpu: f("/tflops_per_gpu"),
                gpus_per_video: u("/parallel/gpus_per_video"),
                peak_bytes: f("/memory/peak_bytes_per_gpu"),
                capacity_bytes: f("/memory/capacity_bytes"),
                fits: r.pointer("/memory/fits").and_then(Value::as_bool),
                time_parts: DIFFUSION_PHASES
                    .iter()
                    .filter(|p| p.0 != "communication")
                    .chain([&OFFLOAD])
                    .filter_map(|&(key, name, color)| {
                        let v = f(&format!("/breakdown_s/{key}"))?;
                        (v > 0.0).then_some((name, v, color))
                    })
                    .collect(),
                peak_phase: peak_phase(r),
                memory_parts: {
                    let phase = peak_phase(r);
                    MEMORY_PARTS
                        .iter()
                        .filter(|m| m.3.is_none() || m.3 == phase.as_deref())
                        .filter_map(|&(key, name, color, _)| {
                            let v = f(&format!("/memory/{key}"))?;
                            (v > 0.0).then_some((name, v, color))
                        })
                        .collect()
                },
            }),
            "federated" => KindCards::Federated(Federated {
                round_p50: f("/round_time_s/p50"),
                round_p90: f("/round_time_s/p90"),
                rounds_per_hour: f("/rounds_per_hour"),
                rounds: f("/rounds"),
                rounds_succeeded: f("/rounds_succeeded"),
                upload_per_device: f("/upload_bytes_per_device"),
                upload_per_round: f("/upload_bytes_per_round"),
                device_p50: f("/device_time_s/total/p50"),
                stragglers_dropped: f("/stragglers_dropped"),
                dropouts: f("/dropouts"),
                selected_per_round: f("/selected_per_round"),
            }),
            "collective" => KindCards::Collective(Collective {
                op: s("/op"),
                size_bytes: f("/size_bytes"),
                ranks: u("/ranks"),
                time_s: f("/time_s"),
                busbw: f("/busbw_GBps"),
                algbw: f("/algbw_GBps"),
                algorithm: s("/algorithm"),
                protocol: s("/protocol"),
                speedup: f("/speedup"),
            }),
            _ => return None,
        })
    }
}

/// The phase of a video whose memory per GPU is the largest (the first of equals).
fn peak_phase(r: &Value) -> Option<String> {
    let phases = r.pointer("/memory/phase_bytes_per_gpu")?.as_object()?;
    phases
        .iter()
        .filter_map(|(k, v)| Some((k, v.as_f64()?)))
        .fold(None, |best: Option<(&String, f64)>, (k, v)| match best {
            Some((_, b)) if b >= v => best,
            _ => Some((k, v)),
        })
        .map(|(k, _)| k.clone())
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
