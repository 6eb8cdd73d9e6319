//! Planning a training run: search the layouts of `space`, refuse the invalid ones (counted by
//! reason) and those that do not fit in memory, rank the rest by the closed-form estimate
//! (`training::estimate`), and simulate the most promising in full, in parallel, beside the
//! scenario's own layout for comparison.

use super::objective::gpu_hours_per_million_tokens;
use super::space::Space;
use super::{Options, layout_sets};
use crate::hw::ComputeModel;
use crate::report::training::TrainingReport;
use crate::report::typed::TypedReport;
use crate::scenario::error::ScenarioError;
use crate::scenario::{Kind, Scenario};
use crate::workload::training::estimate::{Estimate, Estimator};
use crate::workload::training::policy::Schedule;
use crate::workload::training::{self, Layout, TrainingConfig, memory};
use rayon::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// A layout in the words of Megatron-LM users: "TP8 PP16 DP8 mb1 interleaved v2 SP full-recompute
/// ZeRO-1".
pub fn describe(l: &Layout) -> String {
    let mut parts = vec![format!("TP{} PP{} DP{}", l.tp, l.pp, l.dp)];
    if l.cp > 1 {
        parts.push(format!("CP{}", l.cp));
    }
    if l.ep > 1 {
        parts.push(format!("EP{}", l.ep));
    }
    parts.push(format!("mb{}", l.micro_batch));
    if l.pp > 1 {
        parts.push(match l.schedule {
            Schedule::Gpipe => "gpipe".to_string(),
            Schedule::OneFOneB => "1f1b".to_string(),
            Schedule::Interleaved1F1B => format!("interleaved v{}", l.virtual_stages),
            Schedule::Async1F1B => "async 1f1b".to_string(),
        });
    }
    if l.sequence_parallel {
        parts.push("SP".into());
    }
    parts.push(format!("recompute {}", l.recompute.name()));
    if l.zero > 0 {
        parts.push(format!("ZeRO-{}", l.zero));
    }
    parts.join(" ")
}

/// Of a chunk of candidates: refusals by reason, how many did not fit, and the estimates of the
/// rest.
type Pruned = (
    BTreeMap<&'static str, usize>,
    usize,
    Vec<(Layout, Estimate)>,
);

/// One simulated layout.
struct Simulated {
    layout: Layout,
    estimate: Estimate,
    report: TrainingReport,
}

impl Simulated {
    fn seconds(&self) -> f64 {
        self.report.iteration_time_s
    }

    fn json(&self, rank: Option<usize>, reference: Option<&Simulated>) -> Value {
        let r = &self.report;
        let mut v = json!({
            "layout": describe(&self.layout),
            "set": layout_sets(&self.layout),
            "estimate_s": self.estimate.iteration_s,
            "iteration_time_s": r.iteration_time_s,
            "iteration_time_s_80": r.uncertainty.as_ref().map(|u| &u["iteration_time_s"]),
            "tokens_per_s": r.tokens_per_s,
            "tflops_per_gpu": r.tflops_per_gpu,
            "mfu": r.mfu,
            "breakdown_s": r.breakdown_s,
            "memory": {
                "peak_bytes_per_gpu": r.memory.peak_bytes_per_gpu,
                "capacity_bytes": r.memory.capacity_bytes,
                "fits": r.memory.fits,
            },
        });
        if let Some(rank) = rank {
            v["rank"] = json!(rank);
        }
        if let Some(base) = reference {
            v["why"] = json!(why(self, base));
        }
        v
    }
}

