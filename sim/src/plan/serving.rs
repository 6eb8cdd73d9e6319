//! Planning a serving fleet within the scenario's cluster: the replicas' tensor- and
//! pipeline-parallel degrees, how many replicas, and, when the scenario disaggregates prefill
//! and decode (`[serving.disaggregation]`), how the replicas split between the pools.
//!
//! The space: `tp` a divisor of both a node's GPUs and the model's attention heads, `pp` a
//! divisor of the model's layers, `replicas` from 1 to what the cluster's GPUs hold; with
//! disaggregation, every split of the replicas into at least one prefill and one decode replica.
//! Every candidate is the scenario with `--set` options, simulated in full with the scenario's
//! own traffic and SLO (`candidate`): serving has no closed-form estimate here, and a run takes
//! tens of milliseconds to a second, so all valid candidates are simulated. What the set-up
//! refuses is invalid (by reason); a fleet whose weights leave no KV cache, or whose KV cache
//! cannot hold some request, does not fit.
//!
//! Deliberately ignored: mixed fleets (`[[serving.group]]`, refused), the scheduler's knobs
//! (batch sizes, router, KV fraction: the scenario's own are kept), and GPUs a candidate leaves
//! idle (a candidate is charged for the GPUs it uses). Under open-loop traffic (Poisson, trace)
//! output tokens a second follow the arrival rate once a fleet keeps up, so `fastest` separates
//! candidates only when some fall behind; `fewest-gpus` is the question such traffic answers.

use super::Options;
use super::candidate::{self, Candidate, divisors};
use super::objective::{Objective, gpu_hours_per_million_tokens};
use crate::report::serving::ServingReport;
use crate::report::typed::TypedReport;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::cluster::{self, Needs};
use crate::scenario::serving::ServingSection;
use crate::scenario::{Kind, Scenario};
use serde_json::{Value, json};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// SLO attainment `fewest-gpus` asks for when `--slo-attainment` is not given.
pub const DEFAULT_SLO_ATTAINMENT: f64 = 0.9;

/// A fleet of one kind of replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fleet {
    tp: u32,
    pp: u32,
    replicas: u32,
    /// Prefill and decode replicas, when disaggregated.
    pools: Option<(u32, u32)>,
}

impl Fleet {
    fn gpus(&self) -> u32 {
        self.tp * self.pp * self.replicas
    }

    fn describe(&self) -> String {
        let replica = if self.pp > 1 {
            format!("TP{} PP{}", self.tp, self.pp)
        } else {
            format!("TP{}", self.tp)
        };
        match self.pools {
            Some((p, d)) => format!("{p} prefill + {d} decode x {replica}"),
            None => format!("{} x {replica}", self.replicas),
        }
    }

    fn sets(&self) -> Vec<String> {
        let mut sets = vec![
            format!("serving.tp={}", self.tp),
            format!("serving.pp={}", self.pp),
            format!("serving.replicas={}", self.replicas),
        ];
        if let Some((p, d)) = self.pools {
            sets.push(format!("serving.disaggregation.prefill_replicas={p}"));
            sets.push(format!("serving.disaggregation.decode_replicas={d}"));
        }
        sets
    }

    fn candidate(&self) -> Candidate {
        Candidate {
            layout: self.describe(),
            sets: self.sets(),
            gpus: self.gpus(),
        }
    }

    /// The fleet a serving report describes.
    fn of_report(r: &ServingReport) -> Fleet {
        let c = &r.cluster;
        Fleet {
            tp: c.tp.unwrap_or(1),
            pp: c.pp.unwrap_or(1),
            replicas: c.replicas,
            pools: r
                .disaggregation
                .as_ref()
                .map(|d| (d.prefill_replicas, d.decode_replicas)),
        }
    }
}

/// A simulated fleet that fits.
struct Ranked {
    fleet: Fleet,
    report: ServingReport,
}

impl Ranked {
    fn tokens_per_s(&self) -> f64 {
        self.report.throughput.output_tokens_per_s
    }

    fn attainment(&self) -> f64 {
        self.report.slo.attainment
    }

    /// GPU-seconds per output token.
    fn gpu_seconds_per_token(&self) -> f64 {
        let t = self.tokens_per_s();
        if t > 0.0 {
            self.fleet.gpus() as f64 / t
        } else {
            f64::INFINITY
        }
    }

