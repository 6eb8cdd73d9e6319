//! Hierarchical all-reduce: reduce-scatter inside each node, all-reduce of each 1/g shard across
//! nodes among the ranks with the same local index (one rail each, all rails at once), then
//! all-gather inside each node. Inter-node traffic per rank is 2(N-1)/N x S/g instead of a flat
//! ring's 2(n-1)/n x S through one NIC per channel.

use super::ring;
use crate::collective::group::Group;
use crate::collective::op::CollectiveOp;
use crate::collective::schedule::Schedule;

pub fn lower(op: CollectiveOp, group: &Group, bytes: f64) -> Option<Schedule> {
    if op != CollectiveOp::AllReduce {
        return None;
    }
    let nodes = group.by_node();
    let g = group.regular()? as usize;
    let n_nodes = nodes.len();
    if n_nodes < 2 || g < 2 {
        return None;
    }
    let intra: Vec<Vec<u32>> = nodes.iter().map(|(_, l)| l.clone()).collect();
    let rails: Vec<Vec<u32>> = (0..g)
        .map(|i| nodes.iter().map(|(_, l)| l[i]).collect())
        .collect();
    let shard = bytes / g as f64;
    let mut s = Schedule::default();
    s.push(
        "intra-node reduce-scatter",
        ring::step(&intra, shard),
        g as u64 - 1,
    );
    s.push(
        "inter-node all-reduce",
        ring::step(&rails, shard / n_nodes as f64),
        2 * (n_nodes as u64 - 1),
    );
    s.push(
        "intra-node all-gather",
        ring::step(&intra, shard),
        g as u64 - 1,
    );
    Some(s)
}
