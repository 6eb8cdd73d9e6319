//! The compare table: the previous run beside the current one, headline metric by metric.
//!
//! Which metrics are headlines depends on the kind of scenario ([`headlines`]); each knows
//! whether more is better or worse, so a change is marked better (green) or worse (red) with its
//! percentage, and a change under 0.05% counts as the same. `memory.fits` compares as a yes/no
//! (fitting is better). A metric either report lacks shows "—" and is not judged.
//! Where the current report's `uncertainty` covers a metric, its 80% interval (`band.rs`) shows
//! under it, and a change whose previous value lies inside that interval (or the current value
//! inside the previous run's, when only it has one) says so: it is drawn weak, not as a win or a
//! loss, since it is smaller than the simulator's usual error against real clusters.
//! [`rows`] does the arithmetic (tested without a window); [`show`] draws the table.
//! Deliberately left out: more than two runs, statistical significance (the simulator is
//! deterministic; the interval is its error against measurements), and metrics beyond the
//! headlines (the cards show the rest).

use crate::band::{self, Band, Line};
use crate::units;
use egui::{Color32, RichText, Ui};
use serde_json::Value;

/// Which way a metric improves.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Better {
    Higher,
    Lower,
}

/// How a metric's number reads.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Format {
    Seconds,
    Rate(&'static str),
    Percent,
    Bytes,
    YesNo,
}

/// A headline metric: a report path (JSON pointer), its label, and which way is better.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Headline {
    pub pointer: &'static str,
    pub label: &'static str,
    pub better: Better,
    pub format: Format,
}

const fn h(pointer: &'static str, label: &'static str, better: Better, format: Format) -> Headline {
    Headline {
        pointer,
        label,
        better,
        format,
    }
}

const TRAINING: &[Headline] = &[
    h(
        "/iteration_time_s",
        "iteration time",
        Better::Lower,
        Format::Seconds,
    ),
    h(
        "/tokens_per_s",
        "tokens/s",
        Better::Higher,
        Format::Rate("tokens/s"),
    ),
    h("/mfu", "MFU", Better::Higher, Format::Percent),
    h(
        "/breakdown_s/pipeline_bubble",
        "pipeline bubble",
        Better::Lower,
        Format::Seconds,
    ),
    h(
        "/breakdown_s/exposed_communication",
        "exposed communication",
        Better::Lower,
        Format::Seconds,
    ),
    h(
        "/memory/peak_bytes_per_gpu",
        "memory peak per GPU",
        Better::Lower,
        Format::Bytes,
    ),
    h(
        "/memory/fits",
        "fits in memory",
        Better::Higher,
        Format::YesNo,
    ),
];

const SERVING: &[Headline] = &[
    h(
        "/throughput/output_tokens_per_s",
        "output tokens/s",
        Better::Higher,
        Format::Rate("tokens/s"),
    ),
    h(
        "/throughput/requests_per_s",
        "requests/s",
        Better::Higher,
        Format::Rate("req/s"),
    ),
    h("/ttft_s/p50", "TTFT p50", Better::Lower, Format::Seconds),
    h("/ttft_s/p99", "TTFT p99", Better::Lower, Format::Seconds),
    h("/tpot_s/p50", "TPOT p50", Better::Lower, Format::Seconds),
    h("/tpot_s/p99", "TPOT p99", Better::Lower, Format::Seconds),
    h(
        "/e2e_s/p50",
        "end-to-end p50",
        Better::Lower,
        Format::Seconds,
    ),
    h(
        "/slo/attainment",
        "SLO attainment",
        Better::Higher,
        Format::Percent,
    ),
    h(
        "/memory/fits",
        "fits in memory",
        Better::Higher,
        Format::YesNo,
    ),
];

