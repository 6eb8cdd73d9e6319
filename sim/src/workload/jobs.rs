//! Several jobs on one cluster, each on its own servers, their traffic sharing the links
//! between servers at run time (`exec::execute_jobs`, `exec::LinkLoads`).
//!
//! Each job is simulated as it would be alone (its own report, on its servers' share of the
//! cluster), then every training job's step graph and every serving fleet run on one engine:
//! training jobs repeat their step until each has finished `steps` steps and every fleet has
//! served its requests once. A training job's slowdown is its mean step beside the others over
//! its step alone on the same engine; a fleet's is its mean end-to-end latency beside the others
//! over alone. So each counts only what the others' traffic cost it: a job slows while another
//! moves bytes over the links it uses (a training job's collectives, a disaggregated fleet's KV
//! transfers, `serving::cluster`), not while the other computes. A diffusion job generates inside
//! its servers, sharing no link: its slowdown is 1. Ignored: links inside a server (a server runs
//! one job), and the other jobs' effect on a job's own report (it is the job alone).

use super::diffusion::{self, DiffusionConfig};
use super::serving::cluster::{FleetGuest, KvRoutes};
use super::serving::config::{FleetConfig, Replicas, ServingConfig};
use super::serving::{self, too_many_iterations};
use super::training::{self, TrainingConfig, TrainingRun};
use crate::engine::SimTime;
use crate::exec::{Graph, Guest, Job, LinkLoads, Timeline, execute_jobs};
use crate::hw::ComputeModel;
use crate::key_error::KeyError;
use crate::net::Topology;
use crate::net::tier::Tier;
use crate::report::any::Report;
use crate::report::cluster::{
    BusyLink, Cluster as ClusterShape, ClusterReport, Fidelity, Job as JobReport, Links, Shared,
    Slowest, Step as StepReport,
};
use crate::report::training::TrainingReport;
use crate::report::typed::{Sim, TypedReport};
use serde_json::Value;
use std::sync::Arc;

/// Links listed in the report's `links.busiest`.
const BUSIEST: usize = 10;

/// The most operations a cluster run executes: every training job's step graph as many times as
/// it runs, the jobs with shorter steps repeating beside the longest (seconds on one core).
const MAX_OPERATIONS: f64 = (1u64 << 26) as f64;

/// Why a cluster run was refused: one job's own set-up (its index), or the cluster's.
pub enum ClusterError {
    Job(usize, KeyError),
    Cluster(KeyError),
}

/// What a job runs, lowered for its servers.
pub enum JobWork {
    /// A training set-up whose `first_gpu` and topology place it on the cluster.
    Training {
        setup: Box<TrainingConfig>,
        compute: ComputeModel,
    },
    /// A fleet of whole replicas on its servers' share of the cluster, whose first GPU on the
    /// cluster is `first_gpu`.
    Serving {
        config: Box<ServingConfig>,
        first_gpu: u32,
    },
    /// Videos generated inside the job's servers.
    Diffusion(Box<DiffusionConfig>),
}

/// A job lowered and placed: its servers (first and last) and its work.
pub struct PlacedJob {
    pub name: String,
    pub servers: [u32; 2],
    pub work: JobWork,
}

/// A cluster scenario, lowered.
pub struct ClusterJobs {
    pub name: String,
    pub topology: Topology,
    /// Effective capacity of every link of `topology`, bytes/s.
    pub capacity: Vec<f64>,
    pub gpu: String,
    pub gpus_per_node: u32,
    pub tier: Tier,
    pub steps: u32,
    pub jobs: Vec<PlacedJob>,
    pub assumptions: Vec<String>,
}

/// The cluster's report, and every job's first step (a fleet's whole run) beside the others as
/// one graph (each job's lanes under its name) for traces.
pub struct JobsRun {
    pub report: Value,
    pub graph: Graph,
    pub timeline: Timeline,
}

/// The mean of `runs` in whole picoseconds: runs of one length have exactly that mean.
fn mean_s(runs: &[SimTime]) -> f64 {
    let total: u128 = runs.iter().map(|t| t.as_ps() as u128).sum();
    let mean = total / runs.len().max(1) as u128;
    SimTime::from_ps(mean.min(u64::MAX as u128) as u64).as_secs_f64()
}

