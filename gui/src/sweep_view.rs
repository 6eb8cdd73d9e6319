//! The sweep view: a `clustersim sweep` result (CSV or JSON Lines) plotted as any metric against
//! any varied key.
//!
//! The file's columns are `point`, `points`, the varied keys, `status`, `error`, then the metrics
//! (docs/SWEEP.md); [`SweepTable::parse`] finds the varied keys as the columns between `points` and
//! `status`. The plot puts the chosen key on x (numbers on a numeric axis; words such as `full`
//! or `200 Gb/s` as categories in order of first appearance) and the chosen metric on y, one
//! series per combination of the other varied keys (so a 2-D grid reads as a family of curves).
//! Points whose status is `error` are not plotted; their count and first error are shown. The
//! points are also listed in a table under the plot.
//! Deliberately left out: 3-D and heat-map plots of two keys at once, filtering rows, and running
//! sweeps from here (`clustersim sweep` runs them in parallel; the viewer reads what it wrote).

use crate::units;
use egui::{ComboBox, RichText, Ui};
use egui_plot::{Legend, Line, MarkerShape, Plot, PlotPoints, Points};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A plot series: its name (the other varied keys' values) and its `[x, y]` points.
pub type Series = (String, Vec<[f64; 2]>);

/// A sweep result in memory.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepTable {
    pub path: PathBuf,
    pub columns: Vec<String>,
    /// Indices into `columns` of the varied keys, and of the metrics.
    pub varied: Vec<usize>,
    pub metrics: Vec<usize>,
    status: usize,
    error: usize,
    /// One row per point, cells aligned with `columns` (numbers, booleans, strings or null).
    pub rows: Vec<Vec<Value>>,
}

/// Whether `path` names a sweep result (by its extension, as `clustersim sweep --out` does).
pub fn is_sweep_path(path: &str) -> bool {
    let p = path.trim().to_ascii_lowercase();
    p.ends_with(".csv") || p.ends_with(".jsonl")
}

/// A CSV cell as a value: a number or boolean when it reads as one, else the text.
fn cell(text: &str) -> Value {
    if text.is_empty() {
        return Value::Null;
    }
    if let Ok(i) = text.parse::<i64>() {
        return Value::from(i);
    }
    if let Ok(v) = text.parse::<f64>()
        && let Some(n) = serde_json::Number::from_f64(v)
    {
        return Value::Number(n);
    }
    match text {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => Value::String(text.to_string()),
    }
}

