//! Prediction intervals: how far a headline figure may be from what the user's cluster would
//! measure, from the simulator's errors on published measurements. A run maps to its regime
//! ([`regime`]); the residuals of that regime's validation cases ([`residual`], generated from
//! validation/ and checked in) make an 80% interval for a case from a new source ([`estimate`]);
//! a regime with too few sources uses its parent's. [`attach`] writes `uncertainty` into a
//! report: per headline metric `{low, high, level, regime, cases, sources}` and the run's own
//! `regime`. The intervals say nothing of errors in the scenario itself (a wrong model or
//! cluster). docs/UNCERTAINTY.md describes the method and its coverage.

pub mod estimate;
pub mod regime;
pub mod residual;

use residual::{Found, Table};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// One figure's entry in a report's `uncertainty`, in the figure's unit: what `attach` writes
/// and what the summary, the planner and the viewer read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
    #[serde(default = "default_level")]
    pub level: f64,
    /// The regime whose residuals made it (the run's own or a parent).
    pub regime: Option<String>,
    pub cases: Option<u64>,
    pub sources: Option<u64>,
}

fn default_level() -> f64 {
    estimate::LEVEL
}

impl Interval {
    /// The interval of the figure at dotted `path` (`ttft_s.p50`) in `report["uncertainty"]`.
    pub fn at(report: &Value, path: &str) -> Option<Interval> {
        Interval::within(report.get("uncertainty")?, path)
    }

    /// The interval at dotted `path` inside any object (an `uncertainty`, a plan's row);
    /// None unless its ends are finite and in order.
    pub fn within(object: &Value, path: &str) -> Option<Interval> {
        let v = path.split('.').try_fold(object, |v, k| v.get(k))?;
        let i: Interval = serde_json::from_value(v.clone()).ok()?;
        (i.low.is_finite() && i.high.is_finite() && i.low <= i.high).then_some(i)
    }

    /// Whether `x` lies inside (ends included).
    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }
}

/// Whether a metric is a time (the residual's direction), a rate (its inverse), or a serving
/// throughput: completions over a span of which the arrivals fix a part (`throughput.
/// arrival_span_s` of `throughput.span_s`) and only the rest, the tail after the last arrival,
/// scales with the simulator's error. Offline, the tail is the whole span: a plain rate; under
/// a light open-loop load, the throughput is nearly the arrival rate, whatever the error.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Reading {
    Time,
    Rate,
    Throughput,
}

/// The headline metrics of a kind of report, dotted paths, and how each reads.
pub fn headline(kind: &str) -> &'static [(&'static str, Reading)] {
    use Reading::{Rate, Throughput, Time};
    match kind {
        "training" => &[
            ("iteration_time_s", Time),
            ("tokens_per_s", Rate),
            ("tflops_per_gpu", Rate),
        ],
        "serving" => &[
            ("throughput.requests_per_s", Throughput),
            ("throughput.output_tokens_per_s", Throughput),
            ("ttft_s.p50", Time),
            ("tpot_s.p50", Time),
        ],
        "diffusion" => &[("latency_s", Time), ("videos_per_hour", Rate)],
        "collective" => &[("time_s", Time), ("busbw_GBps", Rate)],
        _ => &[],
    }
}

/// Adds `uncertainty` to a report of a kind with a regime, from the shipped residuals; a cluster
/// run's to each of its jobs' reports (`jobs[i].report`).
pub fn attach(report: &mut Value) {
    if let Some(u) = of_report(report, Table::shipped()) {
        report["uncertainty"] = u;
    }
    if let Some(jobs) = report.get_mut("jobs").and_then(Value::as_array_mut) {
        for job in jobs {
            if let Some(r) = job.get_mut("report").filter(|r| r.is_object()) {
                attach(r);
            }
        }
    }
}

/// The `uncertainty` object of a report from `table`, or None for a kind without a regime or a
/// regime no residuals reach.
pub fn of_report(report: &Value, table: &Table) -> Option<Value> {
    let own = regime::of_report(report)?;
    let Found { band, regime } = table.band(&own, None)?;
    let mut out = Map::new();
    out.insert("regime".into(), json!(own));
    for (path, reading) in headline(report["kind"].as_str()?) {
        let Some(predicted) = lookup(report, path).filter(|p| p.is_finite() && *p > 0.0) else {
            continue;
        };
        let (low, high) = match reading {
            Reading::Time => band.time(predicted),
            Reading::Rate => band.rate(predicted),
            Reading::Throughput => throughput(report, &band, predicted),
        };
        let entry = Interval {
            low,
            high,
            level: estimate::LEVEL,
            regime: Some(regime.clone()),
            cases: Some(band.cases as u64),
            sources: Some(band.sources as u64),
        };
        insert(
            &mut out,
            path,
            serde_json::to_value(entry).expect("an interval serialises"),
        );
    }
    Some(Value::Object(out))
}

/// The interval of a serving throughput: the span's tail after the last arrival scaled by the
/// band, the arrivals' span kept. A report without the spans reads as a plain rate.
fn throughput(report: &Value, band: &estimate::Band, predicted: f64) -> (f64, f64) {
    let spans = (
        lookup(report, "throughput.span_s"),
        lookup(report, "throughput.arrival_span_s"),
    );
    let (Some(span), Some(arrivals)) = spans else {
        return band.rate(predicted);
    };
    if !(span > 0.0 && arrivals >= 0.0) {
        return band.rate(predicted);
    }
    let fixed = arrivals.min(span);
    let tail = span - fixed;
    // A time band's ends (low, high) are the measured tail's (shortest, longest).
    let (short, long) = band.time(tail);
    (
        predicted * span / (fixed + long),
        predicted * span / (fixed + short),
    )
}

