//! Figures over rows: counts, the median |error| and the bias, and the worst case, over all
//! cases, by group, and over the secondary figures.

use super::row::{Row, Status};
use crate::stats;
use serde_json::{Value, json};

/// Figures over a set of primary rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    pub cases: usize,
    pub compared: usize,
    pub not_expressible: usize,
    pub failed: usize,
    /// Median of |error| over compared rows (the upper median for an even count).
    pub median_abs_error: Option<f64>,
    /// Median signed error: the bias.
    pub median_error: Option<f64>,
    /// The compared row with the largest |error|: id and error.
    pub worst: Option<(String, f64)>,
}

impl Stats {
    fn of<'a>(rows: impl Iterator<Item = &'a Row>) -> Stats {
        let mut s = Stats {
            cases: 0,
            compared: 0,
            not_expressible: 0,
            failed: 0,
            median_abs_error: None,
            median_error: None,
            worst: None,
        };
        let mut errors = Vec::new();
        for r in rows {
            s.cases += 1;
            match (&r.status, r.error) {
                (Status::Compared, Some(e)) => {
                    s.compared += 1;
                    errors.push(e);
                    if s.worst.as_ref().is_none_or(|(_, w)| e.abs() > w.abs()) {
                        s.worst = Some((r.id.clone(), e));
                    }
                }
                (Status::Compared, None) | (Status::Failed(_), _) => s.failed += 1,
                (Status::NotExpressible(_), _) => s.not_expressible += 1,
            }
        }
        s.median_error = upper_median(errors.clone());
        s.median_abs_error = upper_median(errors.iter().map(|e| e.abs()).collect());
        s
    }

    pub fn to_json(&self) -> Value {
        json!({
            "cases": self.cases,
            "compared": self.compared,
            "not_expressible": self.not_expressible,
            "failed": self.failed,
            "median_abs_error": self.median_abs_error,
            "median_error": self.median_error,
            "worst": self.worst.as_ref().map(|(id, e)| json!({"id": id, "error": e})),
        })
    }
}

/// The upper median: the middle value, the higher of the middle two for an even count, as the
/// validation documents have always reported it ([`stats::median`] averages the middle two). For
/// an even count that is the median of all values but the smallest, which `stats::median` finds.
fn upper_median(mut v: Vec<f64>) -> Option<f64> {
    let median = stats::median(&mut v)?; // sorts v
    if v.len() % 2 == 1 {
        Some(median)
    } else {
        stats::median(&mut v[1..])
    }
}

/// The summary of a validation: over all cases (their primary rows), by group, and over the
/// secondary rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub all: Stats,
    pub groups: Vec<(String, Stats)>,
    pub secondary: Stats,
}

/// Summarises rows: primary rows by case and by group (in first-seen order), secondary apart.
pub fn summarize(rows: &[Row]) -> Summary {
    let mut groups: Vec<String> = Vec::new();
    for r in rows {
        if !groups.contains(&r.group) {
            groups.push(r.group.clone());
        }
    }
    Summary {
        all: Stats::of(rows.iter().filter(|r| r.primary)),
        groups: groups
            .into_iter()
            .map(|g| {
                let s = Stats::of(rows.iter().filter(|r| r.primary && r.group == g));
                (g, s)
            })
            .collect(),
        secondary: Stats::of(rows.iter().filter(|r| !r.primary)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::case::group_of;

    #[test]
    fn medians_and_worst_cases() {
        let row = |id: &str, e: Option<f64>, status: Status| Row {
            id: id.into(),
            group: group_of(id),
            metric: String::new(),
            short: String::new(),
            unit: String::new(),
            measured: 1.0,
            predicted: e.map(|e| 1.0 + e),
            error: e,
            status,
            assumptions: vec![],
            wall_s: 0.0,
            primary: true,
            scenario: None,
            fits: None,
            regime: None,
        };
        let rows = vec![
            row("a-1", Some(0.1), Status::Compared),
            row("a-2", Some(-0.3), Status::Compared),
            row("b-1", Some(0.2), Status::Compared),
            row("b-2", None, Status::NotExpressible("x".into())),
        ];
        let s = summarize(&rows);
        assert_eq!(s.all.compared, 3);
        assert_eq!(s.all.not_expressible, 1);
        assert_eq!(s.all.median_abs_error, Some(0.2));
        assert_eq!(s.all.worst, Some(("a-2".to_string(), -0.3)));
        assert_eq!(s.groups[0].0, "a");
        assert_eq!(s.groups[1].1.compared, 1);
    }

    #[test]
    fn upper_median_is_the_higher_middle_value() {
        // The median validate computed before it used stats::median.
        let former = |mut v: Vec<f64>| {
            if v.is_empty() {
                return None;
            }
            v.sort_by(f64::total_cmp);
            Some(v[v.len() / 2])
        };
        let samples = [
            vec![],
            vec![0.5],
            vec![0.3, -0.1],
            vec![0.2, 0.1, 0.4],
            vec![0.4, 0.1, 0.3, 0.2],
            vec![0.1, f64::NAN, -0.2, 0.3],
            vec![f64::NAN, 0.1],
            vec![-f64::NAN, 0.1, 0.2],
        ];
        for v in samples {
            let (old, new) = (former(v.clone()), upper_median(v.clone()));
            assert_eq!(old.map(f64::to_bits), new.map(f64::to_bits), "{v:?}");
        }
        assert_eq!(upper_median(vec![0.4, 0.1, 0.3, 0.2]), Some(0.3));
    }
}
