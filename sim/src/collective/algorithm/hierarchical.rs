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
    if nodes.len() < 2 || g < 2 {
        return None;
    }
    let intra: Vec<Vec<u32>> = nodes.iter().map(|(_, l)| l.clone()).collect();
    Some(two_level(
        &intra,
        bytes,
        [
            "intra-node reduce-scatter",
            "inter-node all-reduce",
            "intra-node all-gather",
        ],
        false,
    ))
}

/// An all-reduce over equal `inner` groups: a ring reduce-scatter inside each, a ring all-reduce
/// of each 1/g shard across the groups among the ranks with the same index (all at once), then a
/// ring all-gather inside each. `both_ways` runs every ring in both directions at once with half
/// the bytes each (full-duplex links, both directions driven). `labels` name the three phases.
pub fn two_level(
    inner: &[Vec<u32>],
    bytes: f64,
    labels: [&'static str; 3],
    both_ways: bool,
) -> Schedule {
    let g = inner[0].len();
    let outer: Vec<Vec<u32>> = (0..g)
        .map(|i| inner.iter().map(|l| l[i]).collect())
        .collect();
    let step = |rings: &[Vec<u32>], b: f64| {
        if both_ways {
            let reversed: Vec<Vec<u32>> = rings
                .iter()
                .map(|r| r.iter().rev().copied().collect())
                .collect();
            let mut t = ring::step(rings, b / 2.0);
            t.extend(ring::step(&reversed, b / 2.0));
            t
        } else {
            ring::step(rings, b)
        }
    };
    let shard = bytes / g as f64;
    let mut s = Schedule::default();
    s.push(labels[0], step(inner, shard), g as u64 - 1);
    s.push(
        labels[1],
        step(&outer, shard / inner.len() as f64),
        2 * (inner.len() as u64 - 1),
    );
    s.push(labels[2], step(inner, shard), g as u64 - 1);
    s
}
