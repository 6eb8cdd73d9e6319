//! The traffic of every link over a training step (`[sim] record_links`), for the report's
//! `links` and the viewer's Topology tab.
//!
//! The step graph has one GPU per pipeline stage standing for its tensor-, context- and
//! data-parallel peers, and prices each distinct collective once. Here each distinct collective
//! a stage GPU runs is priced again with every group of the stage that runs it at the same
//! moment (the group shifted over the stage's ranks: `collective::cost::cost_beside`, so links
//! the copies share carry all their bytes), and its bytes on every link are counted as many
//! times as the step runs it. Point-to-point exchanges (pipeline sends, ring attention's
//! neighbours) are shifted over every rank of the stage. Deliberately ignored: the other
//! stages' copies of a collective priced on another stage GPU are their own entries already;
//! compute, and the timing of the traffic within the step (only totals are kept).

use super::comm::Comm;
use super::setup::TrainingConfig;
use crate::collective::CollectiveOp;
use crate::exec::LinkLoads;
use crate::net::tier::{Efficiency, capacities};
use crate::net::topology::LinkKind;
use std::collections::BTreeSet;

/// A distinct collective a stage GPU runs (`base` its rank) and how many times a step runs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CommUse {
    pub base: u32,
    pub comm: Comm,
    pub op: CollectiveOp,
    pub bytes: f64,
    pub count: u32,
    /// Its price in the step: seconds beside the stage's other groups (`comm::concurrent_groups`).
    pub seconds: f64,
}

/// The ranks the GPU of rank `base` stands for: its stage's, every tensor, context and
/// data-parallel index.
fn stage_ranks(s: &TrainingConfig, base: u32) -> BTreeSet<u32> {
    let st = s.stride;
    let mut ranks = BTreeSet::new();
    for d in 0..s.dp {
        for c in 0..s.cp {
            for i in 0..s.tp {
                ranks.insert(base + d * st.dp + c * st.cp + i * st.tp);
            }
        }
    }
    ranks
}

/// The shifts (other than 0) of `comm`'s group of `base` that cover the rest of its stage, each
/// rank in one group: collectives take the groups that fit whole and disjoint, point-to-point
/// exchanges every rank whose partner is in the cluster.
pub fn offsets(s: &TrainingConfig, base: u32, comm: Comm) -> Vec<u32> {
    let stage = stage_ranks(s, base);
    if matches!(comm, Comm::Pipe(_) | Comm::ContextPeer) {
        let gpus = s.gpus();
        let last = s.comm_ranks(base, comm).into_iter().max().unwrap_or(base);
        return stage
            .iter()
            .map(|r| r - base)
            .filter(|&o| o > 0 && last + o < gpus)
            .collect();
    }
    let group: Vec<u32> = s
        .comm_ranks(base, comm)
        .into_iter()
        .filter(|r| stage.contains(r))
        .collect();
    let mut covered = BTreeSet::new();
    let mut offsets = Vec::new();
    for &r in &stage {
        let o = r - base;
        let fits = |g: &u32| stage.contains(&(g + o)) && !covered.contains(&(g + o));
        if group.iter().all(fits) {
            covered.extend(group.iter().map(|g| g + o));
            if o > 0 {
                offsets.push(o);
            }
        }
    }
    offsets
}

/// Seconds of communication a step's collectives spent waiting on links they share with the
/// other groups of their stage, against running alone: summed over each stage GPU's
/// collectives (as many times as the step runs them), the largest over the stages.
pub fn sharing_seconds(s: &TrainingConfig, uses: &[CommUse]) -> f64 {
    let mut by_stage: std::collections::BTreeMap<u32, f64> = std::collections::BTreeMap::new();
    for u in uses {
        let extra = if s.concurrent_groups(u.base, u.comm).is_empty() {
            0.0
        } else {
            u.seconds - s.collective_seconds(u.base, u.comm, u.op, u.bytes, s.tier)
        };
        *by_stage.entry(u.base).or_insert(0.0) += u.count as f64 * extra.max(0.0);
    }
    by_stage.values().copied().fold(0.0, f64::max)
}

/// Bytes each link (by edge index) carries over one step of `s` whose stage GPUs ran `uses`.
pub fn link_bytes(s: &TrainingConfig, uses: &[CommUse]) -> Vec<f64> {
    let mut total = vec![0.0; s.topology.graph.edge_count()];
    for u in uses {
        let offsets = offsets(s, u.base, u.comm);
        let bytes = s
            .collective_cost(u.base, u.comm, u.op, u.bytes, s.tier, &offsets, true)
            .link_bytes;
        for (t, b) in total.iter_mut().zip(bytes) {
            *t += u.count as f64 * b;
        }
    }
    total
}

/// What each collective and send of the step loads on the links between servers while it runs
/// at its price (`exec::LinkLoads`): its bytes there beside the stage's other groups, over its
/// seconds times the link's effective capacity. Links inside a server are left out: a server
/// runs one job, and those are priced beside their peers already.
pub fn link_loads(
    s: &TrainingConfig,
    ops: usize,
    uses: &[CommUse],
    collectives: &[super::step::Collective],
) -> LinkLoads {
    let topo = &s.topology;
    let capacity = capacities(topo, &Efficiency::DEFAULT, None);
    let between: Vec<bool> = topo
        .graph
        .edge_weights()
        .map(|l| matches!(l.kind, LinkKind::Network | LinkKind::Wan))
        .collect();
    let mut loads = LinkLoads::new(ops);
    let entries: Vec<u32> = uses
        .iter()
        .map(|u| {
            let offsets = s.concurrent_groups(u.base, u.comm);
            let bytes = s
                .collective_cost(u.base, u.comm, u.op, u.bytes, s.tier, &offsets, true)
                .link_bytes;
            let seconds = u.seconds.max(1e-12);
            loads.add(
                bytes
                    .iter()
                    .enumerate()
                    .filter(|(l, _)| between[*l])
                    .map(|(l, &b)| (l as u32, b / (seconds * capacity[l]))),
            )
        })
        .collect();
    for &(op, _, _, priced) in collectives {
        if let Some(&e) = entries.get(priced as usize) {
            loads.set(op, e);
        }
    }
    loads
}
