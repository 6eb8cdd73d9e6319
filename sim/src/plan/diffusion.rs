//! Planning one video's parallelism within the scenario's cluster: the degrees of Ulysses,
//! Ring, PipeFusion, CFG and tensor parallelism (xDiT's names, `workload::diffusion::layout`).
//!
//! The space: every degree a divisor of the cluster's GPUs (CFG 1 or 2, guidance having two
//! branches) whose product divides the GPUs; a configuration may use fewer GPUs than the cluster
//! has, and is charged for those it uses. Every candidate is the scenario with `--set` options,
//! simulated in full (`candidate`; about 10 ms each). What the diffusion set-up refuses (heads
//! that tp x ulysses does not divide, ring attention over factorised attention, CFG without
//! guidance, more PipeFusion stages than blocks) is invalid, by reason; a configuration whose
//! peak memory exceeds a GPU's does not fit.
//!
//! Deliberately ignored: DSP and latent parallelism (the scenario's are set to 1 in every
//! candidate; plan them with `clustersim sweep`), PipeFusion's patch count and VAE parallelism
//! (the scenario's own are kept), and, with a `[workload]` of videos, the queue: candidates
//! are ranked by one video's latency (the first of the mix), not by the queue's.

use super::Options;
use super::candidate::{self, Candidate, divisors};
use super::objective::Objective;
use crate::report::diffusion::DiffusionReport;
use crate::report::typed::TypedReport;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::cluster::{self, Needs};
use crate::scenario::{Kind, Scenario};
use serde_json::{Value, json};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::Path;

/// The searched degrees of one video's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Degrees {
    tp: u32,
    ulysses: u32,
    ring: u32,
    pipefusion: u32,
    cfg: u32,
}

impl Degrees {
    fn gpus(&self) -> u32 {
        self.tp * self.ulysses * self.ring * self.pipefusion * self.cfg
    }

    /// "Ulysses 4 x Ring 2 x CFG 2", or "1 GPU" when nothing is split.
    fn describe(&self) -> String {
        let parts: Vec<String> = [
            ("Ulysses", self.ulysses),
            ("Ring", self.ring),
            ("PipeFusion", self.pipefusion),
            ("CFG", self.cfg),
            ("TP", self.tp),
        ]
        .into_iter()
        .filter(|(_, d)| *d > 1)
        .map(|(name, d)| format!("{name} {d}"))
        .collect();
        if parts.is_empty() {
            "1 GPU".into()
        } else {
            parts.join(" x ")
        }
    }

    /// The options that give the scenario these degrees; `clear` names the scenario's other
    /// parallel keys (dsp, latent) to set to 1.
    fn sets(&self, clear: &[&str]) -> Vec<String> {
        let mut sets = vec![
            format!("parallel.ulysses={}", self.ulysses),
            format!("parallel.ring={}", self.ring),
            format!("parallel.pipefusion={}", self.pipefusion),
            format!("parallel.cfg={}", self.cfg),
            format!("parallel.tp={}", self.tp),
        ];
        sets.extend(clear.iter().map(|k| format!("parallel.{k}=1")));
        sets
    }

    /// The degrees a diffusion report names, and whether DSP or latent parallelism (outside the
    /// space) is used.
    fn of_report(r: &DiffusionReport) -> (Degrees, bool) {
        let p = &r.parallel;
        (
            Degrees {
                tp: p.tp,
                ulysses: p.ulysses,
                ring: p.ring,
                pipefusion: p.pipefusion,
                cfg: p.cfg,
            },
            p.dsp > 1 || p.latent > 1,
        )
    }
}

/// The space, in order: CFG (1, or a group per guidance branch), PipeFusion, Ring, Ulysses, TP
/// (the last fastest).
fn space(gpus: u32, branches: u32) -> Vec<Degrees> {
    let ds = divisors(gpus);
    let mut out = Vec::new();
    for cfg in [1, branches] {
        for &pipefusion in &ds {
            for &ring in &ds {
                for &ulysses in &ds {
                    for &tp in &ds {
                        let d = Degrees {
                            tp,
                            ulysses,
                            ring,
                            pipefusion,
                            cfg,
                        };
                        if gpus.is_multiple_of(d.gpus()) {
                            out.push(d);
                        }
                    }
                }
            }
        }
    }
    out
}