/// Refuses a run whose training jobs would execute more than `MAX_OPERATIONS` operations: each
/// repeats its step (of `seconds[j]` alone, `ops[j]` operations) while the longest step runs
/// `runs` times and every fleet serves its requests (in `span` seconds alone).
fn within_budget(
    names: &[&str],
    seconds: &[f64],
    ops: &[usize],
    runs: u32,
    span: f64,
) -> Result<(), KeyError> {
    let longest = seconds.iter().copied().fold(0.0, f64::max);
    let repeats = |j: usize| {
        let over = (runs as f64 * longest).max(span);
        (over / seconds[j].max(f64::MIN_POSITIVE))
            .ceil()
            .max(runs as f64)
    };
    let total: f64 = (0..ops.len()).map(|j| repeats(j) * ops[j] as f64).sum();
    if total <= MAX_OPERATIONS {
        return Ok(());
    }
    let worst = (0..ops.len())
        .max_by(|&a, &b| (repeats(a) * ops[a] as f64).total_cmp(&(repeats(b) * ops[b] as f64)))
        .unwrap_or(0);
    Err(KeyError::new(
        "sim.steps",
        format!(
            "job `{}` would repeat its step {:.0} times while the longest step runs {runs} \
             times and every fleet serves its requests: {total:.3e} operations, more than a \
             run simulates ({MAX_OPERATIONS:.3e})",
            names[worst],
            repeats(worst)
        ),
    )
    .with_help(
        "share a cluster between jobs whose steps (and fleets' runs) are of similar length, or \
         lower sim.steps or the fleets' workload.requests",
    ))
}

/// A job simulated alone: its own run, and for a fleet where it sits on the cluster.
enum Alone {
    Training(Box<TrainingRun>),
    Serving {
        report: Value,
        config: Box<ServingConfig>,
        first_gpu: u32,
    },
    Diffusion(Box<diffusion::DiffusionRun>),
}

impl Alone {
    fn report(&self) -> &Value {
        match self {
            Alone::Training(r) => &r.report,
            Alone::Serving { report, .. } => report,
            Alone::Diffusion(r) => &r.report,
        }
    }
}

fn alone(work: JobWork) -> Result<Alone, KeyError> {
    Ok(match work {
        JobWork::Training { setup, compute } => {
            Alone::Training(Box::new(training::simulate(*setup, &compute)?))
        }
        JobWork::Serving { config, first_gpu } => Alone::Serving {
            report: serving::simulate(&config)?.report,
            config,
            first_gpu,
        },
        JobWork::Diffusion(config) => Alone::Diffusion(Box::new(diffusion::simulate(&config)?)),
    })
}

/// A fleet's whole replicas (the lowering refuses placed fleets in a cluster).
fn replicas_of(c: &ServingConfig) -> &Replicas {
    match &c.fleet {
        FleetConfig::Replicas(r) => r,
        FleetConfig::Placed(_) => unreachable!("a placed fleet is refused in a cluster"),
    }
}