const DIFFUSION: &[Headline] = &[
    h(
        "/latency_s",
        "latency per video",
        Better::Lower,
        Format::Seconds,
    ),
    h(
        "/videos_per_hour",
        "videos/hour",
        Better::Higher,
        Format::Rate("videos/h"),
    ),
    h(
        "/denoise_step_s",
        "denoising step",
        Better::Lower,
        Format::Seconds,
    ),
    h(
        "/memory/peak_bytes_per_gpu",
        "memory peak per GPU",
        Better::Lower,
        Format::Bytes,
    ),
    h(
        "/memory/fits",
        "fits in memory",
        Better::Higher,
        Format::YesNo,
    ),
];

const COLLECTIVE: &[Headline] = &[
    h("/time_s", "time", Better::Lower, Format::Seconds),
    h(
        "/busbw_GBps",
        "bus bandwidth",
        Better::Higher,
        Format::Rate("GB/s"),
    ),
    h(
        "/algbw_GBps",
        "algorithm bandwidth",
        Better::Higher,
        Format::Rate("GB/s"),
    ),
];

const FEDERATED: &[Headline] = &[
    h(
        "/round_time_s/p50",
        "round time p50",
        Better::Lower,
        Format::Seconds,
    ),
    h(
        "/round_time_s/p90",
        "round time p90",
        Better::Lower,
        Format::Seconds,
    ),
    h(
        "/rounds_per_hour",
        "rounds/hour",
        Better::Higher,
        Format::Rate("rounds/h"),
    ),
    h(
        "/upload_bytes_per_device",
        "upload per device",
        Better::Lower,
        Format::Bytes,
    ),
];

/// The headline metrics of a report's kind (`report["kind"]`).
pub fn headlines(kind: &str) -> &'static [Headline] {
    match kind {
        "training" => TRAINING,
        "serving" => SERVING,
        "diffusion" => DIFFUSION,
        "collective" => COLLECTIVE,
        "federated" => FEDERATED,
        _ => &[],
    }
}

/// How the current run compares with the previous one on a metric.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Verdict {
    Better,
    Worse,
    Same,
    /// One of the runs lacks the metric.
    Unknown,
}

/// One line of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub label: &'static str,
    pub previous: String,
    pub current: String,
    /// Relative change of the current run against the previous one (0.1 = +10%).
    pub change: Option<f64>,
    pub verdict: Verdict,
    /// The current run's prediction interval of the metric, "0.9 s – 1.3 s".
    pub interval: Option<Line>,
    /// When the change is inside an interval: "inside 80%", and why it matters (the tooltip).
    pub inside: Option<Line>,
}

/// Changes smaller than this fraction count as none.
const SAME: f64 = 5e-4;

fn number(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        v => v.as_f64(),
    }
}

fn text(v: Option<f64>, format: Format) -> String {
    v.map_or_else(|| "—".into(), |v| write(v, format))
}

fn write(v: f64, format: Format) -> String {
    match format {
        Format::Seconds => units::duration(v),
        Format::Rate(unit) => format!("{} {unit}", units::si(v, "")),
        Format::Percent => units::percent(v),
        Format::Bytes => units::bytes(v),
        Format::YesNo => if v > 0.5 { "yes" } else { "no" }.into(),
    }
}

/// The table's rows for `previous` against `current`, headlines of the current run's kind.
pub fn rows(previous: &Value, current: &Value) -> Vec<Row> {
    let kind = current.get("kind").and_then(Value::as_str).unwrap_or("");
    headlines(kind)
        .iter()
        .map(|h| {
            let a = number(previous.pointer(h.pointer));
            let b = number(current.pointer(h.pointer));
            let path = h.pointer.trim_start_matches('/').replace('/', ".");
            let band_now = Band::at(current, &path);
            let (change, verdict) = match (a, b) {
                (Some(a), Some(b)) => {
                    let change = if h.format == Format::YesNo {
                        None
                    } else if a != 0.0 {
                        Some((b - a) / a.abs())
                    } else if b == 0.0 {
                        Some(0.0)
                    } else {
                        None
                    };
                    let same = match change {
                        Some(c) => c.abs() < SAME,
                        None => a == b,
                    };
                    let up = b > a;
                    let verdict = if same {
                        Verdict::Same
                    } else if up == (h.better == Better::Higher) {
                        Verdict::Better
                    } else {
                        Verdict::Worse
                    };
                    (change, verdict)
                }
                _ => (None, Verdict::Unknown),
            };
            let fmt = |v| write(v, h.format);
            let inside = match (a, b) {
                (Some(a), Some(b)) if matches!(verdict, Verdict::Better | Verdict::Worse) => {
                    within(a, b, band_now.as_ref(), Band::at(previous, &path), fmt)
                }
                _ => None,
            };
            Row {
                label: h.label,
                previous: text(a, h.format),
                current: text(b, h.format),
                change,
                verdict,
                // The column's header names the level: the cell gives the ends only.
                interval: band_now.map(|band| Line {
                    text: format!("{} – {}", fmt(band.low), fmt(band.high)),
                    hover: band.hover(),
                }),
                inside,
            }
        })
        .collect()
}

