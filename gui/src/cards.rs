//! The report as cards: step time, throughput, per-GPU FLOP rate, memory, where the step's time
//! goes, and how faithful the simulation was; for a cluster of jobs, a card per job (its step
//! alone and beside the others); a serving, diffusion or collective run's own (`kind_cards.rs`).
//! A headline figure the report's `uncertainty` covers has its interval under it (`band.rs`).
//!
//! [`Summary::from_report`] reads the report JSON into plain fields (testable without a window);
//! [`show`] lays them out. A key the report lacks shows as "—", never as an invented number.
//! Deliberately left out: the report's other keys (the CLI prints them all with `--json`),
//! comparisons between runs, and editing anything from here.

use crate::band::{self, Bands, Line};
use crate::kind_cards::{self, KindCards};
use crate::metrics::MEMORY_COLORS;
use crate::timeline::kind_color;
use crate::units;
use clustersim::exec::OpKind;
use egui::{Color32, CornerRadius, Frame, Margin, RichText, Sense, Stroke, Ui, vec2};
use serde_json::Value;

/// The parts of a report the cards show.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub scenario: Option<String>,
    pub gpu: Option<String>,
    pub gpus: Option<u64>,
    pub iteration_time_s: Option<f64>,
    pub tokens_per_s: Option<f64>,
    pub tflops_per_gpu: Option<f64>,
    pub hardware_tflops_per_gpu: Option<f64>,
    pub peak_tflops_per_gpu: Option<f64>,
    pub mfu: Option<f64>,
    pub hfu: Option<f64>,
    pub peak_bytes: Option<f64>,
    pub capacity_bytes: Option<f64>,
    pub fits: Option<bool>,
    /// What the peak is made of, in a stable order (weights first).
    pub memory_parts: Vec<(String, f64)>,
    /// Compute, exposed communication, pipeline bubble: seconds of the step.
    pub compute_s: Option<f64>,
    pub exposed_comm_s: Option<f64>,
    pub bubble_s: Option<f64>,
    /// `fidelity.*` as "key: value" pairs, in the report's order.
    pub fidelity: Vec<(String, String)>,
    pub events: Option<u64>,
    /// A cluster run's jobs (`jobs`); empty for any other run.
    pub jobs: Vec<JobCard>,
    /// A serving, diffusion or collective run's own cards (`kind_cards.rs`).
    pub kind_cards: Option<KindCards>,
    /// The headline figures' prediction intervals (`uncertainty`), if the report has them.
    pub bands: Bands,
}

/// One job of a cluster run: where it ran and what sharing the links cost it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobCard {
    pub name: String,
    pub servers: String,
    /// What the two durations are: a training step, a fleet's mean end-to-end latency, a video.
    pub what: &'static str,
    pub alone_s: Option<f64>,
    pub shared_s: Option<f64>,
    pub slowdown: Option<f64>,
}

impl JobCard {
    /// One entry of a cluster report's `jobs`, in its kind's terms.
    fn from_report(j: &Value) -> Self {
        let f = |p: &str| j.pointer(p).and_then(Value::as_f64);
        let (what, alone_s, shared_s) = match j["kind"].as_str() {
            Some("serving") => (
                "mean end-to-end latency",
                f("/latency/alone/e2e_s/mean"),
                f("/latency/shared/e2e_s/mean"),
            ),
            Some("diffusion") => ("video", f("/report/latency_s"), f("/report/latency_s")),
            _ => ("step", f("/step_s/alone"), f("/step_s/shared")),
        };
        JobCard {
            name: j["name"].as_str().unwrap_or("?").to_string(),
            servers: format!("{}-{}", j["servers"][0], j["servers"][1]),
            what,
            alone_s,
            shared_s,
            slowdown: f("/slowdown"),
        }
    }
}

