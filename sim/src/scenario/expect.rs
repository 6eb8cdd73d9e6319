//! `[expect]`: assertions on a run's report, evaluated by `clustersim check`.
//!
//! Keys are dotted paths into the report JSON (`"tflops_per_gpu"`, `"memory.fits"`,
//! `"breakdown_s.compute"`); each holds `min`, `max` (inclusive) and/or `equals`.

use serde::Deserialize;
use serde_json::Value;
use std::fmt;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub equals: Option<Value>,
}

/// The verdict on one expectation.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub path: String,
    pub actual: Option<Value>,
    pub failure: Option<String>,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failure {
            None => write!(
                f,
                "ok   {} = {}",
                self.path,
                self.actual.as_ref().map_or("?".into(), Value::to_string)
            ),
            Some(why) => write!(f, "FAIL {}: {why}", self.path),
        }
    }
}

/// Looks up a dotted path in a JSON report; a number indexes an array (`cluster.groups.0.gpu`).
pub fn lookup<'a>(report: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(report, |v, part| match v {
        Value::Array(items) => part.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => v.get(part),
    })
}

/// Every leaf path of a report, for suggestions.
pub fn leaf_paths(report: &Value) -> Vec<String> {
    fn walk(v: &Value, prefix: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(child, &p, out);
                }
            }
            Value::Array(items) if items.iter().any(|i| i.is_object() || i.is_array()) => {
                for (k, child) in items.iter().enumerate() {
                    walk(child, &format!("{prefix}.{k}"), out);
                }
            }
            _ => out.push(prefix.to_string()),
        }
    }
    let mut out = Vec::new();
    walk(report, "", &mut out);
    out
}

impl Expectation {
    /// Checks this expectation on `report` at `path`.
    pub fn evaluate(&self, path: &str, report: &Value) -> Outcome {
        let Some(actual) = lookup(report, path) else {
            let hint = super::suggest::closest(path, leaf_paths(report).iter().map(String::as_str))
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            return Outcome {
                path: path.into(),
                actual: None,
                failure: Some(format!("the report has no key `{path}`{hint}")),
            };
        };
        let failure = self.failure(actual);
        Outcome {
            path: path.into(),
            actual: Some(actual.clone()),
            failure,
        }
    }

    fn failure(&self, actual: &Value) -> Option<String> {
        if let Some(expected) = &self.equals
            && !same(expected, actual)
        {
            return Some(format!("expected {expected}, got {actual}"));
        }
        if self.min.is_none() && self.max.is_none() {
            return None;
        }
        let Some(x) = actual.as_f64() else {
            return Some(format!("min/max need a number, the report has {actual}"));
        };
        if let Some(min) = self.min
            && x < min
        {
            return Some(format!(
                "{x} is below the minimum {min} by {} ({:.1}%)",
                min - x,
                100.0 * (min - x) / min.abs().max(f64::MIN_POSITIVE)
            ));
        }
        if let Some(max) = self.max
            && x > max
        {
            return Some(format!(
                "{x} is above the maximum {max} by {} ({:.1}%)",
                x - max,
                100.0 * (x - max) / max.abs().max(f64::MIN_POSITIVE)
            ));
        }
        None
    }
}

/// Equality that treats 2 and 2.0 alike.
fn same(expected: &Value, actual: &Value) -> bool {
    match (expected.as_f64(), actual.as_f64()) {
        (Some(a), Some(b)) => a == b,
        _ => expected == actual,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report() -> Value {
        json!({"tflops_per_gpu": 150.0, "memory": {"fits": true, "peak_bytes_per_gpu": 7}})
    }

    #[test]
    fn ranges_pass_and_fail_with_the_margin() {
        let e = Expectation {
            min: Some(120.0),
            max: Some(140.0),
            equals: None,
        };
        let o = e.evaluate("tflops_per_gpu", &report());
        assert!(!o.passed());
        let why = o.failure.unwrap();
        assert!(why.contains("above the maximum 140 by 10 (7.1%)"), "{why}");
        let ok = Expectation {
            min: Some(150.0),
            max: None,
            equals: None,
        };
        assert!(ok.evaluate("tflops_per_gpu", &report()).passed());
    }

    #[test]
    fn equals_compares_values_and_numbers_loosely() {
        let e = Expectation {
            equals: Some(json!(true)),
            ..Default::default()
        };
        assert!(e.evaluate("memory.fits", &report()).passed());
        let e = Expectation {
            equals: Some(json!(7)),
            ..Default::default()
        };
        assert!(e.evaluate("memory.peak_bytes_per_gpu", &report()).passed());
        let e = Expectation {
            equals: Some(json!(false)),
            ..Default::default()
        };
        assert_eq!(
            e.evaluate("memory.fits", &report()).failure.unwrap(),
            "expected false, got true"
        );
    }

    #[test]
    fn numbers_index_arrays() {
        let r = serde_json::json!({ "groups": [{ "gpu": "H100" }, { "gpu": "L40S" }] });
        assert_eq!(lookup(&r, "groups.1.gpu"), Some(&serde_json::json!("L40S")));
        assert_eq!(lookup(&r, "groups.2.gpu"), None);
        assert_eq!(lookup(&r, "groups.x"), None);
        assert!(leaf_paths(&r).contains(&"groups.0.gpu".to_string()));
    }

    #[test]
    fn missing_paths_suggest_the_closest() {
        let e = Expectation {
            min: Some(1.0),
            ..Default::default()
        };
        let why = e.evaluate("memory.fit", &report()).failure.unwrap();
        assert!(why.contains("did you mean `memory.fits`"), "{why}");
    }
}