    fn json(&self, rank: Option<usize>) -> Value {
        let r = &self.report;
        let mut v = json!({
            "layout": self.fleet.describe(),
            "set": self.fleet.sets(),
            "gpus": self.fleet.gpus(),
            "replicas": self.fleet.replicas,
            "tp": self.fleet.tp,
            "pp": self.fleet.pp,
            "disaggregation": self.fleet.pools.map(|(p, d)| json!({ "prefill_replicas": p, "decode_replicas": d })),
            "requests": r.requests,
            "requests_completed": r.requests_completed,
            "throughput": r.throughput,
            "ttft_s": r.ttft_s,
            "tpot_s": r.tpot_s,
            "e2e_s": r.e2e_s,
            "slo": r.slo,
            "uncertainty": r.uncertainty,
            "gpu_hours_per_million_output_tokens": gpu_hours_per_million_tokens(self.fleet.gpus(), self.tokens_per_s()),
            "memory": {
                "weights_bytes_per_gpu": r.memory.weights_bytes_per_gpu,
                "kv_bytes_per_gpu": r.memory.kv_bytes_per_gpu,
                "fits": r.memory.fits,
            },
        });
        if let Some(rank) = rank {
            v["rank"] = json!(rank);
        }
        v
    }
}

/// Why a simulated fleet does not fit, if it does not.
fn unfit(report: &Value) -> Option<&'static str> {
    let report = ServingReport::of_run(report);
    if !report.memory.fits {
        return Some("the weights leave no room for a KV cache");
    }
    if report.requests_completed != report.requests {
        return Some("the KV cache cannot hold some request");
    }
    None
}

/// Orders two fleets by the objective: best first, ties to the space's order (the sort is
/// stable).
fn compare(objective: Objective, a: &Ranked, b: &Ranked) -> Ordering {
    let faster = || b.tokens_per_s().total_cmp(&a.tokens_per_s());
    match objective {
        Objective::Fastest => faster().then(a.fleet.gpus().cmp(&b.fleet.gpus())),
        Objective::Cheapest => a
            .gpu_seconds_per_token()
            .total_cmp(&b.gpu_seconds_per_token())
            .then_with(faster),
        Objective::FewestGpus => a.fleet.gpus().cmp(&b.fleet.gpus()).then_with(faster),
    }
}

/// The fleets of the space, in order: tp, then pp, then replicas, then prefill replicas.
fn space(tps: &[u32], pps: &[u32], gpus: u32, disaggregated: bool) -> Vec<Fleet> {
    let mut out = Vec::new();
    for &tp in tps {
        for &pp in pps {
            let most = gpus / (tp * pp);
            for replicas in 1..=most {
                if disaggregated {
                    for p in 1..replicas {
                        out.push(Fleet {
                            tp,
                            pp,
                            replicas,
                            pools: Some((p, replicas - p)),
                        });
                    }
                } else {
                    out.push(Fleet {
                        tp,
                        pp,
                        replicas,
                        pools: None,
                    });
                }
            }
        }
    }
    out
}

/// Plans a serving scenario.
pub fn plan(scenario: &Scenario, options: &Options) -> Result<Value, ScenarioError> {
    let f = &scenario.file;
    let path = &scenario.source.path;
    let serving = f.serving.clone().unwrap_or_default();
    let target = attainment_target(scenario, &serving, options)?;

    // The scenario's own fleet: bad input ends the plan here, before any search.
    let reference = ServingReport::of_run(&candidate::run_one(scenario, &[])?);
    let own = Fleet::of_report(&reference);
    let mut notes = Vec::new();
    let cluster = cluster::resolve(
        scenario,
        &mut notes,
        Needs {
            sizes: false,
            inter_node: false,
        },
    )?;
    let model = crate::scenario::lower::model::resolve(&f.model, path.parent())
        .map_err(|e| e.locate(scenario))?;
    let gpus = cluster.nodes * cluster.gpus_per_node;
    let tps: Vec<u32> = divisors(cluster.gpus_per_node)
        .into_iter()
        .filter(|tp| model.heads % tp == 0)
        .collect();
    let pps: Vec<u32> = divisors(model.layers)
        .into_iter()
        .filter(|&pp| pp <= gpus)
        .collect();
    let disaggregated = serving.disaggregation.is_some();
    let fleets = space(&tps, &pps, gpus, disaggregated);
    let candidates: Vec<Candidate> = fleets.iter().map(Fleet::candidate).collect();

    let outcomes = candidate::run_all(scenario, &candidates);
    let (ranked, tally) = candidate::rank(
        fleets.len(),
        fleets.iter().zip(outcomes),
        unfit,
        |fleet, report| Ranked {
            fleet: *fleet,
            report: ServingReport::of_run(&report),
        },
    );
    let by_gpus = by_gpus(&ranked, target);
    let reference_ranked = ranked.iter().any(|r| r.fleet == own);
    let reference = Ranked {
        fleet: own,
        report: reference,
    };
    let (best, top) = candidate::best(
        &ranked,
        |r| target.is_none_or(|t| r.attainment() >= t),
        |a, b| compare(options.objective, a, b),
        options.top,
        |r, rank| r.json(Some(rank)),
    );

    let mut out = json!({
        "kind": "plan",
        "workload": "serving",
        "scenario": scenario.name(),
        "objective": options.objective.name(),
        "objective_means": options.objective.describe(Kind::Serving),
        "cluster": {
            "gpu": cluster.gpu.name,
            "gpus": gpus,
            "nodes": cluster.nodes,
            "gpus_per_node": cluster.gpus_per_node,
            "model": model.name,
        },
        "space": {
            "tp": tps,
            "pp": pps,
            "replicas": format!("1 to {} / (tp x pp)", gpus),
            "disaggregation": if disaggregated { "every split into prefill and decode pools of at least one replica" } else { "none (the scenario colocates prefill and decode)" },
        },
        "candidates": tally.json(),
        "ranking": {
            "method": "every valid candidate simulated in full with the scenario's traffic (no estimate)",
        },
        "by_gpus": by_gpus,
        "reference": {
            "ranked": reference_ranked,
            "result": reference.json(None),
        },
        "top": top,
    });
    if let Some(t) = target {
        out["target"] = json!({ "slo_attainment": t, "met": !best.is_empty() });
    }
    Ok(out)
}

