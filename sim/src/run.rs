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
    /// What ran when, for traces and timelines; kernels that ran back to back are one chain
    /// (`expanded` spells them out).
    pub graph: Graph,
    pub timeline: Timeline,
}

impl RunOutput {
    /// The run with every chain of kernels (`exec::Part`) spelt out as its kernels, for views
    /// that draw each one.
    pub fn expanded(self) -> RunOutput {
        if self.graph.chains.is_empty() {
            return self;
        }
        let (graph, timeline) = self.graph.expand(&self.timeline);
        RunOutput {
            report: self.report,
            graph,
            timeline,
        }
    }

    /// Writes the Chrome trace-event JSON of the run.
    pub fn write_trace(&self, out: &mut impl Write) -> io::Result<()> {
        crate::report::write_chrome_trace(&self.graph, &self.timeline, out)
    }

    /// Forward and backward seconds of training layer `layer` for micro-batch 0, read from the
    /// timeline: from the start of the layer's first operation in a pass to the start of the next
    /// layer's in that pass (so the tensor-parallel collectives between the layer's kernels
    /// count, and in the backward the recomputed forward). None when the run has no such layers
    /// (serving, or `layer` is the first or last).
    pub fn layer_times(&self, layer: u32) -> Option<(f64, f64)> {
        let expanded = self.graph.expand(&self.timeline);
        let (graph, timeline) = (&expanded.0, &expanded.1);
        let loss = graph.ops.iter().position(|op| op.name == "loss")?;
        let first = |l: u32, backward: bool| {
            graph
                .ops
                .iter()
                .enumerate()
                .filter(|(i, _)| (*i > loss) == backward)
                .find(|(_, op)| op.layer == Some(l) && op.micro_batch == Some(0))
                .map(|(i, _)| timeline.start[i].as_secs_f64())
        };
        let forward = first(layer + 1, false)? - first(layer, false)?;
        let backward = first(layer.checked_sub(1)?, true)? - first(layer, true)?;
        Some((forward, backward))
    }
}

/// A training scenario lowered and simulated.
pub fn training(scenario: &Scenario) -> Result<training::TrainingRun, ScenarioError> {
    let (setup, compute) = crate::scenario::lower::training::lower(scenario)?;
    training::simulate(setup, &compute).map_err(|e| e.locate(scenario))
}

/// Simulates a scenario. Bad or unsupported input is a located error; a configuration that does
/// not fit in memory is a result (`memory.fits = false`). The report carries its prediction
/// intervals (`uncertainty`).
pub fn run(scenario: &Scenario) -> Result<RunOutput, ScenarioError> {
    let mut out = simulate(scenario)?;
    crate::uncertainty::attach(&mut out.report);
    Ok(out)
}

/// The run without its prediction intervals.
fn simulate(scenario: &Scenario) -> Result<RunOutput, ScenarioError> {
    use crate::workload::{collective, diffusion, federated, kernels, serving};
    // Only training and collective runs count link traffic (federated refuses the key itself).
    if scenario.file.sim.record_links == Some(true)
        && matches!(
            scenario.kind,
            Kind::Serving | Kind::Diffusion | Kind::Kernels | Kind::Cluster
        )
    {
        let kind = scenario.kind.name();
        return Err(scenario
            .error_at(
                "sim.record_links",
                format!("a {kind} run does not record link traffic"),
            )
            .with_help("link traffic is recorded for training and collective runs; remove it"));
    }
    // A workload that hands back its report and graph: run the graph, count its events.
    let executed = |(mut report, graph): (Value, Graph)| {
        let (timeline, stats) = crate::exec::execute(&graph);
        report["sim"]["events"] = serde_json::json!(stats.events);
        RunOutput {
            report,
            graph,
            timeline,
        }
    };
    let out = match scenario.kind {
        // Training stamps its own costs (energy and time to train need the step).
        Kind::Training => {
            let t = self::training(scenario)?;
            let (graph, timeline) = t.trace.unwrap_or((t.graph, t.timeline));
            return within_simulated_time(
                scenario,
                RunOutput {
                    report: t.report,
                    graph,
                    timeline,
                },
            );
        }
        Kind::Serving => {
            let s = serving::simulate(&crate::scenario::lower::serving::lower(scenario)?)
                .map_err(|e| e.locate(scenario))?;
            RunOutput {
                report: s.report,
                graph: s.graph,
                timeline: s.timeline,
            }
        }
        Kind::Collective => {
            let config = crate::scenario::lower::collective::lower(scenario)?;
            executed(collective::simulate(&config).map_err(|e| e.locate(scenario))?)
        }
        Kind::Kernels => executed(kernels::simulate(&crate::scenario::lower::kernels::lower(
            scenario,
        )?)),
        Kind::Federated => {
            let config = crate::scenario::lower::federated::lower(scenario)?;
            let f = federated::simulate(&config).map_err(|e| e.locate(scenario))?;
            RunOutput {
                report: f.report,
                graph: f.graph,
                timeline: f.timeline,
            }
        }
        Kind::Cluster => {
            let config = crate::scenario::lower::jobs::lower(scenario)?;
            use crate::workload::jobs::ClusterError;
            let c = crate::workload::jobs::simulate(config).map_err(|e| match e {
                ClusterError::Job(i, e) => e.locate(&scenario.jobs[i].scenario),
                ClusterError::Cluster(e) => e.locate(scenario),
            })?;
            return within_simulated_time(
                scenario,
                RunOutput {
                    report: c.report,
                    graph: c.graph,
                    timeline: c.timeline,
                },
            );
        }
        Kind::Diffusion => {
            let config = crate::scenario::lower::diffusion::lower(scenario)?;
            let d = diffusion::simulate(&config).map_err(|e| e.locate(scenario))?;
            RunOutput {
                report: d.report,
                graph: d.graph,
                timeline: d.timeline,
            }
        }
    };
    let mut out = within_simulated_time(scenario, out)?;
    crate::scenario::lower::cost::stamp(scenario, &mut out.report)?;
    Ok(out)
}

/// `out`, unless its run went past the end of simulated time (`Timeline::overran`): then an
/// error at the training layout (a step) or the whole file (any other run).
fn within_simulated_time(scenario: &Scenario, out: RunOutput) -> Result<RunOutput, ScenarioError> {
    if !out.timeline.overran() {
        return Ok(out);
    }
    let span = crate::engine::SimTime::SPAN;
    Err(if scenario.kind == Kind::Training {
        scenario
            .error_at(
                "parallel",
                format!("a step takes longer than the {span} simulated time spans"),
            )
            .with_help("a smaller model or batch, or more GPUs")
    } else {
        ScenarioError::whole(
            &scenario.source.path,
            format!("the run takes longer than the {span} simulated time spans"),
        )
        .with_help("simulate less work: fewer requests, rounds, steps or bytes")
    })
}
