//! One row per point of a sweep, and the table of them.
//!
//! Columns, in order: `point` (its number in the whole grid), `points` (the grid's size), one
//! column per varied key (named by the dotted key, holding the value as typed), `status` (`ok`
//! or `error`), `error` (one line, empty when ok), then the metrics. A row never holds a
//! wall-clock value, so the same sweep gives the same rows.
//!
//! A varied value is a JSON number or boolean in the cell when its text reads back as exactly
//! that (`2`, `0.5`, `true`) and a string otherwise (`"200 Gb/s"`, `1f1b`), so CSV shows the
//! text as typed and JSON Lines gives numbers where the user wrote numbers.

use super::grid::Axis;
use serde_json::Value;

pub const OK: &str = "ok";
pub const ERROR: &str = "error";

/// The fixed columns before the varied keys.
pub const LEADING: [&str; 2] = ["point", "points"];
/// The fixed columns between the varied keys and the metrics.
pub const MIDDLE: [&str; 2] = ["status", "error"];

/// Column names: `point`, `points`, the varied keys, `status`, `error`, the metrics.
pub fn columns(axes: &[Axis], metrics: &[String]) -> Vec<String> {
    LEADING
        .iter()
        .map(|s| s.to_string())
        .chain(axes.iter().map(|a| a.key.clone()))
        .chain(MIDDLE.iter().map(|s| s.to_string()))
        .chain(metrics.iter().cloned())
        .collect()
}

/// One point's row: cells aligned with [`columns`].
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub point: usize,
    /// Whether the point ran (its `status` is `ok`).
    pub ok: bool,
    pub cells: Vec<Value>,
}

impl Row {
    /// A point that ran: its metrics, `None` where the report has no such key (an empty cell).
    pub fn ok(point: usize, points: usize, values: &[&str], metrics: Vec<Option<Value>>) -> Row {
        Row::new(
            point,
            points,
            values,
            OK,
            "",
            metrics.into_iter().map(|m| m.unwrap_or(Value::Null)),
        )
    }

    /// A point that failed: the error on one line, every metric empty.
    pub fn failed(
        point: usize,
        points: usize,
        values: &[&str],
        error: &str,
        metrics: usize,
    ) -> Row {
        let line = error.split_whitespace().collect::<Vec<_>>().join(" ");
        Row::new(
            point,
            points,
            values,
            ERROR,
            &line,
            std::iter::repeat_n(Value::Null, metrics),
        )
    }

    fn new(
        point: usize,
        points: usize,
        values: &[&str],
        status: &str,
        error: &str,
        metrics: impl Iterator<Item = Value>,
    ) -> Row {
        let cells = [Value::from(point), Value::from(points)]
            .into_iter()
            .chain(values.iter().map(|v| value_cell(v)))
            .chain([Value::from(status), Value::from(error)])
            .chain(metrics)
            .collect();
        Row {
            point,
            ok: status == OK,
            cells,
        }
    }
}

/// The rows of a sweep, in point order.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
}

/// A varied value as a cell: a number or boolean when its text reads back as exactly that.
fn value_cell(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        // Compare the printed text: `Value == str` would only match JSON strings.
        Ok(v @ (Value::Number(_) | Value::Bool(_)))
            if serde_json::to_string(&v).ok().as_deref() == Some(text) =>
        {
            v
        }
        _ => Value::from(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_keep_their_text() {
        assert_eq!(value_cell("2"), json!(2));
        assert_eq!(value_cell("0.5"), json!(0.5));
        assert_eq!(value_cell("true"), json!(true));
        assert_eq!(value_cell("1e3"), json!("1e3"));
        assert_eq!(value_cell("200 Gb/s"), json!("200 Gb/s"));
        assert_eq!(value_cell("\"H100\""), json!("\"H100\""));
    }

    #[test]
    fn rows_line_up_with_columns() {
        let axes = vec![Axis {
            key: "parallel.tp".into(),
            values: vec!["1".into()],
        }];
        let metrics = vec!["mfu".to_string()];
        let cols = columns(&axes, &metrics);
        assert_eq!(
            cols,
            ["point", "points", "parallel.tp", "status", "error", "mfu"]
        );
        let ok = Row::ok(3, 8, &["1"], vec![Some(json!(0.5))]);
        assert_eq!(
            ok.cells,
            [
                json!(3),
                json!(8),
                json!(1),
                json!("ok"),
                json!(""),
                json!(0.5)
            ]
        );
        assert!(ok.ok);
        let bad = Row::failed(4, 8, &["1"], "no\n  good", 1);
        assert_eq!(bad.cells[4], json!("no good"));
        assert_eq!(bad.cells[5], Value::Null);
        assert!(!bad.ok);
    }
}