/// The SLO attainment a fleet must reach: `--slo-attainment` (its default when absent), which
/// only `--objective fewest-gpus` takes, judged by the scenario's `[slo]`; a mixed fleet and a
/// diffusion plan's `--max-latency` refused.
fn attainment_target(
    scenario: &Scenario,
    serving: &ServingSection,
    options: &Options,
) -> Result<Option<f64>, ScenarioError> {
    let path = &scenario.source.path;
    if serving.group.is_some() {
        return Err(scenario
            .error_at(
                "serving.group",
                "`plan` searches replicas of one GPU type (cluster.gpu); a mixed fleet \
                 ([[serving.group]]) is not searched",
            )
            .with_help(
                "compare mixed fleets with `clustersim sweep --vary KEY=V1,V2,...`, or plan a \
                 fleet of one GPU type",
            ));
    }
    if options.max_latency_s.is_some() {
        return Err(ScenarioError::whole(
            path,
            "--max-latency bounds a video's latency; it applies to diffusion plans",
        )
        .with_help("a serving plan's target is --slo-attainment with --objective fewest-gpus"));
    }
    Ok(match options.objective {
        Objective::FewestGpus => {
            if scenario.file.slo.is_none() {
                return Err(ScenarioError::whole(
                    path,
                    "--objective fewest-gpus needs the scenario's [slo] to judge fleets by",
                )
                .with_help(
                    "add [slo] with ttft, tpot or e2e, e.g. ttft = \"2 s\" and tpot = \"100 ms\"",
                ));
            }
            let t = options.slo_attainment.unwrap_or(DEFAULT_SLO_ATTAINMENT);
            if !(t > 0.0 && t <= 1.0) {
                return Err(ScenarioError::whole(
                    path,
                    format!("--slo-attainment {t} is not a fraction in (0, 1]"),
                )
                .with_help("e.g. --slo-attainment 0.9 (90% of requests meet the SLO)"));
            }
            Some(t)
        }
        Objective::Fastest | Objective::Cheapest => {
            if options.slo_attainment.is_some() {
                return Err(ScenarioError::whole(
                    path,
                    format!(
                        "--slo-attainment is the target of --objective fewest-gpus, not of {}",
                        options.objective.name()
                    ),
                )
                .with_help("add --objective fewest-gpus, or remove --slo-attainment"));
            }
            None
        }
    })
}

/// The best of each GPU count: what `fewest-gpus` chose from (and whether it meets `target`).
fn by_gpus(ranked: &[Ranked], target: Option<f64>) -> Vec<Value> {
    let mut by_gpus: BTreeMap<u32, (usize, f64, f64)> = BTreeMap::new();
    for r in ranked {
        let e = by_gpus.entry(r.fleet.gpus()).or_insert((0, 0.0, 0.0));
        e.0 += 1;
        e.1 = e.1.max(r.tokens_per_s());
        e.2 = e.2.max(r.attainment());
    }
    by_gpus
        .into_iter()
        .map(|(g, (n, tokens, attainment))| {
            json!({
                "gpus": g,
                "candidates": n,
                "best_output_tokens_per_s": tokens,
                "best_slo_attainment": attainment,
                "meets_target": target.map(|t| attainment >= t),
            })
        })
        .collect()
}
