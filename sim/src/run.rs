//! Running a scenario: the one entry point front ends call.

use crate::exec::{Graph, Timeline};
use crate::scenario::error::ScenarioError;
use crate::scenario::{Kind, Scenario};
use crate::workload::training;
use serde_json::Value;
use std::io::{self, Write};

/// The result of one run.
pub struct RunOutput {
    /// The report JSON (the contract's keys; `sim.wall_s` is added by whoever timed the run).
    pub report: Value,
    /// What ran when, for traces and timelines.
    pub graph: Graph,
    pub timeline: Timeline,
}

impl RunOutput {
    /// Writes the Chrome trace-event JSON of the run.
    pub fn write_trace(&self, out: &mut impl Write) -> io::Result<()> {
        crate::report::write_chrome_trace(&self.graph, &self.timeline, out)
    }
}

/// Simulates a scenario. Bad or unsupported input is a located error; a configuration that does
/// not fit in memory is a result (`memory.fits = false`).
pub fn run(scenario: &Scenario) -> Result<RunOutput, ScenarioError> {
    match scenario.kind {
        Kind::Training => {
            let t = training::simulate(scenario)?;
            Ok(RunOutput {
                report: t.report,
                graph: t.graph,
                timeline: t.timeline,
            })
        }
        Kind::Serving => {
            let s = crate::workload::serving::simulate(scenario)?;
            Ok(RunOutput {
                report: s.report,
                graph: s.graph,
                timeline: s.timeline,
            })
        }
        Kind::Diffusion => {
            unreachable!("Scenario::parse refuses kinds this version does not simulate")
        }
    }
}
