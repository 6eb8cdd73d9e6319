//! `sim.ranks` and `[[perturb]]` read: which GPUs a step simulates, and the GPUs that compute
//! slower than their peers. Perturbations make ranks unlike, so they need every rank simulated:
//! unstated, `ranks` becomes `"all"` (recorded); stated `"stage"`, they are refused.

use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::workload::training::policy::{Ranks, Schedule};
use std::collections::BTreeMap;

/// The rank mode and each slowed GPU (global rank, slowdown; ascending, entries on one GPU
/// multiplied), for a cluster of `nodes` servers of `per_node` GPUs.
pub(super) fn resolve(
    s: &Scenario,
    (nodes, per_node): (u32, u32),
    schedule: Schedule,
    assumptions: &mut Vec<String>,
) -> Result<(Ranks, Vec<(u32, f64)>), ScenarioError> {
    let gpus = nodes * per_node;
    let mut slow: BTreeMap<u32, f64> = BTreeMap::new();
    for (i, entry) in s.file.perturb.iter().enumerate() {
        let at = |key: &str| format!("perturb.{i}.{key}");
        let Some(slowdown) = entry.slowdown else {
            return Err(s
                .error_at(
                    &format!("perturb.{i}"),
                    "a [[perturb]] entry needs `slowdown`",
                )
                .with_help("how many times longer its kernels take, e.g. slowdown = 1.3"));
        };
        if !(slowdown.is_finite() && slowdown >= 1.0) {
            return Err(s
                .error_at(
                    &at("slowdown"),
                    format!("a slowdown is 1 or more, not {slowdown}"),
                )
                .with_help("e.g. slowdown = 1.3 for kernels 30% slower"));
        }
        let targets: Vec<u32> = match (entry.gpu, entry.server) {
            (Some(g), None) if g < gpus => vec![g],
            (Some(g), None) => {
                return Err(s.error_at(
                    &at("gpu"),
                    format!("the cluster's GPUs are 0-{}, not {g}", gpus - 1),
                ));
            }
            (None, Some(n)) if n < nodes => (n * per_node..(n + 1) * per_node).collect(),
            (None, Some(n)) => {
                return Err(s.error_at(
                    &at("server"),
                    format!("the cluster's servers are 0-{}, not {n}", nodes - 1),
                ));
            }
            _ => {
                return Err(s
                    .error_at(
                        &format!("perturb.{i}"),
                        "a [[perturb]] entry names one `gpu` or one `server`",
                    )
                    .with_help("e.g. gpu = 417 (a global rank) or server = 3 (a node index)"));
            }
        };
        for t in targets {
            *slow.entry(t).or_insert(1.0) *= slowdown;
        }
    }
    let ranks = match s.file.sim.ranks {
        Some(Ranks::Stage) if !s.file.perturb.is_empty() => {
            return Err(s
                .error_at(
                    "sim.ranks",
                    "[[perturb]] makes ranks unlike; one GPU cannot stand for its stage",
                )
                .with_help("set ranks = \"all\", or remove the [[perturb]] entries"));
        }
        Some(r) => r,
        None if !s.file.perturb.is_empty() => {
            assumptions.push(
                "every GPU simulated (sim.ranks = \"all\"): [[perturb]] makes ranks unlike".into(),
            );
            Ranks::All
        }
        None => Ranks::Stage,
    };
    if ranks == Ranks::All && schedule == Schedule::Async1F1B {
        let path = match s.file.sim.ranks {
            Some(_) => "sim.ranks",
            None => "perturb",
        };
        return Err(s
            .error_at(
                path,
                "every rank is not simulated under schedule = \"async-1f1b\"",
            )
            .with_help("its steady state is priced from one GPU per stage; use another schedule"));
    }
    Ok((ranks, slow.into_iter().collect()))
}