/// Simulates the jobs alone and together.
pub fn simulate(c: ClusterJobs) -> Result<JobsRun, ClusterError> {
    let topology = Arc::new(c.topology);
    let capacity = Arc::new(c.capacity);
    let mut runs = Vec::with_capacity(c.jobs.len());
    let mut placed = Vec::with_capacity(c.jobs.len());
    for (i, j) in c.jobs.into_iter().enumerate() {
        runs.push(alone(j.work).map_err(|e| ClusterError::Job(i, e))?);
        placed.push((j.name, j.servers));
    }
    let names: Vec<&str> = placed.iter().map(|(n, _)| n.as_str()).collect();
    let trainings: Vec<(usize, &TrainingRun)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Alone::Training(t) => Some((i, &**t)),
            _ => None,
        })
        .collect();
    let fleets: Vec<(usize, &ServingConfig, u32)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Alone::Serving {
                config, first_gpu, ..
            } => Some((i, &**config, *first_gpu)),
            _ => None,
        })
        .collect();
    let guest = |&(_, config, first): &(usize, &ServingConfig, u32)| {
        let routes = KvRoutes::new(topology.clone(), c.tier, capacity.clone(), first);
        FleetGuest::new(config, replicas_of(config), routes)
    };
    let overran = |k: usize, g: &FleetGuest| match g.overran() {
        true => Err(ClusterError::Job(fleets[k].0, too_many_iterations())),
        false => Ok(()),
    };

    // Every fleet alone on the cluster's engine.
    let mut span = 0.0f64;
    let mut fleets_alone = Vec::with_capacity(fleets.len());
    for (k, f) in fleets.iter().enumerate() {
        let mut g = guest(f);
        let (_, _, stats) = execute_jobs(&[], &mut [&mut g], capacity.to_vec(), 1);
        overran(k, &g)?;
        span = span.max(stats.end.as_secs_f64());
        fleets_alone.push(g);
    }

    let step_of = |r: &TrainingRun| TrainingReport::of_run(&r.report).iteration_time_s;
    let seconds: Vec<f64> = trainings.iter().map(|(_, r)| step_of(r)).collect();
    let ops: Vec<usize> = trainings.iter().map(|(_, r)| r.graph.len()).collect();
    let training_names: Vec<&str> = trainings.iter().map(|&(i, _)| names[i]).collect();
    within_budget(&training_names, &seconds, &ops, c.steps, span).map_err(ClusterError::Cluster)?;
    let loads: Vec<LinkLoads> = trainings.iter().map(|(_, r)| r.link_loads()).collect();
    let jobs: Vec<Job> = trainings
        .iter()
        .zip(&loads)
        .map(|((_, r), loads)| Job {
            graph: &r.graph,
            loads,
        })
        .collect();
    let mut fleets_shared: Vec<FleetGuest> = fleets.iter().map(guest).collect();
    let mut guests: Vec<&mut dyn Guest> = fleets_shared
        .iter_mut()
        .map(|g| g as &mut dyn Guest)
        .collect();
    let (shared, fleet_bytes, stats) = execute_jobs(&jobs, &mut guests, capacity.to_vec(), c.steps);
    for (k, g) in fleets_shared.iter().enumerate() {
        overran(k, g)?;
    }
    let step_alone: Vec<f64> = jobs
        .iter()
        .map(|j| {
            let (runs, _, _) = execute_jobs(std::slice::from_ref(j), &mut [], capacity.to_vec(), 1);
            mean_s(&runs[0].runs)
        })
        .collect();

    // Each job's part of the report, and what it carried over the links between servers.
    let mut carried: Vec<&[f64]> = vec![&[]; runs.len()];
    let mut job_reports: Vec<JobReport> = runs
        .iter()
        .zip(&placed)
        .map(|(run, (name, servers))| JobReport {
            name: name.clone(),
            kind: match run {
                Alone::Training(_) => "training",
                Alone::Serving { .. } => "serving",
                Alone::Diffusion(_) => "diffusion",
            }
            .into(),
            servers: *servers,
            gpus: Report::of_run(run.report()).gpus().map_or(0, |(_, n)| n),
            slowdown: 1.0,
            bytes_between_servers: 0.0,
            report: run.report().clone(),
            step_s: None,
            steps_counted: None,
            latency: None,
        })
        .collect();
    for (t, &(i, run)) in trainings.iter().enumerate() {
        let s = &shared[t];
        let together = mean_s(&s.runs);
        carried[i] = &s.carried;
        let r = &mut job_reports[i];
        r.gpus = run.setup.gpus();
        r.step_s = Some(StepReport {
            alone: step_alone[t],
            shared: together,
            report: step_of(run),
        });
        r.slowdown = together / step_alone[t];
        r.steps_counted = Some(s.runs.len().min(c.steps as usize) as u64);
        r.bytes_between_servers = s.carried.iter().sum::<f64>();
    }
    for (k, &(i, config, _)) in fleets.iter().enumerate() {
        let (a, s) = (&fleets_alone[k], &fleets_shared[k]);
        carried[i] = &fleet_bytes[k];
        let r = &mut job_reports[i];
        r.latency = Some(Shared {
            alone: a.outcome(&config.slo),
            shared: s.outcome(&config.slo),
        });
        let e2e_alone = a.mean_e2e_s();
        r.slowdown = if e2e_alone > 0.0 {
            s.mean_e2e_s() / e2e_alone
        } else {
            1.0
        };
        r.bytes_between_servers = fleet_bytes[k].iter().sum::<f64>();
    }
    let slowest = job_reports
        .iter()
        .map(|r| (r.slowdown, Some(r.name.clone())))
        .fold((0.0f64, None), |a, b| if b.0 > a.0 { b } else { a });
    let horizon = stats.end.as_secs_f64();
    let links = busiest(&topology, &carried, &names, horizon);
    let report = ClusterReport {
        kind: "cluster".into(),
        scenario: c.name.clone(),
        cluster: ClusterShape {
            gpu: c.gpu.clone(),
            nodes: topology.gpu_count() / c.gpus_per_node,
            gpus: topology.gpu_count(),
            topology: topology.name.to_string(),
        },
        jobs: job_reports,
        slowdown: Slowest {
            max: slowest.0,
            job: slowest.1,
        },
        links,
        fidelity: Fidelity {
            network: c.tier.name().into(),
            sharing: "the traffic between servers of every job (training collectives, \
                      disaggregated fleets' KV transfers) shares the links at run time, each \
                      transfer loading its links evenly over its priced duration (weighted \
                      max-min); a diffusion job shares no link"
                .into(),
            ranks: "stage (one GPU per pipeline stage in each training job)".into(),
            serving: "every request and replica of a fleet, served once beside the others".into(),
        },
        assumptions: c.assumptions.clone(),
        sim: Sim {
            simulated_s: Some(horizon),
            steps: Some(c.steps),
            ..Sim::events(stats.events)
        },
        cost: None,
    }
    .to_value();
    let mut graph = Graph::new();
    let mut timeline = Timeline {
        start: Vec::new(),
        end: Vec::new(),
    };
    let mut add = |g: &Graph, t: &Timeline, name: &str| {
        graph.append(g, |_, group| format!("{name}: {group}"));
        timeline.start.extend_from_slice(&t.start);
        timeline.end.extend_from_slice(&t.end);
    };
    let mut next_training = 0;
    let mut next_fleet = 0;
    for (run, name) in runs.iter().zip(&names) {
        match run {
            Alone::Training(r) => {
                add(&r.graph, &shared[next_training].timeline, name);
                next_training += 1;
            }
            Alone::Serving { config, .. } => {
                let (g, t) = fleets_shared[next_fleet].trace(&config.slo);
                add(&g, &t, name);
                next_fleet += 1;
            }
            Alone::Diffusion(r) => add(&r.graph, &r.timeline, name),
        }
    }
    Ok(JobsRun {
        report,
        graph,
        timeline,
    })
}

