//! A headline figure's prediction interval: the band a report's `uncertainty` puts around it
//! (80% of real measurements fall inside, judging by the simulator's validation errors), as a
//! weak line under a card's figure and in the compare table, with the validation regime, cases
//! and sources in its tooltip. A report without `uncertainty`, or without that metric, shows none.

use clustersim::uncertainty::Interval;
use egui::{RichText, Ui};
use serde_json::Value;

/// One figure's interval, in the figure's own unit (the library's `Interval`, read from the
/// report), with how the viewer writes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Band(Interval);

impl std::ops::Deref for Band {
    type Target = Interval;
    fn deref(&self) -> &Interval {
        &self.0
    }
}

impl Band {
    /// The interval of the figure at dotted `path` (`iteration_time_s`, `ttft_s.p50`) in
    /// `report["uncertainty"]`, if the report carries one for it.
    pub fn at(report: &Value, path: &str) -> Option<Band> {
        Interval::at(report, path).map(Band)
    }

    /// "80%".
    pub fn level_text(&self) -> String {
        format!("{:.0}%", self.level * 100.0)
    }

    /// "80%: 8.1 s – 9.6 s", the ends written as the figure is.
    pub fn text(&self, fmt: impl Fn(f64) -> String) -> String {
        format!(
            "{}: {} – {}",
            self.level_text(),
            fmt(self.low),
            fmt(self.high)
        )
    }

    /// What the interval is and where it comes from, for a tooltip.
    pub fn hover(&self) -> String {
        let from = match (self.cases, self.sources) {
            (Some(c), Some(s)) => format!(" ({c} case{} from {s} source{})", plural(c), plural(s)),
            (Some(c), None) => format!(" ({c} case{})", plural(c)),
            _ => String::new(),
        };
        format!(
            "{} prediction interval: where a measurement on a real cluster is expected to fall, \
             from the simulator's errors on validation regime {}{from}. It says nothing of \
             errors in the scenario itself.",
            self.level_text(),
            self.regime.as_deref().unwrap_or("?"),
        )
    }

    /// The band as drawn: its text, figures written by `fmt`, and its tooltip.
    pub fn line(&self, fmt: impl Fn(f64) -> String) -> Line {
        Line {
            text: self.text(fmt),
            hover: self.hover(),
        }
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A report's `uncertainty` object (null when it has none), read by dotted path.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bands(Value);

impl Bands {
    pub fn from_report(r: &Value) -> Bands {
        Bands(r.get("uncertainty").cloned().unwrap_or_default())
    }

    /// The line under the figure at dotted `path`, written by `fmt` like the figure.
    pub fn line(&self, path: &str, fmt: impl Fn(f64) -> String) -> Option<Line> {
        Some(Band(Interval::within(&self.0, path)?).line(fmt))
    }
}

/// An interval as drawn: a short text and a tooltip.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub text: String,
    pub hover: String,
}

/// Draws `line` small and weak, with its tooltip.
pub fn show(ui: &mut Ui, line: &Line) {
    ui.label(RichText::new(&line.text).small().weak())
        .on_hover_text(&line.hover);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cards::{self, Summary};
    use crate::compare;
    use crate::metrics::tests::{serving, shipped, training as metrics_training, with};
    use crate::units;
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable;
    use serde_json::json;

    fn entry(low: f64, high: f64) -> Value {
        json!({"low": low, "high": high, "level": 0.8, "regime": "training/one-server",
               "cases": 134, "sources": 4})
    }

    /// A real training report with an `iteration` s step, 1,000 tokens a step and 400 TFLOP/s
    /// a GPU, with the interval `band` on its step time and throughput or with none.
    fn training(iteration: f64, band: Option<(f64, f64)>) -> Value {
        let mut r = with(
            metrics_training(),
            &[
                ("/iteration_time_s", json!(iteration)),
                ("/tokens_per_s", json!(1000.0 / iteration)),
                ("/tflops_per_gpu", json!(400.0)),
            ],
        );
        let m = r.as_object_mut().unwrap();
        m.remove("uncertainty");
        if let Some((low, high)) = band {
            m.insert(
                "uncertainty".into(),
                json!({
                    "regime": "training/one-server/16-bit",
                    "iteration_time_s": entry(low, high),
                    "tokens_per_s": entry(1000.0 / high, 1000.0 / low),
                }),
            );
        }
        r
    }

    fn cards_of(r: &Value) -> Harness<'static> {
        let s = Summary::from_report(r);
        let mut h = Harness::new_ui(move |ui| cards::show(ui, &s));
        h.run();
        h
    }

    #[test]
    fn reads_an_interval_by_dotted_path() {
        let r =
            json!({"uncertainty": {"ttft_s": {"p50": entry(0.1, 0.2)}, "time_s": {"low": 1.0}}});
        let b = Band::at(&r, "ttft_s.p50").unwrap();
        assert_eq!(
            (b.low, b.high, b.cases, b.sources),
            (0.1, 0.2, Some(134), Some(4))
        );
        assert_eq!(b.text(units::duration), "80%: 100.0 ms – 200.0 ms");
        assert!(b.contains(0.15) && !b.contains(0.25));
        assert!(
            b.hover()
                .contains("training/one-server (134 cases from 4 sources)")
        );
        assert_eq!(Band::at(&r, "ttft_s.p99"), None, "no such metric");
        assert_eq!(Band::at(&r, "time_s"), None, "no high");
        assert_eq!(
            Band::at(&json!({"time_s": 1.0}), "time_s"),
            None,
            "no uncertainty"
        );
    }