/// The number at a dotted path.
fn lookup(v: &Value, path: &str) -> Option<f64> {
    path.split('.')
        .try_fold(v, |v, p| v.get(p))
        .and_then(Value::as_f64)
}

/// Puts `value` at a dotted path, making the objects on the way.
fn insert(map: &mut Map<String, Value>, path: &str, value: Value) {
    match path.split_once('.') {
        None => {
            map.insert(path.into(), value);
        }
        Some((head, rest)) => {
            let inner = map.entry(head).or_insert_with(|| json!({}));
            if let Value::Object(m) = inner {
                insert(m, rest, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use residual::Residual;

    /// The report of a small fleet (one replica of at most 4 requests: small batches), with the
    /// figures at the dotted `paths` set to the values given.
    fn serving(figures: &[(&str, f64)]) -> Value {
        let text = "kind = \"serving\"\n[cluster]\ngpu = \"H100\"\n[model]\n\
                    preset = \"llama-3.1-8b\"\n[serving]\nmax_batch_size = 4\n[workload]\n\
                    requests = 4\narrival = \"offline\"\nprompt_tokens = 16\noutput_tokens = 4\n";
        let s = crate::Scenario::parse(std::path::Path::new("s.toml"), text.into(), &[]).unwrap();
        let mut report = crate::run(&s).unwrap().report;
        for (path, x) in figures {
            let (head, key) = path.split_once('.').unwrap();
            report[head][key] = json!(x);
        }
        report
    }

    fn table() -> Table {
        let r = |source: &str, x: f64| Residual {
            id: format!("{source}-1"),
            source: source.into(),
            file: "f.json".into(),
            regime: "serving/small-batch".into(),
            x,
        };
        Table {
            residuals: vec![r("a", -0.2), r("b", -0.1), r("c", 0.0)],
        }
    }

    #[test]
    fn times_and_rates_get_intervals_on_the_side_the_errors_point() {
        let report = serving(&[
            ("throughput.requests_per_s", 2.0),
            ("throughput.output_tokens_per_s", 0.0),
            ("ttft_s.p50", 0.1),
            ("tpot_s.p50", 0.01),
        ]);
        let u = of_report(&report, &table()).unwrap();
        assert_eq!(u["regime"], "serving/small-batch");
        let t = &u["ttft_s"]["p50"];
        assert_eq!(t["level"], 0.8);
        assert_eq!(t["cases"], 3);
        // The simulator ran fast on these cases (x < 0): the measured time is likely longer.
        let (low, high) = (t["low"].as_f64().unwrap(), t["high"].as_f64().unwrap());
        assert!(low < high && high > 0.1 && (low + high) / 2.0 > 0.1);
        let rps = &u["throughput"]["requests_per_s"];
        assert!(rps["high"].as_f64().unwrap() > rps["low"].as_f64().unwrap());
        assert!(rps["low"].as_f64().unwrap() < 2.0);
        // A zero figure gets no interval.
        assert!(u["throughput"].get("output_tokens_per_s").is_none());
    }

    #[test]
    fn throughput_under_open_loop_arrivals_moves_only_with_the_tail() {
        let serving = |arrival_span: f64| {
            serving(&[
                ("throughput.requests_per_s", 1.0),
                ("throughput.output_tokens_per_s", 100.0),
                ("throughput.span_s", 100.0),
                ("throughput.arrival_span_s", arrival_span),
            ])
        };
        let width = |u: &Value| {
            let t = &u["throughput"]["requests_per_s"];
            t["high"].as_f64().unwrap() / t["low"].as_f64().unwrap()
        };
        let offline = of_report(&serving(0.0), &table()).unwrap();
        let open = of_report(&serving(95.0), &table()).unwrap();
        // Offline the throughput is a plain rate; with arrivals over 95% of the span, a far
        // narrower interval, still on the same side.
        let b = table().band("serving/small-batch", None).unwrap().band;
        let (lo, hi) = b.rate(1.0);
        let t = &offline["throughput"]["requests_per_s"];
        assert!((t["low"].as_f64().unwrap() - lo).abs() < 1e-12);
        assert!((t["high"].as_f64().unwrap() - hi).abs() < 1e-12);
        assert!(width(&open) > 1.0 && width(&open) - 1.0 < 0.1 * (width(&offline) - 1.0));
        let end = |u: &Value, k: &str| u["throughput"]["requests_per_s"][k].as_f64().unwrap();
        assert!(end(&open, "low") >= end(&offline, "low"));
        assert!(end(&open, "high") <= end(&offline, "high"));
    }

    #[test]
    fn an_interval_reads_back_what_attach_wrote() {
        // (a zero figure has no interval)
        let mut report = serving(&[("ttft_s.p50", 0.1), ("tpot_s.p50", 0.0)]);
        report["uncertainty"] = of_report(&report, &table()).unwrap();
        let i = Interval::at(&report, "ttft_s.p50").unwrap();
        assert_eq!(i.regime.as_deref(), Some("serving/small-batch"));
        assert_eq!((i.cases, i.sources, i.level), (Some(3), Some(3), 0.8));
        assert!(i.contains((i.low + i.high) / 2.0) && !i.contains(i.high * 2.0));
        assert_eq!(Interval::at(&report, "tpot_s.p50"), None);
        let backwards = json!({"uncertainty": {"x": {"low": 2.0, "high": 1.0}}});
        assert_eq!(Interval::at(&backwards, "x"), None);
    }

    #[test]
    fn kinds_without_a_regime_get_none() {
        assert_eq!(of_report(&json!({"kind": "kernels"}), &table()), None);
        let training = json!({"kind": "training", "cluster": {"nodes": 1},
                              "model": {"dtype": "bf16"}, "iteration_time_s": 1.0});
        assert_eq!(of_report(&training, &table()), None);
    }
}