/// Whether the previous value `a` lies inside the current run's interval (or, when only the
/// previous run has one, the current value `b` inside the previous run's), said as a line.
fn within(
    a: f64,
    b: f64,
    now: Option<&Band>,
    before: Option<Band>,
    fmt: impl Fn(f64) -> String,
) -> Option<Line> {
    let (band, other, whose, value) = match (now, &before) {
        (Some(band), _) => (band, a, "current", "previous"),
        (None, Some(band)) => (band, b, "previous", "current"),
        (None, None) => return None,
    };
    band.contains(other).then(|| Line {
        text: format!("inside {}", band.level_text()),
        hover: format!(
            "The {value} run's {} lies inside the {whose} run's {} interval ({} – {}), so the \
             difference is smaller than the simulator's usual error against real clusters and \
             may not hold on one.\n{}",
            fmt(other),
            band.level_text(),
            fmt(band.low),
            fmt(band.high),
            band.hover()
        ),
    })
}

pub const BETTER: Color32 = Color32::from_rgb(40, 160, 70);
pub const WORSE: Color32 = Color32::from_rgb(215, 50, 50);

/// The change column's text: "+12.3% better", "−4.0% worse", "same", and ", inside 80%" after
/// a change inside the interval.
pub fn change_text(row: &Row) -> String {
    let pct = row.change.map(|c| {
        let sign = if c > 0.0 { "+" } else { "−" };
        format!("{sign}{:.1}% ", (c * 100.0).abs())
    });
    let judged = match row.verdict {
        Verdict::Better => format!("{}better", pct.unwrap_or_default()),
        Verdict::Worse => format!("{}worse", pct.unwrap_or_default()),
        Verdict::Same => "same".into(),
        Verdict::Unknown => "—".into(),
    };
    match &row.inside {
        Some(inside) => format!("{judged}, {}", inside.text),
        None => judged,
    }
}

/// Draws the table. `previous_name`/`current_name` head the columns (what each run was).
pub fn show(ui: &mut Ui, previous_name: &str, current_name: &str, rows: &[Row]) {
    if rows.is_empty() {
        ui.weak("No headline metrics for this kind of scenario.");
        return;
    }
    // Wider than the panel (long names, intervals): scroll rather than clip the change column.
    egui::ScrollArea::horizontal()
        .id_salt("compare-scroll")
        .show(ui, |ui| grid(ui, previous_name, current_name, rows));
    ui.add_space(4.0);
    ui.label(
        RichText::new(format!("previous: {previous_name}"))
            .small()
            .weak(),
    );
    ui.label(
        RichText::new(format!("current: {current_name}"))
            .small()
            .weak(),
    );
}