    #[test]
    fn training_cards_show_the_interval_under_the_figure() {
        let h = cards_of(&training(1.5, Some((1.25, 2.0))));
        h.get_by_label("1.5 s");
        h.get_by_label("80%: 1.25 s – 2.0 s");
        h.get_by_label("80%: 500.0 tokens/s – 800.0 tokens/s");
        // tflops_per_gpu has no interval in this report: no line for it.
        assert_eq!(h.query_all_by_label_contains("80%:").count(), 2);
    }

    #[test]
    fn kind_cards_show_their_intervals() {
        let r = with(
            serving(),
            &[
                ("/throughput/requests_per_s", json!(2.0)),
                ("/ttft_s/p50", json!(0.1)),
                ("/tpot_s/p50", json!(0.02)),
                (
                    "/uncertainty",
                    json!({"regime": "serving/small-batch",
                           "ttft_s": {"p50": entry(0.09, 0.15)},
                           "throughput": {"requests_per_s": entry(1.5, 2.5)}}),
                ),
            ],
        );
        let h = cards_of(&r);
        h.get_by_label("80%: 90.0 ms – 150.0 ms");
        h.get_by_label("80%: 1.50 requests/s – 2.50 requests/s");
        assert_eq!(h.query_all_by_label_contains("80%:").count(), 2);
        let c = with(
            shipped("papers/zccl-all-reduce-16x4xa100-fast.toml", &[]),
            &[
                ("/time_s", json!(0.01)),
                ("/busbw_GBps", json!(100.0)),
                (
                    "/uncertainty",
                    json!({"time_s": entry(0.009, 0.012), "busbw_GBps": entry(80.0, 110.0)}),
                ),
            ],
        );
        let h = cards_of(&c);
        h.get_by_label("80%: 9.0 ms – 12.0 ms");
        h.get_by_label("80%: 80.0 GB/s – 110.0 GB/s");
    }

    #[test]
    fn the_interval_names_its_regime_on_hover() {
        let mut h = cards_of(&training(1.5, Some((1.25, 2.0))));
        h.get_by_label("80%: 1.25 s – 2.0 s").hover();
        h.run();
        h.get_by_label_contains("validation regime training/one-server (134 cases from 4 sources)");
    }

    #[test]
    fn a_shipped_run_carries_its_intervals_onto_its_cards() {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/papers/zccl-all-reduce-16x4xa100-fast.toml");
        let scenario = clustersim::Scenario::load(&path, &[]).unwrap();
        let r = clustersim::run(&scenario).unwrap().report;
        let time = Band::at(&r, "time_s").expect("a collective report has an interval");
        assert!(time.low < time.high && time.level == 0.8);
        let h = cards_of(&r);
        h.get_by_label(&time.text(units::duration));
        let busbw = Band::at(&r, "busbw_GBps").expect("and its bus bandwidth one");
        h.get_by_label(&busbw.text(|x| format!("{x:.1} GB/s")));
    }

    #[test]
    fn a_report_without_uncertainty_shows_no_interval() {
        let h = cards_of(&training(1.5, None));
        h.get_by_label("1.5 s");
        assert!(h.query_all_by_label_contains("80%").next().is_none());
        let r = shipped(
            "papers/private-fl-nnlm-100k-vocab-peu-lora.toml",
            &["federated.rounds=5"],
        );
        assert!(
            cards_of(&r)
                .query_all_by_label_contains("80%")
                .next()
                .is_none()
        );
        let rows = compare::rows(&training(1.0, None), &training(1.5, None));
        let mut h = Harness::new_ui(move |ui| compare::show(ui, "a", "b", &rows));
        h.run();
        h.get_by_label("+50.0% worse");
        assert!(h.query_all_by_label_contains("interval").next().is_none());
    }

    #[test]
    fn the_compare_says_when_a_difference_is_inside_the_interval() {
        // 1.0 s against 1.05 s, whose interval reaches down to 0.9 s: inside, not a loss.
        let close = compare::rows(&training(1.0, None), &training(1.05, Some((0.9, 1.3))));
        let mut h = Harness::new_ui(move |ui| compare::show(ui, "a", "b", &close));
        h.run();
        h.get_by_label("900.0 ms – 1.3 s");
        h.get_by_label("+5.0% worse, inside 80%");
        assert!(h.query_by_label("+5.0% worse").is_none());
        // 1.0 s against 2.0 s (interval 1.8 s – 2.6 s): a real difference, judged as before.
        let far = compare::rows(&training(1.0, None), &training(2.0, Some((1.8, 2.6))));
        let mut h = Harness::new_ui(move |ui| compare::show(ui, "a", "b", &far));
        h.run();
        h.get_by_label("1.8 s – 2.6 s");
        h.get_by_label("+100.0% worse");
        assert!(h.query_all_by_label_contains("inside").next().is_none());
    }
}
