//! A serving fleet over time (the report's `over_time`): each replica's queue, running batch
//! and KV cache in use, as the largest value in each span of the run, one line per replica (or
//! the fleet's totals when the report gives no replica one by one).
//!
//! [`OverTime::from_report`] reads the report into plain series (testable without a window);
//! [`show`] draws three plots side by side. Ignored: anything the report does not bin.

use crate::plots::SERIES_COLORS;
use crate::units;
use egui::Ui;
use egui_plot::{Line, Plot, PlotPoints};
use serde_json::Value;

/// One line: a replica's (or the fleet's) series, one value per span.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub queued: Vec<f64>,
    pub running: Vec<f64>,
    pub kv_use: Vec<f64>,
}

/// The fleet over time.
#[derive(Clone, Debug, PartialEq)]
pub struct OverTime {
    pub bucket_s: f64,
    pub lines: Vec<Series>,
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

fn series(name: String, v: &Value) -> Series {
    Series {
        name,
        queued: numbers(&v["queued"]),
        running: numbers(&v["running"]),
        kv_use: numbers(&v["kv_use"]),
    }
}

impl OverTime {
    pub fn from_report(r: &Value) -> Option<OverTime> {
        let o = r.get("over_time")?;
        let bucket_s = o.get("bucket_s")?.as_f64()?;
        let lines: Vec<Series> = match o["replicas"].as_array() {
            Some(reps) if !reps.is_empty() => reps
                .iter()
                .enumerate()
                .map(|(i, v)| series(format!("replica {i}"), v))
                .collect(),
            _ => vec![series("fleet".to_string(), &o["fleet"])],
        };
        Some(OverTime { bucket_s, lines })
    }
}

/// Three plots: requests waiting, requests running, KV cache in use.
pub fn show(ui: &mut Ui, o: &OverTime, height: f32) {
    type Pick = fn(&Series) -> &Vec<f64>;
    let plots: [(&str, &str, Pick); 3] = [
        ("Queue", "requests waiting", |s| &s.queued),
        ("Running batch", "requests running", |s| &s.running),
        ("KV cache in use", "fraction of blocks", |s| &s.kv_use),
    ];
    ui.columns(3, |cols| {
        for (col, (title, axis, pick)) in cols.iter_mut().zip(plots) {
            col.strong(title);
            Plot::new(("over time", title))
                .height(height)
                .allow_scroll(false)
                .include_y(0.0)
                .x_axis_label("simulated time")
                .y_axis_label(axis)
                .x_axis_formatter(|mark, _| units::duration(mark.value))
                .show(col, |plot| {
                    for (i, s) in o.lines.iter().enumerate() {
                        let pts: Vec<[f64; 2]> = pick(s)
                            .iter()
                            .enumerate()
                            .map(|(b, &v)| [(b as f64 + 0.5) * o.bucket_s, v])
                            .collect();
                        plot.line(
                            Line::new(s.name.clone(), PlotPoints::from(pts))
                                .color(SERIES_COLORS[i % SERIES_COLORS.len()])
                                .width(1.2),
                        );
                    }
                });
        }
    });
    ui.label(
        egui::RichText::new(format!(
            "The largest value in each {} of the run, sampled as each iteration starts.",
            units::duration(o.bucket_s)
        ))
        .small()
        .weak(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn replicas_come_one_by_one_or_as_the_fleet() {
        let r = json!({"over_time": {"bucket_s": 2.0,
            "fleet": {"queued": [3, 0], "running": [5, 1], "kv_use": [0.5, 0.1]},
            "replicas": [{"queued": [1, 0], "running": [2, 1], "kv_use": [0.4, 0.1]},
                         {"queued": [2, 0], "running": [3, 0], "kv_use": [0.6, 0.0]}]}});
        let o = OverTime::from_report(&r).unwrap();
        assert_eq!(o.lines.len(), 2);
        assert_eq!(o.lines[1].name, "replica 1");
        assert_eq!(o.lines[1].running, [3.0, 0.0]);
        let mut big = r.clone();
        big["over_time"]["replicas"] = Value::Null;
        let o = OverTime::from_report(&big).unwrap();
        assert_eq!(o.lines[0].name, "fleet");
        assert_eq!(o.lines[0].queued, [3.0, 0.0]);
        assert!(OverTime::from_report(&json!({"kind": "serving"})).is_none());
    }

    #[test]
    fn the_plots_draw_headless() {
        let o = OverTime::from_report(&json!({"over_time": {"bucket_s": 1.0,
            "fleet": {"queued": [1], "running": [2], "kv_use": [0.3]}, "replicas": null}}))
        .unwrap();
        let mut h = egui_kittest::Harness::new_ui(move |ui| show(ui, &o, 120.0));
        h.run();
        use egui_kittest::kittest::Queryable;
        h.get_by_label("KV cache in use");
        h.get_by_label_contains("The largest value in each");
    }
}
