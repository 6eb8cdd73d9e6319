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
use crate::units;
use clustersim::report::any::Report;
use clustersim::report::cluster::Job;
use clustersim::report::diffusion::DiffusionReport;
use clustersim::report::typed::TypedReport;
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
    /// Compute, exposed communication, pipeline bubble: `(name, seconds, colour)` of the step
    /// (`metrics::step_parts`); empty for other kinds.
    pub step_parts: Vec<(&'static str, f64, Color32)>,
    /// `fidelity.*` as "key: value" pairs, in the report's order.
    pub fidelity: Vec<(String, String)>,
    pub events: Option<u64>,
    /// A cluster run's jobs (`jobs`); empty for any other run.
    pub jobs: Vec<JobCard>,
    /// A serving, diffusion or collective run's own cards (`kind_cards.rs`).
    pub kind_cards: Option<KindCards>,
    /// The headline figures' prediction intervals (`uncertainty`), if the report has them.
    pub bands: Bands,
    /// Why the report does not read as one of its kind; no cards then.
    pub unreadable: Option<String>,
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
    /// One job of a cluster run, in its kind's terms.
    fn of(j: &Job) -> Self {
        let mean = |v: &Value| v.pointer("/e2e_s/mean").and_then(Value::as_f64);
        let (what, alone_s, shared_s) = match j.kind.as_str() {
            "serving" => (
                "mean end-to-end latency",
                j.latency.as_ref().and_then(|l| mean(&l.alone)),
                j.latency.as_ref().and_then(|l| mean(&l.shared)),
            ),
            "diffusion" => {
                let video = DiffusionReport::from_value(&j.report).ok();
                let latency = video.map(|v| v.latency_s);
                ("video", latency, latency)
            }
            _ => (
                "step",
                j.step_s.as_ref().map(|s| s.alone),
                j.step_s.as_ref().map(|s| s.shared),
            ),
        };
        JobCard {
            name: j.name.clone(),
            servers: format!("{}-{}", j.servers[0], j.servers[1]),
            what,
            alone_s,
            shared_s,
            slowdown: Some(j.slowdown),
        }
    }
}

impl Summary {
    /// The cards of report `r`: none for an empty report (a saved trace opened alone), and the
    /// reason for one that does not read as a report of its kind (written by another version).
    pub fn from_report(r: &Value) -> Summary {
        if r.as_object().is_some_and(|m| m.is_empty()) {
            return Summary::default();
        }
        let report = match Report::from_value(r) {
            Ok(report) => report,
            Err(e) => {
                return Summary {
                    unreadable: Some(e),
                    ..Summary::default()
                };
            }
        };
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
        let mut s = Summary {
            scenario: Some(report.scenario().to_string()),
            gpu: report.gpus().map(|(gpu, _)| gpu.to_string()),
            gpus: report.gpus().map(|(_, n)| u64::from(n)),
            fidelity,
            events: Some(report.sim().events),
            kind_cards: KindCards::of(&report),
            bands: Bands::from_report(r),
            ..Summary::default()
        };
        match &report {
            Report::Training(t) => {
                s.iteration_time_s = Some(t.iteration_time_s);
                s.tokens_per_s = Some(t.tokens_per_s);
                s.tflops_per_gpu = Some(t.tflops_per_gpu);
                s.hardware_tflops_per_gpu = Some(t.hardware_tflops_per_gpu);
                s.peak_tflops_per_gpu = Some(t.cluster.peak_tflops_per_gpu);
                s.mfu = Some(t.mfu);
                s.hfu = Some(t.hfu);
                s.peak_bytes = Some(t.memory.peak_bytes_per_gpu as f64);
                s.capacity_bytes = Some(t.memory.capacity_bytes as f64);
                s.fits = Some(t.memory.fits);
                s.memory_parts = crate::metrics::memory_breakdown(&t.memory.breakdown_bytes);
                s.step_parts = crate::metrics::step_parts(&t.breakdown_s).to_vec();
            }
            Report::Cluster(c) => s.jobs = c.jobs.iter().map(JobCard::of).collect(),
            _ => {}
        }
        s
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
    if let Some(e) = &s.unreadable {
        ui.colored_label(
            BAD,
            format!(
                "This report does not read as one of this version's: {e}. Run its scenario again."
            ),
        );
        return;
    }
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
        let parts = &s.step_parts;
        let total = s
            .iteration_time_s
            .unwrap_or_else(|| parts.iter().map(|p| p.1).sum());
        stacked_bar(ui, parts, total, None);
        legend(ui, parts, total, units::duration);

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

    /// The report of a shipped scenario.
    fn shipped(file: &str) -> Value {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios")
            .join(file);
        clustersim::run(&clustersim::Scenario::load(&path, &[]).unwrap())
            .unwrap()
            .report
    }

    #[test]
    fn reads_a_training_report() {
        let r = shipped("training/gpt3-1.3b-8xh100.toml");
        let s = Summary::from_report(&r);
        assert_eq!(s.scenario.as_deref(), r["scenario"].as_str());
        assert_eq!(s.gpus, Some(8));
        assert_eq!(s.iteration_time_s, r["iteration_time_s"].as_f64());
        assert_eq!(s.fits, Some(true));
        assert_eq!(s.unreadable, None);
        // Weights first, in a fixed order, every part of the report's breakdown.
        let names: Vec<_> = s.memory_parts.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(
            names[..4],
            ["weights", "gradients", "optimizer", "activations"]
        );
        let listed = r["memory"]["breakdown_bytes"].as_object().unwrap().len();
        assert_eq!(names.len(), listed);
        let parts = &s.step_parts;
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[1].0, "exposed communication");
        assert!(
            s.fidelity_line().starts_with("compute: "),
            "{}",
            s.fidelity_line()
        );
        assert_eq!(s.events, r["sim"]["events"].as_u64());
    }