/// A simulated configuration (fitting, or the scenario's own).
struct Ranked {
    degrees: Degrees,
    gpus: u32,
    /// The options that reproduce it (empty for a reference outside the space).
    sets: Vec<String>,
    layout: String,
    report: DiffusionReport,
}

impl Ranked {
    /// The scenario's own configuration `own`, simulated as `report`; `outside` the space when it
    /// uses DSP or latent parallelism.
    fn reference(own: Degrees, outside: bool, report: DiffusionReport) -> Ranked {
        Ranked {
            degrees: own,
            gpus: report.parallel.gpus_per_video,
            sets: if outside { Vec::new() } else { own.sets(&[]) },
            layout: if outside {
                format!(
                    "{} (with the scenario's DSP or latent parallelism)",
                    own.describe()
                )
            } else {
                own.describe()
            },
            report,
        }
    }

    fn latency(&self) -> f64 {
        self.report.latency_s
    }

    /// GPU-seconds per video.
    fn gpu_seconds(&self) -> f64 {
        self.gpus as f64 * self.latency()
    }

    fn json(&self, rank: Option<usize>) -> Value {
        let r = &self.report;
        let d = &self.degrees;
        let mut v = json!({
            "layout": self.layout,
            "set": self.sets,
            "gpus": self.gpus,
            "parallel": {
                "ulysses": d.ulysses, "ring": d.ring, "pipefusion": d.pipefusion,
                "cfg": d.cfg, "tp": d.tp,
            },
            "latency_s": r.latency_s,
            "uncertainty": r.uncertainty,
            "denoise_step_s": r.denoise_step_s,
            "videos_per_hour": r.videos_per_hour,
            "gpu_hours_per_video": self.gpu_seconds() / 3600.0,
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
        v
    }
}

/// Orders two configurations by the objective, best first (stable: ties keep the space's
/// order).
fn compare(objective: Objective, a: &Ranked, b: &Ranked) -> Ordering {
    let faster = || a.latency().total_cmp(&b.latency());
    match objective {
        Objective::Fastest => faster().then(a.gpus.cmp(&b.gpus)),
        Objective::Cheapest => a
            .gpu_seconds()
            .total_cmp(&b.gpu_seconds())
            .then_with(faster),
        Objective::FewestGpus => a.gpus.cmp(&b.gpus).then_with(faster),
    }
}

/// Plans a diffusion scenario.
pub fn plan(scenario: &Scenario, options: &Options) -> Result<Value, ScenarioError> {
    let f = &scenario.file;
    let bound = latency_bound(&scenario.source.path, options)?;

    // The scenario's own configuration: bad input ends the plan here.
    let reference = DiffusionReport::of_run(&candidate::run_one(scenario, &[])?);
    let (own, own_outside) = Degrees::of_report(&reference);
    let mut notes = Vec::new();
    let cluster = cluster::resolve(
        scenario,
        &mut notes,
        Needs {
            sizes: false,
            inter_node: false,
        },
    )?;
    let gpus = cluster.nodes * cluster.gpus_per_node;
    let clear: Vec<&str> = [
        (f.parallel.dsp.is_some(), "dsp"),
        (f.parallel.latent.is_some(), "latent"),
    ]
    .into_iter()
    .filter_map(|(set, k)| set.then_some(k))
    .collect();
    // A guided step's branches (3 for Open-Sora 2.0); 2 unguided, which CFG parallelism refuses.
    let branches = reference.video.branches.max(2) as u32;
    let space = space(gpus, branches);
    let candidates: Vec<Candidate> = space
        .iter()
        .map(|d| Candidate {
            layout: d.describe(),
            sets: d.sets(&clear),
            gpus: d.gpus(),
        })
        .collect();

    let outcomes = candidate::run_all(scenario, &candidates);
    let (ranked, tally) = candidate::rank(
        space.len(),
        space.iter().zip(candidates).zip(outcomes),
        |report| unfit(report, options.headroom_bytes),
        |(d, c), report| Ranked {
            degrees: *d,
            gpus: c.gpus,
            sets: c.sets,
            layout: c.layout,
            report: DiffusionReport::of_run(&report),
        },
    );
    let by_gpus = by_gpus(&ranked, options.headroom_bytes, bound);
    let reference_ranked = !own_outside && ranked.iter().any(|r| r.degrees == own);
    let reference = Ranked::reference(own, own_outside, reference);
    let (best, top) = candidate::best(
        &ranked,
        |r| bound.is_none_or(|b| r.latency() <= b),
        |a, b| compare(options.objective, a, b),
        options.top,
        |r, rank| r.json(Some(rank)),
    );

    let mut out = json!({
        "kind": "plan",
        "workload": "diffusion",
        "scenario": scenario.name(),
        "objective": options.objective.name(),
        "objective_means": options.objective.describe(Kind::Diffusion),
        "cluster": {
            "gpu": cluster.gpu.name,
            "gpus": gpus,
            "nodes": cluster.nodes,
            "gpus_per_node": cluster.gpus_per_node,
            "model": reference.report.model.name,
        },
        "space": {
            "degrees": format!(
                "ulysses, ring, pipefusion and tp each a divisor of the GPUs, cfg 1 or \
                 {branches}; their product a divisor of the GPUs"
            ),
            "fixed": "dsp = 1 and latent = 1; the scenario's pipefusion_patches and vae_parallel",
        },
        "candidates": tally.json(),
        "ranking": {
            "method": "every valid candidate simulated in full (no estimate)",
        },
        "by_gpus": by_gpus,
        "reference": {
            "ranked": reference_ranked,
            "result": reference.json(None),
        },
        "top": top,
    });
    if let Some(b) = bound {
        out["target"] = json!({ "max_latency_s": b, "met": !best.is_empty() });
    }
    Ok(out)
}

/// The latency a video must meet: `--max-latency`, which only `--objective fewest-gpus` takes
/// (and needs); a serving plan's `--slo-attainment` refused.
fn latency_bound(path: &Path, options: &Options) -> Result<Option<f64>, ScenarioError> {
    if options.slo_attainment.is_some() {
        return Err(ScenarioError::whole(
            path,
            "--slo-attainment is a serving plan's target; a diffusion plan's is --max-latency",
        )
        .with_help("use --objective fewest-gpus --max-latency \"60 s\""));
    }
    Ok(match (options.objective, options.max_latency_s) {
        (Objective::FewestGpus, Some(s)) if s > 0.0 && s.is_finite() => Some(s),
        (Objective::FewestGpus, Some(s)) => {
            return Err(ScenarioError::whole(
                path,
                format!("--max-latency {s} s is not a positive duration"),
            )
            .with_help("e.g. --max-latency \"60 s\""));
        }
        (Objective::FewestGpus, None) => {
            return Err(ScenarioError::whole(
                path,
                "--objective fewest-gpus needs the latency a video must meet",
            )
            .with_help("add --max-latency with a duration, e.g. --max-latency \"60 s\""));
        }
        (o @ (Objective::Fastest | Objective::Cheapest), Some(_)) => {
            return Err(ScenarioError::whole(
                path,
                format!(
                    "--max-latency is the bound of --objective fewest-gpus, not of {}",
                    o.name()
                ),
            )
            .with_help("add --objective fewest-gpus, or remove --max-latency"));
        }
        (Objective::Fastest | Objective::Cheapest, None) => None,
    })
}

/// Why a simulated configuration does not fit with `headroom` bytes to spare, if it does not.
fn unfit(report: &Value, headroom: f64) -> Option<&'static str> {
    let m = DiffusionReport::of_run(report).memory;
    if !m.fits || m.peak_bytes_per_gpu > m.capacity_bytes as f64 - headroom {
        Some("peak memory exceeds a GPU's")
    } else {
        None
    }
}

/// For each GPU count, how many candidates ranked and the best latency among them (and whether
/// it meets `bound`).
fn by_gpus(ranked: &[Ranked], headroom: f64, bound: Option<f64>) -> Vec<Value> {
    let mut by_gpus: BTreeMap<u32, (usize, f64)> = BTreeMap::new();
    for r in ranked {
        let e = by_gpus.entry(r.gpus).or_insert((0, f64::INFINITY));
        e.0 += 1;
        e.1 = e.1.min(r.latency());
    }
    by_gpus
        .into_iter()
        .map(|(g, (n, latency))| {
            json!({
                "gpus": g,
                "memory_headroom_bytes": headroom,
                "candidates": n,
                "best_latency_s": latency,
                "meets_target": bound.map(|b| latency <= b),
            })
        })
        .collect()
}
