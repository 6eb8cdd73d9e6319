//! `sim.ranks` and `[[perturb]]` read: which GPUs a step simulates, the GPUs that compute
//! slower than their peers and those whose kernel times vary. Perturbations make ranks unlike, so they need every rank simulated:
//! unstated, `ranks` becomes `"all"` (recorded); stated `"stage"`, they are refused.

use crate::hw::GpuSpec;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::workload::training::policy::{Ranks, Schedule};
use std::collections::BTreeMap;

/// What `[[perturb]]` asks of each GPU: slowdowns (entries on one GPU multiplied) and kernel-time
/// coefficients of variation (the largest entry on a GPU), by global rank, ascending.
#[derive(Default)]
pub(super) struct Perturbations {
    pub slow: Vec<(u32, f64)>,
    pub jitter: Vec<(u32, f64)>,
    /// Power limits, watts (the lowest entry on a GPU).
    pub power: Vec<(u32, f64)>,
}

/// The rank mode and the perturbations, for a cluster of `nodes` servers of `per_node` GPUs.
pub(super) fn resolve(
    s: &Scenario,
    (nodes, per_node): (u32, u32),
    gpu: &GpuSpec,
    schedule: Schedule,
    assumptions: &mut Vec<String>,
) -> Result<(Ranks, Perturbations), ScenarioError> {
    let gpus = nodes * per_node;
    let mut slow: BTreeMap<u32, f64> = BTreeMap::new();
    let mut jitter: BTreeMap<u32, f64> = BTreeMap::new();
    let mut power: BTreeMap<u32, f64> = BTreeMap::new();
    for (i, entry) in s.file.perturb.iter().enumerate() {
        let at = |key: &str| format!("perturb.{i}.{key}");
        if entry.slowdown.is_none() && entry.jitter.is_none() && entry.power_limit.is_none() {
            return Err(s
                .error_at(
                    &format!("perturb.{i}"),
                    "a [[perturb]] entry needs `slowdown`, `power_limit` or `jitter`",
                )
                .with_help(
                    "slowdown = 1.3 (kernels 30% slower), power_limit = \"500 W\", jitter = 0.05 \
                     (each kernel's time varies by 5%)",
                ));
        }
        if let Some(w) = entry.power_limit {
            crate::scenario::lower::power_limit::check(s, &at("power_limit"), w.0, gpu)?;
        }
        if let Some(x) = entry.slowdown
            && !(x.is_finite() && x >= 1.0)
        {
            return Err(s
                .error_at(&at("slowdown"), format!("a slowdown is 1 or more, not {x}"))
                .with_help("e.g. slowdown = 1.3 for kernels 30% slower"));
        }
        if let Some(cv) = entry.jitter
            && !(cv.is_finite() && (0.0..=1.0).contains(&cv))
        {
            return Err(s
                .error_at(
                    &at("jitter"),
                    format!("a jitter is a coefficient of variation from 0 to 1, not {cv}"),
                )
                .with_help("e.g. jitter = 0.05 for kernel times that vary by 5%"));
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
            (None, None) if entry.slowdown.is_none() && entry.power_limit.is_none() => {
                (0..gpus).collect()
            }
            (None, None) => {
                return Err(s
                    .error_at(
                        &format!("perturb.{i}"),
                        "a slowdown or power limit needs the `gpu` or `server` it applies to",
                    )
                    .with_help("e.g. gpu = 417 (a global rank) or server = 3 (a node index)"));
            }
            (Some(_), Some(_)) => {
                return Err(s
                    .error_at(
                        &format!("perturb.{i}"),
                        "a [[perturb]] entry names one `gpu` or one `server`",
                    )
                    .with_help("e.g. gpu = 417 (a global rank) or server = 3 (a node index)"));
            }
        };
        for t in targets {
            if let Some(x) = entry.slowdown {
                *slow.entry(t).or_insert(1.0) *= x;
            }
            if let Some(w) = entry.power_limit {
                let p = power.entry(t).or_insert(w.0);
                *p = p.min(w.0);
            }
            if let Some(cv) = entry.jitter.filter(|&cv| cv > 0.0) {
                let j = jitter.entry(t).or_insert(0.0);
                *j = j.max(cv);
            }
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
    let perturbations = Perturbations {
        slow: slow.into_iter().collect(),
        jitter: jitter.into_iter().collect(),
        power: power.into_iter().collect(),
    };
    Ok((ranks, perturbations))
}