impl Summary {
    pub fn from_report(r: &Value) -> Summary {
        let f = |p: &str| r.pointer(p).and_then(Value::as_f64);
        let memory_parts = crate::metrics::memory_breakdown(r);
        let fidelity = r
            .get("fidelity")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                        (k.clone(), v)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Summary {
            scenario: r
                .get("scenario")
                .and_then(Value::as_str)
                .map(str::to_string),
            gpu: r
                .pointer("/cluster/gpu")
                .and_then(Value::as_str)
                .map(str::to_string),
            gpus: r.pointer("/cluster/gpus").and_then(Value::as_u64),
            iteration_time_s: f("/iteration_time_s"),
            tokens_per_s: f("/tokens_per_s"),
            tflops_per_gpu: f("/tflops_per_gpu"),
            hardware_tflops_per_gpu: f("/hardware_tflops_per_gpu"),
            peak_tflops_per_gpu: f("/cluster/peak_tflops_per_gpu"),
            mfu: f("/mfu"),
            hfu: f("/hfu"),
            peak_bytes: f("/memory/peak_bytes_per_gpu"),
            capacity_bytes: f("/memory/capacity_bytes"),
            fits: r.pointer("/memory/fits").and_then(Value::as_bool),
            memory_parts,
            compute_s: f("/breakdown_s/compute"),
            exposed_comm_s: f("/breakdown_s/exposed_communication"),
            bubble_s: f("/breakdown_s/pipeline_bubble"),
            fidelity,
            events: r.pointer("/sim/events").and_then(Value::as_u64),
            jobs: r
                .get("jobs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(JobCard::from_report)
                .collect(),
            kind_cards: KindCards::from_report(r),
            bands: Bands::from_report(r),
        }
    }

    /// The step's parts as `(name, seconds, colour)`, those the report gives.
    pub fn step_parts(&self) -> Vec<(&'static str, f64, Color32)> {
        [
            ("compute", self.compute_s, kind_color(OpKind::Compute)),
            (
                "exposed communication",
                self.exposed_comm_s,
                kind_color(OpKind::Communication),
            ),
            ("pipeline bubble", self.bubble_s, BUBBLE),
        ]
        .into_iter()
        .filter_map(|(name, v, c)| Some((name, v?, c)))
        .collect()
    }

    /// The fidelity line: "compute: roofline · network: analytical · ...".
    pub fn fidelity_line(&self) -> String {
        self.fidelity
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

const BUBBLE: Color32 = Color32::from_rgb(150, 150, 150);
pub(crate) const GOOD: Color32 = Color32::from_rgb(60, 170, 90);
pub(crate) const BAD: Color32 = Color32::from_rgb(220, 60, 60);
pub(crate) fn dash(v: Option<String>) -> String {
    v.unwrap_or_else(|| "—".into())
}

/// A card per job of a cluster run: its step (latency, video) beside the others, and alone.
fn show_jobs(ui: &mut Ui, jobs: &[JobCard]) {
    for row in jobs.chunks(4) {
        ui.columns(4, |cols| {
            for (col, j) in cols.iter_mut().zip(row) {
                let sub = match (j.alone_s, j.slowdown) {
                    (Some(a), Some(x)) => RichText::new(format!(
                        "{:+.1}% against {} alone · servers {}",
                        100.0 * (x - 1.0),
                        units::duration(a),
                        j.servers
                    ))
                    .color(if x > 1.0 { BAD } else { GOOD }),
                    _ => RichText::new(format!("servers {}", j.servers)),
                };
                card(
                    col,
                    &format!("Job {}: {} beside the others", j.name, j.what),
                    dash(j.shared_s.map(units::duration)),
                    sub,
                );
            }
        });
    }
}

/// Lays out the cards for one report.
pub fn show(ui: &mut Ui, s: &Summary) {
    if !s.jobs.is_empty() {
        show_jobs(ui, &s.jobs);
        return fidelity(ui, s);
    }
    if let Some(k) = &s.kind_cards {
        kind_cards::show(ui, k, s.gpus, s.gpu.as_deref(), &s.bands);
        return fidelity(ui, s);
    }
    let b = &s.bands;
    let tokens = |t: f64| format!("{} tokens/s", units::si(t, ""));
    let tflops = |t: f64| format!("{t:.0} TFLOP/s");
    ui.columns(4, |cols| {
        banded(
            &mut cols[0],
            "Iteration time",
            dash(s.iteration_time_s.map(units::duration)),
            b.line("iteration_time_s", units::duration),
            match (s.gpus, &s.gpu) {
                (Some(n), Some(gpu)) => RichText::new(format!("one step on {n} × {gpu}")),
                _ => RichText::new(""),
            },
        );
        banded(
            &mut cols[1],
            "Throughput",
            dash(s.tokens_per_s.map(tokens)),
            b.line("tokens_per_s", tokens),
            match (s.tokens_per_s, s.gpus) {
                (Some(t), Some(n)) if n > 0 => {
                    RichText::new(format!("{} tokens/s per GPU", units::si(t / n as f64, "")))
                }
                _ => RichText::new(""),
            },
        );
        banded(
            &mut cols[2],
            "Model FLOP/s per GPU",
            dash(s.tflops_per_gpu.map(tflops)),
            b.line("tflops_per_gpu", tflops),
            RichText::new(format!(
                "MFU {} · HFU {}{}",
                dash(s.mfu.map(units::percent)),
                dash(s.hfu.map(units::percent)),
                s.peak_tflops_per_gpu
                    .map(|p| format!(" of {p:.0} TFLOP/s peak"))
                    .unwrap_or_default()
            )),
        );
        let fit_line = match (s.fits, s.peak_bytes, s.capacity_bytes) {
            (Some(true), Some(p), Some(c)) => {
                RichText::new(format!("fits ({} free)", units::bytes(c - p))).color(GOOD)
            }
            (Some(false), Some(p), Some(c)) if c > 0.0 => {
                RichText::new(format!("does not fit: {:.1}× the capacity", p / c))
                    .color(BAD)
                    .strong()
            }
            (Some(true), ..) => RichText::new("fits").color(GOOD),
            (Some(false), ..) => RichText::new("does not fit").color(BAD).strong(),
            (None, ..) => RichText::new(""),
        };
        card(
            &mut cols[3],
            "Memory peak per GPU",
            match (s.peak_bytes, s.capacity_bytes) {
                (Some(p), Some(c)) => format!("{} / {}", units::bytes(p), units::bytes(c)),
                (p, _) => dash(p.map(units::bytes)),
            },
            fit_line,
        );
    });
    ui.add_space(4.0);
    ui.columns(2, |cols| {
        let ui = &mut cols[0];
        ui.strong("Where the step goes");
        let parts = s.step_parts();
        let total = s
            .iteration_time_s
            .unwrap_or_else(|| parts.iter().map(|p| p.1).sum());
        stacked_bar(ui, &parts, total, None);
        legend(ui, &parts, total, units::duration);

        let ui = &mut cols[1];
        ui.strong("Memory per GPU at peak");
        let parts: Vec<_> = s
            .memory_parts
            .iter()
            .enumerate()
            .map(|(i, (k, v))| {
                (
                    k.as_str(),
                    *v,
                    MEMORY_COLORS[i.min(MEMORY_COLORS.len() - 1)],
                )
            })
            .collect();
        let peak = s
            .peak_bytes
            .unwrap_or_else(|| parts.iter().map(|p| p.1).sum());
        let scale = s.capacity_bytes.map_or(peak, |c| c.max(peak));
        let marker = s.capacity_bytes.map(|c| {
            let fits = s.fits.unwrap_or(c >= peak);
            (c, if fits { GOOD } else { BAD })
        });
        stacked_bar(ui, &parts, scale, marker);
        legend(ui, &parts, peak, units::bytes);
    });
    fidelity(ui, s);
}

/// The fidelity line and the event count.
fn fidelity(ui: &mut Ui, s: &Summary) {
    let line = s.fidelity_line();
    if !line.is_empty() || s.events.is_some() {
        ui.add_space(2.0);
        ui.horizontal_wrapped(|ui| {
            ui.weak("Fidelity");
            ui.label(RichText::new(line).small());
            if let Some(e) = s.events {
                ui.label(RichText::new(format!("· {e} events")).small());
            }
        });
    }
}

/// One card: a caption, a big value, and a line under it.
pub(crate) fn card(ui: &mut Ui, title: &str, value: String, sub: RichText) {
    banded(ui, title, value, None, sub);
}

/// A card whose value has prediction intervals (`band.rs`): each a weak line under the value.
pub(crate) fn banded(
    ui: &mut Ui,
    title: &str,
    value: String,
    bands: impl IntoIterator<Item = Line>,
    sub: RichText,
) {
    Frame::new()
        .fill(ui.visuals().faint_bg_color)
        .stroke(ui.visuals().widgets.noninteractive.bg_stroke)
        .corner_radius(CornerRadius::same(6))
        .inner_margin(Margin::symmetric(10, 8))
        .show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.label(RichText::new(title).small().weak());
            ui.label(RichText::new(value).size(20.0).strong());
            for line in bands {
                band::show(ui, &line);
            }
            ui.label(sub.small());
        });
}

/// A horizontal bar of `parts` laid end to end, `scale` being the full width, with an optional
/// marker line at `(value, colour)` (the memory capacity).
pub(crate) fn stacked_bar(
    ui: &mut Ui,
    parts: &[(&str, f64, Color32)],
    scale: f64,
    marker: Option<(f64, Color32)>,
) {
    let (rect, response) = ui.allocate_exact_size(vec2(ui.available_width(), 18.0), Sense::hover());
    let painter = ui.painter_at(rect.expand(2.0));
    painter.rect_filled(rect, 3.0, ui.visuals().extreme_bg_color);
    if scale > 0.0 && scale.is_finite() {
        let mut x = rect.left();
        for &(_, v, color) in parts {
            let w = (v / scale) as f32 * rect.width();
            if w > 0.0 {
                let r = egui::Rect::from_min_max(
                    egui::pos2(x, rect.top()),
                    egui::pos2(x + w, rect.bottom()),
                );
                painter.rect_filled(r, 0.0, color);
                x += w;
            }
        }
        if let Some((m, color)) = marker {
            let mx = rect.left() + (m / scale) as f32 * rect.width();
            painter.vline(
                mx.min(rect.right() - 1.0),
                rect.y_range().expand(2.0),
                Stroke::new(2.0, color),
            );
        }
    }
    painter.rect_stroke(
        rect,
        3.0,
        ui.visuals().widgets.noninteractive.bg_stroke,
        egui::StrokeKind::Inside,
    );
    if let Some((m, _)) = marker {
        response.on_hover_text(format!("the line marks the capacity ({})", units::bytes(m)));
    }
}

/// Coloured squares naming each part with its value and share of `total`.
pub(crate) fn legend(
    ui: &mut Ui,
    parts: &[(&str, f64, Color32)],
    total: f64,
    fmt: fn(f64) -> String,
) {
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 4.0;
        for &(name, v, color) in parts {
            let (r, _) = ui.allocate_exact_size(vec2(10.0, 10.0), Sense::hover());
            ui.painter().rect_filled(r, 2.0, color);
            let share = if total > 0.0 {
                format!(" ({})", units::percent(v / total))
            } else {
                String::new()
            };
            ui.label(RichText::new(format!("{name} {}{share}", fmt(v))).small());
            ui.add_space(6.0);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_report_keys() {
        let r = json!({
            "scenario": "x",
            "iteration_time_s": 0.5,
            "tokens_per_s": 1000.0,
            "mfu": 0.4,
            "cluster": {"gpu": "H100-SXM5-80GB", "gpus": 8},
            "memory": {
                "peak_bytes_per_gpu": 30.0, "capacity_bytes": 80.0, "fits": true,
                "breakdown_bytes": {"activations": 10.0, "weights": 20.0, "zzz": 0.0}
            },
            "breakdown_s": {"compute": 0.4, "exposed_communication": 0.1, "pipeline_bubble": 0.0},
            "fidelity": {"compute": "roofline", "network": "analytical"},
            "sim": {"events": 12}
        });
        let s = Summary::from_report(&r);
        assert_eq!(s.scenario.as_deref(), Some("x"));
        assert_eq!(s.gpus, Some(8));
        assert_eq!(s.iteration_time_s, Some(0.5));
        assert_eq!(s.fits, Some(true));
        // Weights before activations; unknown parts last.
        let names: Vec<_> = s.memory_parts.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(names, ["weights", "activations", "zzz"]);
        let parts = s.step_parts();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[1].0, "exposed communication");
        assert_eq!(s.fidelity_line(), "compute: roofline · network: analytical");
        assert_eq!(s.events, Some(12));
    }

    #[test]
    fn a_cluster_run_has_a_card_per_job() {
        let r = json!({"kind": "cluster", "jobs": [
            {"name": "a", "servers": [0, 5], "step_s": {"alone": 1.0, "shared": 1.1}, "slowdown": 1.1},
            {"name": "b", "servers": [6, 15]},
            {"name": "c", "kind": "serving", "servers": [16, 17], "slowdown": 1.2,
             "latency": {"alone": {"e2e_s": {"mean": 2.0}}, "shared": {"e2e_s": {"mean": 2.4}}}}
        ]});
        let s = Summary::from_report(&r);
        assert_eq!(s.jobs.len(), 3);
        assert_eq!(s.jobs[2].shared_s, Some(2.4));
        assert_eq!(s.jobs[0].servers, "0-5");
        assert_eq!(s.jobs[0].slowdown, Some(1.1));
        assert_eq!(s.jobs[1].shared_s, None);
        let mut h = egui_kittest::Harness::new_ui(|ui| show(ui, &s));
        h.run();
        use egui_kittest::kittest::Queryable;
        h.get_by_label_contains("Job a: step beside the others");
        h.get_by_label_contains("+10.0% against");
        h.get_by_label_contains("Job c: mean end-to-end latency beside the others");
        h.get_by_label_contains("+20.0% against");
    }

    #[test]
    fn missing_keys_stay_missing() {
        let s = Summary::from_report(&json!({"kind": "training"}));
        assert_eq!(s, Summary::default());
        assert!(s.step_parts().is_empty());
        assert_eq!(dash(s.mfu.map(units::percent)), "—");
    }
}
