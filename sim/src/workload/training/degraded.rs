//! Collectives over degraded or failed links (`[[perturb]] nic_bandwidth` or `link`) when every
//! rank is simulated. Each group of each distinct collective the step runs is priced alone
//! twice: on the topology with the degraded links (a failed cable's routes moved to the
//! surviving spines, `Topology::fail_link`) and on the healthy one. Its operations take the
//! stage's price times that ratio, so a group whose routes cross a degraded link (or now share
//! the surviving ones) slows, and its peers in the pipeline and in the other groups wait for it
//! where they meet. Only groups with a member on a server a degraded link touches are priced
//! (every group, when a link between switches is degraded). A failed cable matters through the
//! traffic that crowds onto the surviving spines: with one, each collective is priced as the
//! stage graph prices it, with every group of its stage at once, and all its groups take that
//! ratio. Ignored: the other groups' traffic on a degraded link (without a failure), and sends
//! are priced as their pipeline's pair.

use super::comm::Comm;
use super::links::CommUse;
use super::setup::TrainingConfig;
use super::step::Collective;
use crate::engine::SimTime;
use crate::exec::Graph;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Durations for instance lanes whose collectives cross degraded links: more `alternates`
/// (each the graph's durations with some collectives slowed, or a power limit's), `table` updated
/// (`exec::Replicas`), and the report's `degraded_links`.
pub fn slow_groups(
    setup: &TrainingConfig,
    graph: &Graph,
    (uses, collectives): (&[CommUse], &[Collective]),
    alternates: &mut Vec<Vec<SimTime>>,
    table: &mut Vec<u32>,
) -> Value {
    let topo = &setup.topology;
    let g = &topo.graph;
    let mut bad = setup.clone();
    for &(e, bw) in &setup.degraded_links {
        let e = petgraph::graph::EdgeIndex::new(e as usize);
        if bw > 0.0 {
            bad.topology.graph[e].bandwidth = bw;
        } else {
            bad.topology
                .fail_link(e)
                .expect("the lowering fails only cables whose loss cuts no leaf off");
        }
    }
    // Servers a degraded link touches; None: a link between switches, which any group may cross.
    let mut servers = BTreeSet::new();
    let mut anywhere = false;
    for &(e, _) in &setup.degraded_links {
        let (a, b) = g
            .edge_endpoints(petgraph::graph::EdgeIndex::new(e as usize))
            .expect("an edge of the topology");
        match g[a].node.or(g[b].node) {
            Some(n) => {
                servers.insert(n);
            }
            None => anywhere = true,
        }
    }
    let failures = setup.degraded_links.iter().any(|&(_, bw)| bw == 0.0);
    let gpn = setup.fabric.gpus_per_node;
    let pipelines = setup.pipelines();
    // The ratio of each distinct collective's price for each pipeline's group.
    let mut priced: HashMap<(Vec<u32>, usize), f64> = HashMap::new();
    let mut ratio: Vec<Vec<f64>> = vec![Vec::new(); uses.len()];
    let (mut slowed, mut worst) = (0usize, 1.0f64);
    for (u, cu) in uses.iter().enumerate() {
        if failures {
            // The stage's groups together, as the stage graph prices them: every phase lasts
            // until its slowest copy is done, so each group takes the stage's ratio.
            let (op, bytes, tier) = (cu.op, cu.bytes, setup.tier);
            let healthy = setup.shared_collective_seconds(cu.base, cu.comm, op, bytes, tier);
            let slow = bad.shared_collective_seconds(cu.base, cu.comm, op, bytes, tier);
            let r = (slow / healthy.max(1e-15)).max(1.0);
            if r > 1.0 {
                slowed += setup.concurrent_groups(cu.base, cu.comm).len() + 1;
                worst = worst.max(r);
            }
            ratio[u] = vec![r; pipelines as usize];
            continue;
        }
        let (_, p) = setup.place(cu.base);
        ratio[u] = (0..pipelines)
            .map(|i| {
                // The group's first member, as the stage graph prices a group from it.
                let (base, comm) = match cu.comm {
                    Comm::Pipe(to) => (
                        setup.rank_of(i, p),
                        Comm::Pipe(setup.rank_of(i, setup.place(to).1)),
                    ),
                    c => (setup.rank_of(setup.group_of(i, c).unwrap_or(i), p), c),
                };
                let mut ranks = setup.comm_ranks(base, comm);
                let touches = ranks
                    .iter()
                    .any(|r| servers.contains(&((r + setup.first_gpu) / gpn)));
                if !(anywhere || touches) {
                    return 1.0;
                }
                ranks.sort_unstable();
                *priced.entry((ranks, u)).or_insert_with(|| {
                    let (op, bytes, tier) = (cu.op, cu.bytes, setup.tier);
                    let healthy = setup.collective_seconds(base, comm, op, bytes, tier);
                    let slow = bad.collective_seconds(base, comm, op, bytes, tier);
                    let r = (slow / healthy.max(1e-15)).max(1.0);
                    if r > 1.0 {
                        slowed += 1;
                        worst = worst.max(r);
                    }
                    r
                })
            })
            .collect();
    }
    // Each instance lane's slowed operations: (op, ratio bits), the lane's pattern.
    let lanes = graph.lanes.len();
    let mut patterns: BTreeMap<(u32, Vec<(u32, u64)>), u32> = BTreeMap::new();
    let mut by_lane: BTreeMap<(u32, u32), Vec<(u32, u64)>> = BTreeMap::new();
    for &(op, _, _, u) in collectives {
        let Some(r) = ratio.get(u as usize) else {
            continue;
        };
        let lane = graph.ops[op as usize].lane;
        for (i, &x) in r.iter().enumerate().filter(|(_, x)| **x > 1.0) {
            by_lane
                .entry((i as u32, lane))
                .or_default()
                .push((op, x.to_bits()));
        }
    }
    if table.is_empty() && !by_lane.is_empty() {
        *table = vec![0; pipelines as usize * lanes];
    }
    for ((i, lane), ops) in by_lane {
        let il = i as usize * lanes + lane as usize;
        let key = (table[il], ops);
        let next = alternates.len() as u32 + 1;
        let k = *patterns.entry(key.clone()).or_insert_with(|| {
            let mut d: Vec<SimTime> = match key.0 {
                0 => graph.ops.iter().map(|o| o.duration).collect(),
                k => alternates[k as usize - 1].clone(),
            };
            for &(op, bits) in &key.1 {
                let x = f64::from_bits(bits);
                d[op as usize] = SimTime::from_secs_f64(d[op as usize].as_secs_f64() * x);
            }
            alternates.push(d);
            next
        });
        table[il] = k;
    }
    json!({
        "links": setup.degraded_links.iter().map(|&(e, bw)| {
            let e = petgraph::graph::EdgeIndex::new(e as usize);
            let (a, b) = g.edge_endpoints(e).expect("an edge of the topology");
            json!({
                "from": g[a].name,
                "to": g[b].name,
                "gbps": bw * 8e-9,
                "of_gbps": g[e].bandwidth * 8e-9,
                "failed": bw == 0.0,
            })
        }).collect::<Vec<_>>(),
        "groups_slowed": slowed,
        "slowest_ratio": worst,
    })
}