/// A JSON object's keys and values in the file's order (serde_json's map would sort them).
struct Ordered(Vec<(String, Value)>);

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, Value>()? {
                    out.push((k, v));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl SweepTable {
    /// Reads a sweep result file; the format follows the extension.
    pub fn load(path: &Path) -> Result<SweepTable, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        let jsonl = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("jsonl"));
        SweepTable::parse(path, &text, jsonl).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses CSV (`jsonl == false`) or JSON Lines text.
    pub fn parse(path: &Path, text: &str, jsonl: bool) -> Result<SweepTable, String> {
        let (columns, rows) = if jsonl {
            let mut columns: Vec<String> = Vec::new();
            let mut rows = Vec::new();
            for (i, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let Ordered(pairs) = serde_json::from_str(line)
                    .map_err(|e| format!("line {}: not a JSON object: {e}", i + 1))?;
                if columns.is_empty() {
                    columns = pairs.iter().map(|p| p.0.clone()).collect();
                }
                let mut row = vec![Value::Null; columns.len()];
                for (k, v) in pairs {
                    match columns.iter().position(|c| *c == k) {
                        Some(j) => row[j] = v,
                        None => return Err(format!("line {}: unknown column `{k}`", i + 1)),
                    }
                }
                rows.push(row);
            }
            (columns, rows)
        } else {
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(true)
                .from_reader(text.as_bytes());
            let columns: Vec<String> = reader
                .headers()
                .map_err(|e| e.to_string())?
                .iter()
                .map(str::to_string)
                .collect();
            let mut rows = Vec::new();
            for (i, rec) in reader.records().enumerate() {
                let rec = rec.map_err(|e| format!("row {}: {e}", i + 1))?;
                rows.push(rec.iter().map(cell).collect());
            }
            (columns, rows)
        };
        let find = |name: &str| columns.iter().position(|c| c == name);
        let (Some(points), Some(status), Some(error)) =
            (find("points"), find("status"), find("error"))
        else {
            return Err(
                "not a clustersim sweep: the columns must include points, status and error".into(),
            );
        };
        if status <= points {
            return Err("not a clustersim sweep: status must come after points".into());
        }
        Ok(SweepTable {
            path: path.to_path_buf(),
            varied: (points + 1..status).collect(),
            metrics: (error + 1..columns.len()).collect(),
            columns,
            status,
            error,
            rows,
        })
    }

    fn ok(&self, row: &[Value]) -> bool {
        row[self.status].as_str() == Some("ok")
    }

    /// Rows whose status is `error`, and the first one's message.
    pub fn failed(&self) -> (usize, Option<String>) {
        let mut failed = self.rows.iter().filter(|r| !self.ok(r));
        let first = failed
            .next()
            .and_then(|r| r[self.error].as_str().map(str::to_string));
        (first.as_ref().map_or(0, |_| 1) + failed.count(), first)
    }

    /// The plot's series for key column `x` and metric column `y`: one per combination of the
    /// other varied keys, as `(name, points)`; x of categorical keys is the category's index.
    pub fn series(&self, x: usize, y: usize) -> (Vec<Series>, Option<Vec<String>>) {
        let numeric = self
            .rows
            .iter()
            .all(|r| r[x].is_null() || r[x].as_f64().is_some());
        let mut categories: Vec<String> = Vec::new();
        let mut out: Vec<Series> = Vec::new();
        for r in self.rows.iter().filter(|r| self.ok(r)) {
            let xv = if numeric {
                r[x].as_f64()
            } else {
                let t = text(&r[x]);
                let i = categories.iter().position(|c| *c == t).unwrap_or_else(|| {
                    categories.push(t);
                    categories.len() - 1
                });
                Some(i as f64)
            };
            let yv = match &r[y] {
                Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
                v => v.as_f64(),
            };
            let (Some(xv), Some(yv)) = (xv, yv) else {
                continue;
            };
            let name = self
                .varied
                .iter()
                .filter(|&&c| c != x)
                .map(|&c| format!("{}={}", self.columns[c], text(&r[c])))
                .collect::<Vec<_>>()
                .join(", ");
            match out.iter_mut().find(|s| s.0 == name) {
                Some(s) => s.1.push([xv, yv]),
                None => out.push((name, vec![[xv, yv]])),
            }
        }
        for s in &mut out {
            s.1.sort_by(|a, b| a[0].total_cmp(&b[0]));
        }
        (out, (!numeric).then_some(categories))
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The view's state: the table loaded (or why not) and the chosen columns.
#[derive(Clone, Debug, Default)]
pub struct SweepView {
    pub table: Option<SweepTable>,
    pub error: Option<String>,
    /// Column indices of the x key and the y metric.
    pub x: usize,
    pub y: usize,
}

impl SweepView {
    /// Loads `path`, keeping the previous table on screen if it fails.
    pub fn open(&mut self, path: &Path) {
        match SweepTable::load(path) {
            Ok(t) => self.show_table(t),
            Err(e) => self.error = Some(e),
        }
    }

    pub fn show_table(&mut self, t: SweepTable) {
        self.x = t.varied.first().copied().unwrap_or(0);
        self.y = t.metrics.first().copied().unwrap_or(0);
        self.table = Some(t);
        self.error = None;
    }
}

/// Draws the view.
pub fn show(ui: &mut Ui, v: &mut SweepView) {
    if let Some(e) = &v.error {
        ui.colored_label(egui::Color32::from_rgb(215, 50, 50), e);
    }
    let Some(t) = &v.table else {
        ui.weak(
            "Type the path of a sweep result (.csv or .jsonl, written by `clustersim sweep --out`) \
             above and press Open.",
        );
        return;
    };
    ui.horizontal(|ui| {
        ui.strong(t.path.display().to_string());
        ui.weak(format!("{} points", t.rows.len()));
    });
    if t.varied.is_empty() || t.metrics.is_empty() {
        ui.weak("This sweep has no varied key or no metric to plot.");
        return;
    }
    ui.horizontal(|ui| {
        let l = ui.label("x: varied key");
        ComboBox::from_id_salt("sweep-x")
            .selected_text(&t.columns[v.x])
            .show_ui(ui, |ui| {
                for &c in &t.varied {
                    ui.selectable_value(&mut v.x, c, &t.columns[c]);
                }
            })
            .response
            .labelled_by(l.id);
        let l = ui.label("y: metric");
        ComboBox::from_id_salt("sweep-y")
            .selected_text(&t.columns[v.y])
            .show_ui(ui, |ui| {
                for &c in &t.metrics {
                    ui.selectable_value(&mut v.y, c, &t.columns[c]);
                }
            })
            .response
            .labelled_by(l.id);
    });
    ui.horizontal_wrapped(|ui| {
        ui.label("varied keys:");
        for &c in &t.varied {
            ui.label(RichText::new(&t.columns[c]).monospace());
        }
    });
    let (failed, first) = t.failed();
    if failed > 0 {
        ui.label(
            RichText::new(format!(
                "{failed} of {} points failed (status error), not plotted",
                t.rows.len()
            ))
            .color(egui::Color32::from_rgb(215, 50, 50)),
        )
        .on_hover_text(first.unwrap_or_default());
    }
    let (series, categories) = t.series(v.x, v.y);
    let y_name = t.columns[v.y].clone();
    let cats = categories.clone().unwrap_or_default();
    let mut plot = Plot::new("sweep")
        .height((ui.available_height() * 0.6).max(220.0))
        .x_axis_label(t.columns[v.x].clone())
        .y_axis_label(y_name.clone())
        .legend(Legend::default());
    if categories.is_some() {
        plot = plot.x_axis_formatter(move |mark, _| {
            let i = mark.value.round();
            if (mark.value - i).abs() > 1e-6 || i < 0.0 {
                String::new()
            } else {
                cats.get(i as usize).cloned().unwrap_or_default()
            }
        });
    }
    plot.show(ui, |plot| {
        for (i, (name, pts)) in series.iter().enumerate() {
            let name = if name.is_empty() {
                y_name.clone()
            } else {
                name.clone()
            };
            let color: egui::Color32 = if series.len() > 1 {
                egui::epaint::Hsva::new(i as f32 / series.len() as f32, 0.7, 0.8, 1.0).into()
            } else {
                egui::Color32::from_rgb(66, 133, 244)
            };
            plot.line(
                Line::new(name.clone(), PlotPoints::from(pts.clone()))
                    .color(color)
                    .width(1.5),
            );
            plot.points(
                Points::new(name, PlotPoints::from(pts.clone()))
                    .color(color)
                    .radius(3.5)
                    .shape(MarkerShape::Circle),
            );
        }
    });
    // The plotted points as a table.
    egui::ScrollArea::vertical()
        .id_salt("sweep-rows")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            egui::Grid::new("sweep-table").striped(true).show(ui, |ui| {
                ui.strong("point");
                for &c in &t.varied {
                    ui.strong(&t.columns[c]);
                }
                ui.strong("status");
                ui.strong(&y_name);
                ui.end_row();
                for r in &t.rows {
                    ui.label(text(&r[0]));
                    for &c in &t.varied {
                        ui.label(text(&r[c]));
                    }
                    ui.label(text(&r[t.status]));
                    ui.label(match r[v.y].as_f64() {
                        Some(x) => units::si(x, ""),
                        None => text(&r[v.y]),
                    });
                    ui.end_row();
                }
            });
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable;

    const CSV: &str = "\
point,points,parallel.micro_batch,parallel.recompute,status,error,iteration_time_s,mfu,memory.fits
0,6,1,none,ok,,1.18,0.51,true
1,6,1,full,ok,,1.54,0.39,true
2,6,2,none,ok,,1.12,0.54,true
3,6,2,full,ok,,1.47,0.41,true
4,6,3,none,error,\"global_batch = 256 is not a multiple, of 24\",,,
5,6,3,full,error,\"same\",,,
";

    fn table() -> SweepTable {
        SweepTable::parse(Path::new("s.csv"), CSV, false).unwrap()
    }

    #[test]
    fn csv_columns_split_into_varied_keys_and_metrics() {
        let t = table();
        let names = |ix: &[usize]| ix.iter().map(|&i| t.columns[i].clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&t.varied),
            ["parallel.micro_batch", "parallel.recompute"]
        );
        assert_eq!(
            names(&t.metrics),
            ["iteration_time_s", "mfu", "memory.fits"]
        );
        let (failed, first) = t.failed();
        assert_eq!(failed, 2);
        assert_eq!(
            first.as_deref(),
            Some("global_batch = 256 is not a multiple, of 24")
        );
    }

    #[test]
    fn jsonl_keeps_the_file_column_order() {
        let text = "{\"point\":0,\"points\":2,\"z.key\":1,\"a.key\":\"x\",\"status\":\"ok\",\"error\":\"\",\"mfu\":0.5}\n\
                    {\"point\":1,\"points\":2,\"z.key\":2,\"a.key\":\"y\",\"status\":\"ok\",\"error\":\"\",\"mfu\":0.6}\n";
        let t = SweepTable::parse(Path::new("s.jsonl"), text, true).unwrap();
        assert_eq!(
            t.varied
                .iter()
                .map(|&i| t.columns[i].as_str())
                .collect::<Vec<_>>(),
            ["z.key", "a.key"]
        );
        let (series, cats) = t.series(2, 6);
        assert!(cats.is_none());
        assert_eq!(series.len(), 2, "one series per value of a.key");
    }

    #[test]
    fn series_group_by_the_other_keys_and_skip_failures() {
        let t = table();
        let (series, cats) = t.series(2, 6);
        assert!(cats.is_none());
        assert_eq!(series.len(), 2);
        assert_eq!(series[0].0, "parallel.recompute=none");
        assert_eq!(t.rows[1][0], Value::from(1), "whole numbers stay whole");
        assert_eq!(series[0].1, [[1.0, 1.18], [2.0, 1.12]]);
        // A word-valued key is categorical.
        let (series, cats) = t.series(3, 7);
        assert_eq!(cats.unwrap(), ["none", "full"]);
        assert_eq!(series[0].1, [[0.0, 0.51], [1.0, 0.39]]);
    }

    #[test]
    fn not_a_sweep_is_refused() {
        assert!(
            SweepTable::parse(Path::new("x.csv"), "a,b\n1,2\n", false)
                .unwrap_err()
                .contains("not a clustersim sweep")
        );
        assert!(is_sweep_path("out/grid.CSV") && is_sweep_path("g.jsonl"));
        assert!(!is_sweep_path("a.toml"));
    }

    #[test]
    fn the_view_lists_the_varied_keys_and_counts_failures() {
        let mut v = SweepView::default();
        v.show_table(table());
        let mut h = Harness::new_ui_state(|ui, v: &mut SweepView| show(ui, v), v);
        h.set_size(egui::vec2(900.0, 700.0));
        h.run();
        h.get_by_label("varied keys:");
        // The key names appear in the list (and the x combo box and the table's head).
        assert!(h.query_all_by_label("parallel.recompute").count() >= 2);
        assert!(h.query_all_by_label("parallel.micro_batch").count() >= 2);
        h.get_by_label("2 of 6 points failed (status error), not plotted");
    }
}