    #[test]
    fn a_cluster_run_has_a_card_per_job() {
        let r = shipped("cluster/training-beside-disaggregated-fleet.toml");
        let s = Summary::from_report(&r);
        let jobs = r["jobs"].as_array().unwrap();
        assert_eq!(s.jobs.len(), jobs.len());
        let kinds: Vec<_> = jobs.iter().map(|j| j["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["training", "serving", "diffusion"]);
        assert_eq!(s.jobs[0].what, "step");
        assert_eq!(s.jobs[0].shared_s, jobs[0]["step_s"]["shared"].as_f64());
        assert_eq!(s.jobs[1].what, "mean end-to-end latency");
        let e2e = &jobs[1]["latency"]["shared"]["e2e_s"]["mean"];
        assert_eq!(s.jobs[1].shared_s, e2e.as_f64());
        assert_eq!(s.jobs[2].what, "video");
        assert_eq!(s.jobs[2].shared_s, jobs[2]["report"]["latency_s"].as_f64());
        let servers = &jobs[0]["servers"];
        assert_eq!(s.jobs[0].servers, format!("{}-{}", servers[0], servers[1]));
        assert_eq!(s.jobs[0].slowdown, jobs[0]["slowdown"].as_f64());
        let mut h = egui_kittest::Harness::new_ui(|ui| show(ui, &s));
        h.run();
        use egui_kittest::kittest::Queryable;
        let name = jobs[1]["name"].as_str().unwrap();
        h.get_by_label_contains(&format!(
            "Job {name}: mean end-to-end latency beside the others"
        ));
        assert!(h.query_all_by_label_contains("% against").count() >= 2);
    }

    #[test]
    fn an_empty_report_has_no_cards_and_a_misspelt_one_says_so() {
        // A saved trace opened without its report.
        assert_eq!(Summary::from_report(&json!({})), Summary::default());
        let mut r = shipped("training/gpt3-1.3b-8xh100.toml");
        let mfu = r.as_object_mut().unwrap().remove("mfu").unwrap();
        r["mfu_"] = mfu;
        let s = Summary::from_report(&r);
        let e = s.unreadable.as_deref().unwrap();
        assert!(
            e.contains("not a training report: unknown field `mfu_`"),
            "{e}"
        );
        assert_eq!(s.mfu, None);
    }
}
