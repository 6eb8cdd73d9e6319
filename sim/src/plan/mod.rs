//! `clustersim plan`: search the parallel configurations of a scenario, best first.
//!
//! A plan enumerates a space of layouts (`space`), refuses what the layout rules refuse and what
//! does not fit in memory (saying how many and why), ranks the rest with a fast estimate, and
//! simulates the most promising in full, in parallel (rayon; each simulation itself stays
//! single-threaded and deterministic). The output is a report-like JSON object: how many
//! candidates were considered, pruned, ranked and simulated, the top ones with their metrics and
//! `--set` options to reproduce them, and the scenario's own layout for comparison.

pub mod space;
pub mod training;

use crate::scenario::error::ScenarioError;
use crate::scenario::parallel::Schedule;
use crate::scenario::{Kind, Scenario};
use crate::workload::training::Layout;
use serde_json::Value;

/// What to search for and how much to simulate.
#[derive(Copy, Clone, Debug)]
pub struct Options {
    /// Configurations to report.
    pub top: usize,
    /// Best-ranked configurations to simulate in full (the scenario's own is simulated besides).
    pub simulate: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            top: 5,
            simulate: 16,
        }
    }
}

/// Plans a scenario: its workload's space, searched.
pub fn plan(scenario: &Scenario, options: &Options) -> Result<Value, ScenarioError> {
    match scenario.kind {
        Kind::Training => training::plan(scenario, options),
        Kind::Serving | Kind::Diffusion => Err(ScenarioError::whole(
            &scenario.source.path,
            format!(
                "`plan` searches training layouts; this is a {} scenario",
                scenario.kind.name()
            ),
        )
        .with_help("for serving and diffusion, compare configurations with `clustersim sweep --vary KEY=V1,V2,...`")),
    }
}

/// The `--set` options that give a scenario this layout.
pub fn layout_sets(l: &Layout) -> Vec<String> {
    let schedule = match l.schedule {
        Schedule::Gpipe => "gpipe",
        Schedule::OneFOneB => "1f1b",
        Schedule::Interleaved1F1B => "interleaved-1f1b",
    };
    vec![
        format!("parallel.tp={}", l.tp),
        format!("parallel.pp={}", l.pp),
        format!("parallel.cp={}", l.cp),
        format!("parallel.dp={}", l.dp),
        format!("parallel.ep={}", l.ep),
        format!("parallel.micro_batch={}", l.micro_batch),
        format!("parallel.schedule={schedule}"),
        format!("parallel.virtual_stages={}", l.virtual_stages),
        format!("parallel.sequence_parallel={}", l.sequence_parallel),
        format!("parallel.recompute={}", l.recompute.name()),
        format!("parallel.zero={}", l.zero),
    ]
}
