//! What every typed report shares: its passage to and from the JSON a run hands on
//! ([`TypedReport`]), and the engine's counts with the CLI's wall time ([`Sim`]).
//!
//! Reports travel as `serde_json::Value`, whose maps keep keys sorted, so a struct's field order
//! never changes the bytes out. Reading back refuses a key the type does not know, by name.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A report of one kind, typed.
pub trait TypedReport: Serialize + DeserializeOwned {
    /// The report's `kind`.
    const KIND: &'static str;

    /// The report as JSON.
    fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a report is plain data")
    }

    /// The report read back from JSON, or what in it this type does not know.
    fn from_value(v: &Value) -> Result<Self, String> {
        Self::deserialize(v).map_err(|e| format!("not a {} report: {e}", Self::KIND))
    }

    /// The report of a run of this kind that this build simulated: it always reads back (the
    /// round trip over every shipped scenario is tested), so a failure is a bug, not input.
    fn of_run(v: &Value) -> Self {
        Self::from_value(v).unwrap_or_else(|e| panic!("a {} run's own report: {e}", Self::KIND))
    }
}

/// The engine's counts (events handled; operations where a graph was executed, as `ops` or, in
/// training, `operations`; a serving fleet's iterations; a cluster's simulated seconds and steps
/// a job) and, once the CLI has measured it, the run's wall time in seconds.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sim {
    pub events: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operations: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulated_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
}

impl Sim {
    /// `events` handled, and no other count.
    pub fn events(events: u64) -> Sim {
        Sim {
            events,
            ops: None,
            operations: None,
            iterations: None,
            simulated_s: None,
            steps: None,
            wall_s: None,
        }
    }
}
