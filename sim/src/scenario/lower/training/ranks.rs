//! `sim.ranks` and `[[perturb]]` read: which GPUs a step simulates, the GPUs that compute
//! slower than their peers and those whose kernel times vary. Perturbations make ranks unlike, so they need every rank simulated:
//! unstated, `ranks` becomes `"all"` (recorded); stated `"stage"`, they are refused. Degraded
//! links are found by the names of their ends and must run below their rate, above zero; a
//! failed one (bandwidth 0 in the set-up) must be a leaf-spine or spine-core cable whose loss
//! cuts nothing off.

use crate::hw::GpuSpec;
use crate::net::Topology;
use crate::net::topology::LinkKind;
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
    /// Degraded links: edge and bandwidth, bytes/s (the lowest entry on a link; 0: failed).
    pub links: Vec<(u32, f64)>,
}

/// The rank mode and the perturbations, for a cluster of `nodes` servers of `per_node` GPUs.
pub(super) fn resolve(
    s: &Scenario,
    (nodes, per_node): (u32, u32),
    (gpu, topology): (&GpuSpec, &Topology),
    schedule: Schedule,
    assumptions: &mut Vec<String>,
) -> Result<(Ranks, Perturbations), ScenarioError> {
    let gpus = nodes * per_node;
    let mut slow: BTreeMap<u32, f64> = BTreeMap::new();
    let mut jitter: BTreeMap<u32, f64> = BTreeMap::new();
    let mut power: BTreeMap<u32, f64> = BTreeMap::new();
    let mut links: BTreeMap<u32, f64> = BTreeMap::new();
    // The topology with the failed cables so far, so that entries that together cut a leaf
    // off are refused at the one that does.
    let mut failed_so_far = topology.clone();
    for (i, entry) in s.file.perturb.iter().enumerate() {
        let at = |key: &str| format!("perturb.{i}.{key}");
        if let Some(edges) = degraded(s, i, entry, topology)? {
            for (e, bw) in edges {
                let b = links.entry(e).or_insert(bw);
                *b = b.min(bw);
                if bw == 0.0 {
                    failed_so_far
                        .fail_link(petgraph::graph::EdgeIndex::new(e as usize))
                        .map_err(|why| {
                            s.error_at(&at("link"), why).with_help(
                                "fail a cable between a leaf and a spine (leaf0, spine3) or a \
                                 spine and a core (pod0/spine1, core2) that leaves every pair a \
                                 path; a slower one takes `bandwidth`",
                            )
                        })?;
                }
            }
            continue;
        }
        if entry.slowdown.is_none() && entry.jitter.is_none() && entry.power_limit.is_none() {
            return Err(s
                .error_at(
                    &format!("perturb.{i}"),
                    "a [[perturb]] entry needs `slowdown`, `power_limit`, `jitter`, \
                     `nic_bandwidth` or `link`",
                )
                .with_help(
                    "slowdown = 1.3 (kernels 30% slower), power_limit = \"500 W\", jitter = 0.05 \
                     (each kernel's time varies by 5%), nic_bandwidth = \"200 Gb/s\" (a server's \
                     NICs), link = [\"node3/nic2\", \"leaf0\"] with bandwidth = \"100 Gb/s\"",
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
            if let Some(cv) = entry.jitter {
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
        links: links.into_iter().collect(),
    };
    Ok((ranks, perturbations))
}

/// The links entry `i` degrades, with their new bandwidths (both directions of each), or None
/// when it degrades none. An entry degrades a server's NICs (`server`, `nic_bandwidth`) or one
/// link (`link`, `bandwidth`), and nothing else.
fn degraded(
    s: &Scenario,
    i: usize,
    entry: &crate::scenario::perturb::PerturbEntry,
    topology: &Topology,
) -> Result<Option<Vec<(u32, f64)>>, ScenarioError> {
    let at = |key: &str| format!("perturb.{i}.{key}");
    match (entry.failed, &entry.link, entry.bandwidth) {
        (Some(false), ..) => {
            return Err(s
                .error_at(&at("failed"), "`failed = false` is every link's state")
                .with_help("leave it out, or write failed = true to take the link out"));
        }
        (Some(true), None, _) => {
            return Err(s
                .error_at(&at("failed"), "`failed` needs the `link` that failed")
                .with_help("e.g. link = [\"leaf0\", \"spine3\"] with failed = true"));
        }
        (Some(true), Some(_), Some(_)) => {
            return Err(s
                .error_at(
                    &at("bandwidth"),
                    "a failed link carries nothing at any bandwidth",
                )
                .with_help("keep failed = true, or a `bandwidth` for a slow but working link"));
        }
        _ => {}
    }
    let failed = entry.failed == Some(true);
    let (key, bw) = match (entry.nic_bandwidth, &entry.link, entry.bandwidth) {
        (None, None, None) => return Ok(None),
        (None, Some(_), None) if failed => ("failed", 0.0),
        (Some(b), None, None) => ("nic_bandwidth", b.0),
        (None, Some(_), Some(b)) => ("bandwidth", b.0),
        (None, Some(_), None) => {
            return Err(s
                .error_at(&at("link"), "a degraded `link` needs its `bandwidth`")
                .with_help("e.g. bandwidth = \"100 Gb/s\" (each direction), or failed = true"));
        }
        (_, None, Some(_)) => {
            return Err(s
                .error_at(&at("bandwidth"), "`bandwidth` belongs to a degraded `link`")
                .with_help("name it: link = [\"node3/nic2\", \"leaf0\"]; a server's NICs take nic_bandwidth"));
        }
        (Some(_), Some(_), _) => {
            return Err(s
                .error_at(
                    &at("link"),
                    "an entry degrades a server's NICs or one link, not both",
                )
                .with_help("write two [[perturb]] entries"));
        }
    };
    let others = [
        (entry.slowdown.is_some(), "slowdown"),
        (entry.power_limit.is_some(), "power_limit"),
        (entry.jitter.is_some(), "jitter"),
        (entry.gpu.is_some(), "gpu"),
        (entry.link.is_some() && entry.server.is_some(), "server"),
    ];
    if let Some((_, k)) = others.iter().find(|(set, _)| *set) {
        return Err(s
            .error_at(
                &at(k),
                format!("`{k}` beside a degraded link in one [[perturb]] entry"),
            )
            .with_help("write the GPU's and the link's perturbations as two entries"));
    }
    let g = &topology.graph;
    let edges: Vec<petgraph::graph::EdgeIndex> = match &entry.link {
        Some([a, b]) => {
            let find = |name: &str, k: usize| {
                g.node_indices().find(|&v| g[v].name == *name).ok_or_else(|| {
                    let names = g.node_indices().map(|v| g[v].name.as_str());
                    let hint = crate::suggest::closest(name, names)
                        .map(|c| format!("did you mean \"{c}\"? "))
                        .unwrap_or_default();
                    s.error_at(&at("link"), format!("the topology has no device \"{name}\""))
                        .with_help(format!("{hint}devices are named as the report's `links` names them (node3/nic2, leaf0, spine5); this is end {k} of the link"))
                })
            };
            let (va, vb) = (find(a, 1)?, find(b, 2)?);
            let edges: Vec<_> = g
                .edges_connecting(va, vb)
                .chain(g.edges_connecting(vb, va))
                .map(|e| petgraph::visit::EdgeRef::id(&e))
                .collect();
            if edges.is_empty() {
                return Err(s
                    .error_at(&at("link"), format!("no link joins \"{a}\" and \"{b}\""))
                    .with_help("name two devices a link joins directly, as the report's `links` lists them"));
            }
            edges
        }
        None => {
            let Some(n) = entry.server.filter(|&n| n < topology.nodes) else {
                return Err(s
                    .error_at(
                        &at(entry.server.map_or("nic_bandwidth", |_| "server")),
                        format!(
                            "`nic_bandwidth` needs a `server` of the cluster's 0-{}",
                            topology.nodes.saturating_sub(1)
                        ),
                    )
                    .with_help("e.g. server = 3 with nic_bandwidth = \"200 Gb/s\""));
            };
            g.edge_indices()
                .filter(|&e| {
                    let (a, b) = g.edge_endpoints(e).expect("an edge of the graph");
                    g[e].kind == LinkKind::Network && (g[a].node == Some(n) || g[b].node == Some(n))
                })
                .collect()
        }
    };
    if let Some(&e) = edges.iter().find(|&&e| g[e].bandwidth < bw) {
        let rate = g[e].bandwidth * 8e-9;
        return Err(s
            .error_at(
                &at(key),
                format!(
                    "{:.0} Gb/s is above the link's own {rate:.0} Gb/s",
                    bw * 8e-9
                ),
            )
            .with_help(
                "a perturbation degrades a link; raise the cluster's bandwidth to speed every link",
            ));
    }
    Ok(Some(
        edges.into_iter().map(|e| (e.index() as u32, bw)).collect(),
    ))
}

/// Pipelines a trace draws at most (`sim.trace_gpus`): each is the whole stage graph again.
pub const MAX_TRACED_PIPELINES: usize = 16;

/// `sim.trace_gpus`: GPUs of the cluster whose pipelines the trace draws, when every rank is
/// simulated; ascending, each once.
pub(super) fn trace_gpus(s: &Scenario, ranks: Ranks, gpus: u32) -> Result<Vec<u32>, ScenarioError> {
    let Some(list) = &s.file.sim.trace_gpus else {
        return Ok(Vec::new());
    };
    if ranks != Ranks::All {
        return Err(s
            .error_at(
                "sim.trace_gpus",
                "one GPU stands for its stage, so there is no other GPU's pipeline to draw",
            )
            .with_help("set ranks = \"all\" in [sim] to give every GPU its own timeline"));
    }
    if let Some(g) = list.iter().find(|&&g| g >= gpus) {
        return Err(s.error_at(
            "sim.trace_gpus",
            format!("the cluster's GPUs are 0-{}, not {g}", gpus - 1),
        ));
    }
    if list.is_empty() || list.len() > MAX_TRACED_PIPELINES {
        return Err(s
            .error_at(
                "sim.trace_gpus",
                format!(
                    "trace_gpus lists 1 to {MAX_TRACED_PIPELINES} GPUs, not {}",
                    list.len()
                ),
            )
            .with_help(
                "each GPU's pipeline is the whole step graph again; name the few to look at",
            ));
    }
    let mut sorted = list.clone();
    sorted.sort_unstable();
    sorted.dedup();
    Ok(sorted)
}
