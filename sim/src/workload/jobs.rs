//! Several training jobs on one cluster, each on its own servers, their collectives sharing the
//! links between servers at run time (`exec::execute_jobs`, `exec::LinkLoads`).
//!
//! Each job is simulated as it would be alone (its own report, its collectives priced on the
//! shared topology where it sits), then all its step graphs run on one engine, each repeated
//! until every job has finished `steps` steps beside the others. A job's slowdown is its mean
//! step beside the others over its step alone on the same engine, so it counts only what the
//! others' traffic cost it: a job slows while another communicates over the links it uses, not
//! while the other computes. Ignored: links inside a server (a server runs one job), and the
//! other jobs' effect on a job's own report (it is the job alone).

use super::training::{self, TrainingConfig};
use crate::exec::{Graph, Job, LinkLoads, Timeline, execute_jobs};
use crate::hw::ComputeModel;
use crate::key_error::KeyError;
use crate::net::Topology;
use crate::net::tier::Tier;
use serde_json::{Value, json};

/// Links listed in the report's `links.busiest`.
const BUSIEST: usize = 10;

/// The most operations a cluster run executes: every job's step graph as many times as it
/// runs, the jobs with shorter steps repeating beside the longest (seconds on one core).
const MAX_OPERATIONS: f64 = (1u64 << 26) as f64;

/// Why a cluster run was refused: one job's own set-up (its index), or the cluster's.
pub enum ClusterError {
    Job(usize, KeyError),
    Cluster(KeyError),
}

/// A job lowered and placed: its servers (first and last) and its training set-up, whose
/// `first_gpu` and topology place it on the cluster.
pub struct PlacedJob {
    pub name: String,
    pub servers: [u32; 2],
    pub setup: TrainingConfig,
    pub compute: ComputeModel,
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

/// The cluster's report, and every job's first step beside the others as one graph (each job's
/// lanes under its name) for traces.
pub struct JobsRun {
    pub report: Value,
    pub graph: Graph,
    pub timeline: Timeline,
}

fn mean_s(runs: &[crate::engine::SimTime]) -> f64 {
    runs.iter().map(|t| t.as_secs_f64()).sum::<f64>() / runs.len().max(1) as f64
}

/// Refuses a run whose jobs would execute more than `MAX_OPERATIONS` operations: each job
/// repeats its step (of `steps[j]` seconds alone, `ops[j]` operations) `runs` times while the
/// longest step runs `runs` times.
fn within_budget(
    names: &[String],
    seconds: &[f64],
    ops: &[usize],
    runs: u32,
) -> Result<(), KeyError> {
    let longest = seconds.iter().copied().fold(0.0, f64::max);
    let repeats = |j: usize| runs as f64 * (longest / seconds[j].max(f64::MIN_POSITIVE)).ceil();
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
            "job `{}` would repeat its step {:.0} times while the longest step runs {runs}: \
             {total:.3e} operations, more than a run simulates ({MAX_OPERATIONS:.3e})",
            names[worst],
            repeats(worst)
        ),
    )
    .with_help(
        "share a cluster between jobs whose steps are of similar length, or lower sim.steps",
    ))
}

