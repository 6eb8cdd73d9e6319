//! One row of a validation: a case's headline metric or another figure of the same case, measured
//! against predicted, and what became of it.

use serde_json::{Value, json};
use std::fmt;

/// What became of a row.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// Set up, run, and compared.
    Compared,
    /// The simulator cannot express the case (yet); the reason.
    NotExpressible(String),
    /// The case could not be set up or run; the error.
    Failed(String),
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::Compared => write!(f, "compared"),
            Status::NotExpressible(why) => write!(f, "not expressible: {why}"),
            Status::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

/// One comparison: a case's headline metric (`primary`) or another figure of the same row.
#[derive(Clone, Debug)]
pub struct Row {
    pub id: String,
    pub group: String,
    /// The metric as the source words it, and a short name for tables.
    pub metric: String,
    pub short: String,
    pub unit: String,
    pub measured: f64,
    pub predicted: Option<f64>,
    /// (predicted - measured) / measured.
    pub error: Option<f64>,
    pub status: Status,
    /// Every choice made where the source is silent, then the simulator's own assumptions.
    pub assumptions: Vec<String>,
    /// Seconds the row took to set up and run.
    pub wall_s: f64,
    /// The case's headline metric (false for secondary figures from `extra_metrics`).
    pub primary: bool,
    /// The scenario the case became, when it became one.
    pub scenario: Option<String>,
    /// Whether the simulator's memory model says the configuration fits (training cases).
    pub fits: Option<bool>,
    /// The regime of the run the case became (`uncertainty::regime`).
    pub regime: Option<String>,
}

impl Row {
    pub fn compared(&self) -> bool {
        self.status == Status::Compared
    }

    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "group": self.group,
            "metric": self.metric,
            "metric_short": self.short,
            "unit": self.unit,
            "measured": self.measured,
            "predicted": self.predicted,
            "error": self.error,
            "status": self.status.to_string(),
            "primary": self.primary,
            "assumptions": self.assumptions,
            "wall_s": self.wall_s,
            "scenario": self.scenario,
            "fits_in_memory": self.fits,
            "regime": self.regime,
        })
    }
}
