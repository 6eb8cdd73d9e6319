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
use serde_json::{Map, Value, json};

/// Whether a metric is a time (the residual's direction) or a rate (its inverse).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Reading {
    Time,
    Rate,
}

/// The headline metrics of a kind of report, dotted paths, and how each reads.
pub fn headline(kind: &str) -> &'static [(&'static str, Reading)] {
    use Reading::{Rate, Time};
    match kind {
        "training" => &[
            ("iteration_time_s", Time),
            ("tokens_per_s", Rate),
            ("tflops_per_gpu", Rate),
        ],
        "serving" => &[
            ("throughput.requests_per_s", Rate),
            ("throughput.output_tokens_per_s", Rate),
            ("ttft_s.p50", Time),
            ("tpot_s.p50", Time),
        ],
        "diffusion" => &[("latency_s", Time), ("videos_per_hour", Rate)],
        "collective" => &[("time_s", Time), ("busbw_GBps", Rate)],
        _ => &[],
    }
}

/// Adds `uncertainty` to a report of a kind with a regime, from the shipped residuals.
pub fn attach(report: &mut Value) {
    if let Some(u) = of_report(report, Table::shipped()) {
        report["uncertainty"] = u;
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
        };
        let entry = json!({
            "low": low,
            "high": high,
            "level": estimate::LEVEL,
            "regime": regime,
            "cases": band.cases,
            "sources": band.sources,
        });
        insert(&mut out, path, entry);
    }
    Some(Value::Object(out))
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
        let report = json!({
            "kind": "serving", "cluster": {"replicas": 1}, "serving": {"max_batch_size": 4},
            "throughput": {"requests_per_s": 2.0, "output_tokens_per_s": 0.0},
            "ttft_s": {"p50": 0.1}, "tpot_s": {"p50": 0.01}
        });
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
    fn kinds_without_a_regime_get_none() {
        assert_eq!(of_report(&json!({"kind": "kernels"}), &table()), None);
        let training = json!({"kind": "training", "cluster": {"nodes": 1},
                              "model": {"dtype": "bf16"}, "iteration_time_s": 1.0});
        assert_eq!(of_report(&training, &table()), None);
    }
}