/// Why `a` beats (or trails) `base`: the step-time components that moved most, with the knobs
/// that differ.
fn why(a: &Simulated, base: &Simulated) -> String {
    let (ta, tb) = (a.seconds(), base.seconds());
    if a.layout == base.layout {
        return "the scenario's own layout".into();
    }
    let (ba, bb) = (&a.report.breakdown_s, &base.report.breakdown_s);
    let mut moves: Vec<(f64, &str)> = [
        (ba.compute - bb.compute, "compute"),
        (ba.pipeline_bubble - bb.pipeline_bubble, "pipeline bubble"),
        (
            ba.exposed_communication - bb.exposed_communication,
            "exposed communication",
        ),
    ]
    .into_iter()
    .filter(|(d, _)| d.abs() >= 0.005 * tb)
    .collect();
    moves.sort_by(|x, y| y.0.abs().total_cmp(&x.0.abs()));
    let moved: Vec<String> = moves
        .iter()
        .map(|(d, name)| format!("{name} {:+.2} s", d))
        .collect();
    let gib = |s: &Simulated| s.report.memory.peak_bytes_per_gpu as f64 / 1073741824.0;
    let verdict = if ta < tb { "faster" } else { "slower" };
    format!(
        "{:.1}% {verdict} than the scenario's layout ({:.3} s vs {:.3} s): {}; memory {:.1} GiB vs {:.1} GiB per GPU",
        100.0 * (tb - ta).abs() / tb,
        ta,
        tb,
        if moved.is_empty() {
            "no component moved by more than 0.5%".to_string()
        } else {
            moved.join(", ")
        },
        gib(a),
        gib(base)
    )
}

/// Plans a training scenario.
pub fn plan(scenario: &Scenario, options: &Options) -> Result<Value, ScenarioError> {
    let mut base = crate::scenario::lower::training::resolve(scenario)?;
    refuse_unsearched(scenario, &base)?;
    let compute = crate::scenario::lower::training::compute_model(scenario, &mut base)?;
    let space = Space::training(&base);
    let layouts = space.layouts();
    let considered = layouts.len();
    let capacity = base.gpu.memory_bytes as f64 - options.headroom_bytes;
    let gpus = base.gpus();
    let (refused, unfit, ranked) = estimate(&base, &compute, &layouts, capacity);

    // Simulate the most promising and the scenario's own layout.
    let reference_layout = base.layout();
    let (reference, simulated) =
        simulate(&base, &compute, &ranked, options.simulate).map_err(|e| e.locate(scenario))?;
    let reference_ranked = ranked.iter().any(|(l, _)| *l == reference_layout);
    let mut best: Vec<Simulated> = simulated
        .into_iter()
        .filter(|s| s.report.memory.peak_bytes_per_gpu as f64 <= capacity)
        .collect();
    best.sort_by(|a, b| a.seconds().total_cmp(&b.seconds()));
    let (median_error, worst_error) = estimate_errors(&best);

    let mut top: Vec<Value> = best
        .iter()
        .take(options.top)
        .enumerate()
        .map(|(i, s)| s.json(Some(i + 1), Some(&reference)))
        .collect();
    // What `cheapest` ranks by, in the units a budget uses.
    for t in &mut top {
        let tokens = t["tokens_per_s"].as_f64().unwrap_or(0.0);
        t["gpu_hours_per_million_tokens"] = json!(gpu_hours_per_million_tokens(gpus, tokens));
    }
    let refused_total: usize = refused.values().sum();
    Ok(json!({
        "kind": "plan",
        "workload": "training",
        "scenario": scenario.name(),
        "objective": options.objective.name(),
        "objective_means": options.objective.describe(Kind::Training),
        "cluster": {
            "gpu": base.gpu.name,
            "gpus": gpus,
            "global_batch": base.global_batch,
            "seq_len": base.model.seq_len,
            "model": base.model.name,
        },
        "memory_headroom_bytes": options.headroom_bytes,
        "candidates": {
            "considered": considered,
            "pruned": {
                "invalid": refused_total,
                "invalid_by_reason": refused,
                "does_not_fit": unfit,
            },
            "ranked": ranked.len(),
            "simulated": best.len() + usize::from(!reference_ranked || !best.iter().any(|s| s.layout == reference_layout)),
        },
        "ranking": {
            "method": "closed-form estimate on the analytical network tier (kernels and collectives priced as in the simulation, summed instead of scheduled)",
            "simulated_with": format!("the full step graph on the {} network tier", base.tier.name()),
            "estimate_error_median": median_error,
            "estimate_error_worst": worst_error,
        },
        "reference": {
            "ranked": reference_ranked,
            "result": reference.json(None, None),
        },
        "top": top,
    }))
}

