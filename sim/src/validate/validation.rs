//! The outcome of validating a file: every row and their summary, as JSON, and the reasons of the
//! cases the simulator cannot express.

use super::row::{Row, Status};
use super::summary::Summary;
use serde_json::{Map, Value, json};
use std::path::Path;

/// Every row of a file, and the summary.
#[derive(Clone, Debug)]
pub struct Validation {
    pub rows: Vec<Row>,
    pub summary: Summary,
    pub wall_s: f64,
}

impl Validation {
    pub fn to_json(&self, file: &Path) -> Value {
        let groups: Map<String, Value> = self
            .summary
            .groups
            .iter()
            .map(|(g, s)| (g.clone(), s.to_json()))
            .collect();
        json!({
            "file": file.display().to_string(),
            "summary": {
                "all": self.summary.all.to_json(),
                "groups": groups,
                "secondary": self.summary.secondary.to_json(),
            },
            "rows": self.rows.iter().map(Row::to_json).collect::<Vec<_>>(),
            "wall_s": self.wall_s,
        })
    }

    /// Reasons of the not-expressible cases, each with the ids it applies to, in first-seen order.
    pub fn not_expressible(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for r in self.rows.iter().filter(|r| r.primary) {
            if let Status::NotExpressible(why) = &r.status {
                match out.iter_mut().find(|(w, _)| w == why) {
                    Some((_, ids)) => ids.push(r.id.clone()),
                    None => out.push((why.clone(), vec![r.id.clone()])),
                }
            }
        }
        out
    }
}