/// Simulates the jobs alone and together.
pub fn simulate(c: ClusterJobs) -> Result<JobsRun, ClusterError> {
    let mut runs = Vec::with_capacity(c.jobs.len());
    let mut placed = Vec::with_capacity(c.jobs.len());
    for (i, j) in c.jobs.into_iter().enumerate() {
        runs.push(training::simulate(j.setup, &j.compute).map_err(|e| ClusterError::Job(i, e))?);
        placed.push((j.name, j.servers));
    }
    let names: Vec<String> = placed.iter().map(|(n, _)| n.clone()).collect();
    let seconds: Vec<f64> = runs
        .iter()
        .map(|r| r.report["iteration_time_s"].as_f64().unwrap_or(0.0))
        .collect();
    let ops: Vec<usize> = runs.iter().map(|r| r.graph.len()).collect();
    within_budget(&names, &seconds, &ops, c.steps).map_err(ClusterError::Cluster)?;
    let loads: Vec<LinkLoads> = runs.iter().map(|r| r.link_loads()).collect();
    let jobs: Vec<Job> = runs
        .iter()
        .zip(&loads)
        .map(|(r, loads)| Job {
            graph: &r.graph,
            loads,
        })
        .collect();
    let (shared, stats) = execute_jobs(&jobs, c.capacity.clone(), c.steps);
    let alone: Vec<f64> = jobs
        .iter()
        .map(|j| mean_s(&execute_jobs(std::slice::from_ref(j), c.capacity.clone(), 1).0[0].runs))
        .collect();
    let mut slowest = (0.0f64, String::new());
    let job_reports: Vec<Value> = runs
        .iter()
        .zip(&placed)
        .zip(shared.iter().zip(&alone))
        .map(|((run, (name, servers)), (s, &alone))| {
            let together = mean_s(&s.runs);
            let slowdown = together / alone;
            if slowdown > slowest.0 {
                slowest = (slowdown, name.clone());
            }
            let between: f64 = s.carried.iter().sum();
            json!({
                "name": name,
                "kind": "training",
                "servers": servers,
                "gpus": run.setup.gpus(),
                "step_s": {
                    "alone": alone,
                    "shared": together,
                    "report": run.report["iteration_time_s"],
                },
                "slowdown": slowdown,
                "steps_counted": s.runs.len().min(c.steps as usize),
                "bytes_between_servers": between,
                "report": run.report,
            })
        })
        .collect();
    let horizon = stats.end.as_secs_f64();
    let names: Vec<&str> = placed.iter().map(|(n, _)| n.as_str()).collect();
    let links = busiest(&c.topology, &shared, &names, horizon);
    let report = json!({
        "scenario": c.name,
        "kind": "cluster",
        "cluster": {
            "gpu": c.gpu,
            "nodes": c.topology.gpu_count() / c.gpus_per_node,
            "gpus": c.topology.gpu_count(),
            "topology": c.topology.name,
        },
        "jobs": job_reports,
        "slowdown": { "max": slowest.0, "job": slowest.1 },
        "links": links,
        "fidelity": {
            "network": c.tier.name(),
            "sharing": "every job's collectives share the links between servers at run time, \
                        each loading its links evenly over its priced duration (weighted max-min)",
            "ranks": "stage (one GPU per pipeline stage in each job)",
        },
        "assumptions": c.assumptions,
        "sim": { "events": stats.events, "simulated_s": horizon, "steps": c.steps },
    });
    let mut graph = Graph::new();
    let mut timeline = Timeline {
        start: Vec::new(),
        end: Vec::new(),
    };
    for ((run, (name, _)), s) in runs.iter().zip(&placed).zip(&shared) {
        graph.append(&run.graph, |_, g| format!("{name}: {g}"));
        timeline.start.extend_from_slice(&s.timeline.start);
        timeline.end.extend_from_slice(&s.timeline.end);
    }
    Ok(JobsRun {
        report,
        graph,
        timeline,
    })
}

/// The links between servers that carried the most bytes over the run, each with its share of
/// the run's time busy at line rate and every job's bytes on it.
fn busiest(topo: &Topology, shared: &[crate::exec::JobRun], names: &[&str], horizon: f64) -> Value {
    let g = &topo.graph;
    let total = |l: usize| shared.iter().map(|s| s.carried[l]).sum::<f64>();
    let mut order: Vec<usize> = (0..g.edge_count()).filter(|&l| total(l) > 0.0).collect();
    order.sort_by(|&a, &b| total(b).total_cmp(&total(a)).then(a.cmp(&b)));
    let jobs_on = |l: usize| shared.iter().filter(|s| s.carried[l] > 0.0).count();
    let list: Vec<Value> = order
        .iter()
        .take(BUSIEST)
        .map(|&l| {
            let e = petgraph::graph::EdgeIndex::new(l);
            let (a, b) = g.edge_endpoints(e).expect("an edge of the graph");
            let by_job: serde_json::Map<String, Value> = names
                .iter()
                .zip(shared)
                .filter(|(_, s)| s.carried[l] > 0.0)
                .map(|(n, s)| (n.to_string(), json!(s.carried[l])))
                .collect();
            json!({
                "from": g[a].name,
                "to": g[b].name,
                "kind": g[e].kind.name(),
                "bytes": total(l),
                "busy": total(l) / (g[e].bandwidth * horizon.max(1e-12)),
                "jobs": by_job,
            })
        })
        .collect();
    json!({
        "busiest": list,
        "used": order.len(),
        "shared_by_jobs": order.iter().filter(|&&l| jobs_on(l) > 1).count(),
    })
}