/// The links between servers that carried the most bytes over the run, each with its share of
/// the run's time busy at line rate and every job's bytes on it (`carried[j]`: job j's bytes per
/// link, empty when it carried none).
fn busiest(topo: &Topology, carried: &[&[f64]], names: &[&str], horizon: f64) -> Links {
    let g = &topo.graph;
    let on = |j: usize, l: usize| carried[j].get(l).copied().unwrap_or(0.0);
    let total = |l: usize| (0..carried.len()).map(|j| on(j, l)).sum::<f64>();
    let mut order: Vec<usize> = (0..g.edge_count()).filter(|&l| total(l) > 0.0).collect();
    order.sort_by(|&a, &b| total(b).total_cmp(&total(a)).then(a.cmp(&b)));
    let jobs_on = |l: usize| (0..carried.len()).filter(|&j| on(j, l) > 0.0).count();
    let list: Vec<BusyLink> = order
        .iter()
        .take(BUSIEST)
        .map(|&l| {
            let e = petgraph::graph::EdgeIndex::new(l);
            let (a, b) = g.edge_endpoints(e).expect("an edge of the graph");
            BusyLink {
                from: g[a].name.to_string(),
                to: g[b].name.to_string(),
                kind: g[e].kind.name().into(),
                bytes: total(l),
                busy: total(l) / (g[e].bandwidth * horizon.max(1e-12)),
                jobs: (0..carried.len())
                    .filter(|&j| on(j, l) > 0.0)
                    .map(|j| (names[j].to_string(), on(j, l)))
                    .collect(),
            }
        })
        .collect();
    Links {
        busiest: list,
        used: order.len() as u64,
        shared_by_jobs: order.iter().filter(|&&l| jobs_on(l) > 1).count() as u64,
    }
}