/// The table's cells; a current value's interval is drawn small under it.
fn grid(ui: &mut Ui, previous_name: &str, current_name: &str, rows: &[Row]) {
    // Cells keep their text on one line; the scroll area around takes the width.
    ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
    egui::Grid::new("compare")
        .striped(true)
        .num_columns(4)
        .spacing([18.0, 4.0])
        .show(ui, |ui| {
            ui.strong("metric");
            ui.strong("previous").on_hover_text(previous_name);
            ui.strong("current").on_hover_text(format!(
                "{current_name}\nUnder a value: its 80% interval, where a measurement of the \
                 current run on a real cluster is expected to fall (from the simulator's \
                 validation errors)"
            ));
            ui.strong("change");
            ui.end_row();
            for r in rows {
                ui.label(r.label);
                ui.label(RichText::new(&r.previous).monospace());
                ui.vertical(|ui| {
                    ui.label(RichText::new(&r.current).monospace());
                    if let Some(line) = &r.interval {
                        band::show(ui, line);
                    }
                });
                let t = RichText::new(change_text(r));
                let cell = ui.label(match (r.verdict, &r.inside) {
                    (_, Some(_)) => t.weak(),
                    (Verdict::Better, None) => t.color(BETTER).strong(),
                    (Verdict::Worse, None) => t.color(WORSE).strong(),
                    _ => t.weak(),
                });
                if let Some(inside) = &r.inside {
                    cell.on_hover_text(&inside.hover);
                }
                ui.end_row();
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable;
    use serde_json::json;

    fn training(iteration: f64, fits: bool) -> Value {
        json!({"kind": "training", "iteration_time_s": iteration, "tokens_per_s": 1000.0 / iteration,
               "mfu": 0.5 / iteration, "memory": {"peak_bytes_per_gpu": 1e9, "fits": fits}})
    }

    #[test]
    fn a_slower_rerun_is_worse_and_a_faster_one_better() {
        let rows = rows(&training(1.0, true), &training(1.25, true));
        let it = &rows[0];
        assert_eq!(it.label, "iteration time");
        assert_eq!(it.verdict, Verdict::Worse);
        assert!((it.change.unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(change_text(it), "+25.0% worse");
        assert_eq!(rows[1].verdict, Verdict::Worse, "fewer tokens/s");
        assert_eq!(change_text(&rows[1]), "−20.0% worse");
        let mem = rows
            .iter()
            .find(|r| r.label == "memory peak per GPU")
            .unwrap();
        assert_eq!(mem.verdict, Verdict::Same);
        let back = super::rows(&training(1.25, true), &training(1.0, true));
        assert_eq!(back[0].verdict, Verdict::Better);
    }

    #[test]
    fn fitting_is_better_and_missing_metrics_are_not_judged() {
        let rows = rows(&training(1.0, false), &training(1.0, true));
        let fits = rows.iter().find(|r| r.label == "fits in memory").unwrap();
        assert_eq!(
            (fits.previous.as_str(), fits.current.as_str()),
            ("no", "yes")
        );
        assert_eq!(fits.verdict, Verdict::Better);
        let bubble = rows.iter().find(|r| r.label == "pipeline bubble").unwrap();
        assert_eq!(bubble.verdict, Verdict::Unknown);
        assert_eq!(bubble.current, "—");
    }

    #[test]
    fn the_table_marks_a_slower_rerun_as_worse() {
        let rows = rows(&training(1.0, true), &training(1.25, true));
        let mut h = Harness::new_ui(|ui| show(ui, "a.toml", "a.toml --set parallel.pp=8", &rows));
        h.run();
        h.get_by_label("iteration time");
        h.get_by_label("1.0 s");
        h.get_by_label("1.25 s");
        h.get_by_label("+25.0% worse");
        assert!(h.query_by_label("+25.0% better").is_none());
    }

    #[test]
    fn a_collective_with_more_bandwidth_is_better() {
        let c = |t: f64| json!({"kind": "collective", "time_s": t, "busbw_GBps": 1.0 / t});
        let rows = rows(&c(2.0), &c(1.0));
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].verdict, Verdict::Better, "less time");
        assert_eq!(rows[1].verdict, Verdict::Better, "more bus bandwidth");
        assert_eq!(rows[2].verdict, Verdict::Unknown, "no algbw in either");
        let f = json!({"kind": "federated", "rounds_per_hour": 10.0});
        assert_eq!(rows_of(&f), 4);
    }

    fn rows_of(r: &Value) -> usize {
        rows(r, r).len()
    }
}