/// Refuses what the search does not cover: local SGD, and `[sequences]`' packed micro-batches.
fn refuse_unsearched(scenario: &Scenario, base: &TrainingConfig) -> Result<(), ScenarioError> {
    if base.local_steps > 1 {
        return Err(scenario
            .error_at(
                "parallel.local_steps",
                "`plan` does not search layouts under local SGD yet",
            )
            .with_help(
                "plan without local_steps, or compare layouts with `clustersim sweep --vary parallel.pp=...`",
            ));
    }
    if base.sequences.is_some() {
        return Err(scenario
            .error_at(
                "sequences",
                "`plan` searches layouts of like micro-batches; [sequences] packs its own",
            )
            .with_help("compare layouts with `clustersim sweep --vary parallel.pp=...` instead"));
    }
    Ok(())
}

/// Refuses, prunes and ranks the layouts, one working copy of the set-up per chunk of candidates:
/// refusals by reason, how many do not fit in `capacity` bytes, and the rest by estimate, fastest
/// first (stable: equal estimates keep the space's order).
fn estimate(
    base: &TrainingConfig,
    compute: &ComputeModel,
    layouts: &[Layout],
    capacity: f64,
) -> Pruned {
    let gpus = base.gpus();
    let chunks: Vec<Pruned> = layouts
        .par_chunks(8192)
        .map(|chunk| {
            let mut work = base.clone();
            let mut estimator = Estimator::new(compute);
            let mut refused: BTreeMap<&'static str, usize> = BTreeMap::new();
            let mut unfit = 0;
            let mut ranked = Vec::new();
            for layout in chunk {
                if let Err(r) = layout.check(&work.model, gpus) {
                    *refused.entry(r.reason).or_default() += 1;
                    continue;
                }
                work.set_layout(layout);
                if memory::memory(&work).1.peak() > capacity {
                    unfit += 1;
                    continue;
                }
                ranked.push((*layout, estimator.estimate(&work)));
            }
            (refused, unfit, ranked)
        })
        .collect();
    let mut refused: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut unfit = 0;
    let mut ranked = Vec::new();
    for (r, u, c) in chunks {
        for (reason, n) in r {
            *refused.entry(reason).or_default() += n;
        }
        unfit += u;
        ranked.extend(c);
    }
    // Stable: equal estimates keep the space's order.
    ranked.sort_by(|a, b| a.1.iteration_s.total_cmp(&b.1.iteration_s));
    (refused, unfit, ranked)
}

/// Simulates the first `n` of `ranked` and the scenario's own layout in full, in parallel: the
/// scenario's own, and the others in `ranked`'s order.
fn simulate(
    base: &TrainingConfig,
    compute: &ComputeModel,
    ranked: &[(Layout, Estimate)],
    n: usize,
) -> Result<(Simulated, Vec<Simulated>), crate::key_error::KeyError> {
    let reference_layout = base.layout();
    let mut chosen: Vec<(Layout, Estimate)> = ranked.iter().take(n).copied().collect();
    if !chosen.iter().any(|(l, _)| *l == reference_layout) {
        let mut work = base.clone();
        work.set_layout(&reference_layout);
        let estimate = Estimator::new(compute).estimate(&work);
        chosen.push((reference_layout, estimate));
    }
    let mut simulated: Vec<Simulated> = chosen
        .par_iter()
        .map(|(layout, estimate)| {
            let mut setup = base.clone();
            setup.set_layout(layout);
            let mut run = training::simulate(setup, compute)?;
            crate::uncertainty::attach(&mut run.report);
            Ok(Simulated {
                layout: *layout,
                estimate: *estimate,
                report: TrainingReport::of_run(&run.report),
            })
        })
        .collect::<Result<_, _>>()?;
    let reference_index = simulated
        .iter()
        .position(|s| s.layout == reference_layout)
        .expect("the reference was simulated");
    let reference = simulated.remove(reference_index);
    Ok((reference, simulated))
}

/// How well the estimate ranked what the simulation measured: the median and the worst relative
/// error.
fn estimate_errors(best: &[Simulated]) -> (Option<f64>, Option<f64>) {
    let mut errors: Vec<f64> = best
        .iter()
        .map(|s| (s.estimate.iteration_s - s.seconds()) / s.seconds())
        .collect();
    errors.sort_by(f64::total_cmp);
    let median_error = errors.get(errors.len() / 2).copied();
    let worst_error = errors
        .iter()
        .copied()
        .max_by(|a, b| a.abs().total_cmp(&b.abs()));
    (median_error, worst_error)
}
