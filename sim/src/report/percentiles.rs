//! Mean and percentiles of a sample (seconds, tokens, whatever the sample holds): the nearest
//! rank of `q * (n - 1)`, no interpolation; all `None` for an empty sample.

use serde::{Deserialize, Serialize};

/// Mean, median, 90th and 99th percentile of a sample.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Percentiles {
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
}

impl Percentiles {
    /// The figures of sample `v`.
    pub fn of(mut v: Vec<f64>) -> Percentiles {
        if v.is_empty() {
            return Percentiles {
                mean: None,
                p50: None,
                p90: None,
                p99: None,
            };
        }
        v.sort_by(f64::total_cmp);
        let pick = |q: f64| Some(v[((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)]);
        Percentiles {
            mean: Some(v.iter().sum::<f64>() / v.len() as f64),
            p50: pick(0.5),
            p90: pick(0.9),
            p99: pick(0.99),
        }
    }
}
