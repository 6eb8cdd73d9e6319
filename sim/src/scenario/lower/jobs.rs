//! A cluster scenario lowered: the shared `[cluster]` built once (its topology and the links'
//! effective capacities), and each `[[job]]` lowered as the scenario it is, on its own servers'
//! share of the cluster, then placed: its collectives priced on the shared topology from its
//! first GPU on. Every job is refused at its own keys; the cluster's refusals at the cluster's.

use super::cluster::{Needs, resolve};
use crate::net::tier::{Efficiency, Tier, capacities};
use crate::scenario::error::ScenarioError;
use crate::scenario::{Kind, NetworkTier, Scenario};
use crate::workload::jobs::{ClusterJobs, PlacedJob};
use crate::workload::training::policy::Ranks;

/// Steps each job runs beside the others when `[sim] steps` says nothing.
pub const DEFAULT_STEPS: u32 = 2;
/// The most steps of every job a cluster run counts: each is simulated, and a job with shorter
/// steps repeats beside the longest one all the while.
pub const MAX_STEPS: u32 = 100;

/// Lowers a cluster scenario.
pub fn lower(s: &Scenario) -> Result<ClusterJobs, ScenarioError> {
    let mut assumptions = Vec::new();
    if s.file.sim.network.is_none() {
        assumptions.push(
            "flow network tier (the jobs' collectives share the links between servers)".into(),
        );
    }
    let tier = match s.file.sim.network {
        Some(NetworkTier::Analytical) => Tier::Analytical,
        _ => Tier::Flow,
    };
    let needs = Needs {
        sizes: true,
        inter_node: true,
    };
    let cluster = resolve(s, &mut assumptions, needs)?;
    if s.jobs.is_empty() {
        return Err(s
            .error_at("kind", "a cluster scenario without any [[job]]")
            .with_help("add a [[job]] with scenario = \"job.toml\" and servers = [0, 3]"));
    }
    let steps = match s.file.sim.steps {
        Some(0) => return Err(s.error_at("sim.steps", "`sim.steps` must be at least 1")),
        Some(n) if n > MAX_STEPS => {
            return Err(s
                .error_at(
                    "sim.steps",
                    format!("`sim.steps` = {n} is more than {MAX_STEPS}"),
                )
                .with_help(format!(
                    "every step of every job is simulated; count at most {MAX_STEPS} (a job's \
                     slowdown settles within a few)"
                )));
        }
        Some(n) => n,
        None => {
            assumptions.push(format!(
                "{DEFAULT_STEPS} steps of every job counted beside the others (sim.steps)"
            ));
            DEFAULT_STEPS
        }
    };
    let mut taken: Vec<Option<usize>> = vec![None; cluster.nodes as usize];
    let mut jobs = Vec::new();
    for (i, entry) in s.jobs.iter().enumerate() {
        let at = |key: &str| format!("job.{i}.{key}");
        let Some([first, last]) = entry.servers else {
            return Err(s
                .error_at(
                    &format!("job.{i}"),
                    format!("job `{}` has no `servers`", entry.name),
                )
                .with_help("place it on a range of servers: servers = [0, 3] (first and last)"));
        };
        if first > last || last >= cluster.nodes {
            return Err(s
                .error_at(
                    &at("servers"),
                    format!("servers [{first}, {last}] is not a range of the cluster's servers"),
                )
                .with_help(format!(
                    "the cluster's servers are 0-{}; write [first, last] with first <= last",
                    cluster.nodes - 1
                )));
        }
        if let Some((n, other)) = (first..=last).find_map(|n| taken[n as usize].map(|o| (n, o))) {
            return Err(s
                .error_at(
                    &at("servers"),
                    format!("server {n} already runs job `{}`", s.jobs[other].name),
                )
                .with_help("jobs share the network, not servers: give each its own range"));
        }
        for n in first..=last {
            taken[n as usize] = Some(i);
        }
        let job = &entry.scenario;
        if job.kind != Kind::Training {
            return Err(job
                .error_at("kind", format!("a {} job on a shared cluster is not simulated by this version", job.kind.name()))
                .with_help("a cluster's jobs are training scenarios; serving and diffusion jobs are planned"));
        }
        let refuse = |key: &str, why: &str| {
            Err(job.error_at(key, why.to_string()).with_help(
                "simulate this job alone with it, or remove it to run the job in the cluster",
            ))
        };
        if job.file.sim.ranks == Some(Ranks::All) {
            return refuse(
                "sim.ranks",
                "a cluster's jobs run one GPU per pipeline stage (sim.ranks = \"stage\")",
            );
        }
        if !job.file.perturb.is_empty() {
            return refuse(
                "perturb",
                "[[perturb]] is not simulated inside a cluster's job",
            );
        }
        if job
            .file
            .sim
            .network
            .is_some_and(|n| n != s.file.sim.network.unwrap_or(NetworkTier::Flow))
        {
            return refuse(
                "sim.network",
                "a cluster's jobs share the cluster's network tier ([sim] network of the cluster scenario)",
            );
        }
        let mut placed = job.clone();
        placed.file.cluster = s.file.cluster.clone();
        placed.file.cluster.nodes = Some(last - first + 1);
        placed.file.sim.network = Some(match tier {
            Tier::Flow => NetworkTier::Flow,
            Tier::Analytical => NetworkTier::Analytical,
        });
        if entry.from_file {
            // Paths in [cluster] are the cluster file's, whatever file the job came from.
            if let Some(p) = &s.file.cluster.profile {
                let beside = s.source.path.parent().map(|d| d.join(p));
                if let Some(b) = beside.filter(|b| b.exists()) {
                    placed.file.cluster.profile = Some(b.to_string_lossy().into_owned());
                }
            }
        }
        let (mut setup, compute) = super::training::lower(&placed)?;
        setup.topology = cluster.topology.clone();
        setup.first_gpu = first * cluster.gpus_per_node;
        setup.assumptions.push(format!(
            "on servers {first}-{last} of the shared cluster (GPUs {}-{}), the cluster's [cluster]",
            setup.first_gpu,
            setup.first_gpu + setup.gpus() - 1
        ));
        jobs.push(PlacedJob {
            name: entry.name.clone(),
            servers: [first, last],
            setup,
            compute,
        });
    }
    Ok(ClusterJobs {
        name: s.name(),
        capacity: capacities(&cluster.topology, &Efficiency::DEFAULT, None),
        topology: cluster.topology,
        gpu: cluster.gpu.name.to_string(),
        gpus_per_node: cluster.gpus_per_node,
        tier,
        steps,
        jobs,
        assumptions,
    })
}
