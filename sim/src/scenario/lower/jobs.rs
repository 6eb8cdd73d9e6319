//! A cluster scenario lowered: the shared `[cluster]` built once (its topology and the links'
//! effective capacities), and each `[[job]]` lowered as the scenario it is (training, serving
//! or diffusion), on its own servers' share of the cluster, then placed: a training job's
//! collectives priced on the shared topology from its first GPU on, a fleet's KV transfers from
//! its first GPU on. Every job is refused at its own keys; the cluster's refusals at the
//! cluster's.

use super::cluster::{Needs, resolve};
use crate::net::tier::{Efficiency, Tier, capacities};
use crate::scenario::error::ScenarioError;
use crate::scenario::{Kind, NetworkTier, Scenario};
use crate::workload::jobs::{ClusterJobs, JobWork, PlacedJob};
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
        if !matches!(job.kind, Kind::Training | Kind::Serving | Kind::Diffusion) {
            return Err(job
                .error_at(
                    "kind",
                    format!("a {} scenario is not a job a cluster runs", job.kind.name()),
                )
                .with_help("a cluster's jobs are training, serving or diffusion scenarios"));
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
        let gpus_per_node = cluster.gpus_per_node;
        let first_gpu = first * gpus_per_node;
        let on = |gpus: u32| {
            format!(
                "on servers {first}-{last} of the shared cluster (GPUs {first_gpu}-{}), the \
                 cluster's [cluster]",
                first_gpu + gpus - 1
            )
        };
        let work = match job.kind {
            Kind::Serving => {
                placed_fleet(job)?;
                let mut config = super::serving::lower(&placed)?;
                config
                    .assumptions
                    .push(on(gpus_per_node * (last - first + 1)));
                JobWork::Serving {
                    config: Box::new(config),
                    first_gpu,
                }
            }
            Kind::Diffusion => {
                let mut config = super::diffusion::lower(&placed)?;
                let world = config.layout.world();
                if world > gpus_per_node || gpus_per_node % world != 0 {
                    return Err(job
                        .error_at(
                            "parallel",
                            format!(
                                "a video on {world} GPUs would span servers of \
                                 {gpus_per_node} GPUs"
                            ),
                        )
                        .with_help(
                            "a cluster's diffusion job generates each video inside one server: \
                             use parallel degrees whose product divides cluster.gpus_per_node",
                        ));
                }
                config
                    .assumptions
                    .push(on(gpus_per_node * (last - first + 1)));
                JobWork::Diffusion(Box::new(config))
            }
            _ => {
                let (mut setup, compute) = super::training::lower(&placed)?;
                setup.topology = cluster.topology.clone();
                setup.first_gpu = first_gpu;
                setup.assumptions.push(on(setup.gpus()));
                JobWork::Training {
                    setup: Box::new(setup),
                    compute,
                }
            }
        };
        jobs.push(PlacedJob {
            name: entry.name.clone(),
            servers: [first, last],
            work,
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

/// Refuses a fleet a cluster does not run: one spread over mixed servers by a placement, or of
/// several kinds of GPU (a cluster's servers are all alike).
fn placed_fleet(job: &Scenario) -> Result<(), ScenarioError> {
    let serving = job.file.serving.as_ref();
    let refuse = |key: &str, why: &str| {
        Err(job.error_at(key, why.to_string()).with_help(
            "a cluster's fleet is whole replicas of the cluster's GPU: remove it, or simulate \
             the fleet alone",
        ))
    };
    if serving.is_some_and(|s| s.placement.is_some()) {
        return refuse(
            "serving.placement",
            "a placed fleet spreads layers over mixed servers; a cluster's servers are alike",
        );
    }
    if serving.is_some_and(|s| s.group.is_some()) {
        return refuse(
            "serving.group",
            "a mixed fleet's groups bring servers of their own; a cluster's job runs on its servers",
        );
    }
    Ok(())
}
