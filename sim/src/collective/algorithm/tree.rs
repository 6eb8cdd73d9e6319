//! Double binary trees (NCCL's tree algorithm) for all-reduce.
//!
//! Inside a node the ranks form a chain; across nodes two binary trees over the nodes, the second
//! the mirror of the first, so that every node is a leaf in one tree and interior in the other.
//! Channel c uses local index c as the node's tree vertex and carries S/C; channels alternate
//! between the two trees. The data is pipelined in chunks: in the steady state every tree and
//! chain edge carries one chunk upwards (reduce) and one downwards (broadcast) at each step, for
//! P + 2 x depth steps.

use super::ring::CHUNK_BYTES;
use crate::collective::group::Group;
use crate::collective::op::CollectiveOp;
use crate::collective::schedule::{Schedule, Transfer};

/// Parent of position i in a binary tree of n positions numbered in heap order, mirrored when
/// `mirror` (position i stands for n - 1 - i).
pub(super) fn parent(i: usize, n: usize, mirror: bool) -> Option<usize> {
    let at = if mirror { n - 1 - i } else { i };
    if at == 0 {
        return None;
    }
    let p = (at - 1) / 2;
    Some(if mirror { n - 1 - p } else { p })
}

/// The hops a chunk travels up to the root and back down: along its node's chain, then from the
/// deepest node of channel 0's tree to its root (one chain through the group when there are no
/// per-node trees).
fn path(group: &Group, nodes: &[(u32, Vec<u32>)], channels: usize) -> Vec<(u32, u32)> {
    let mut up: Vec<(u32, u32)> = Vec::new();
    if channels == 1 {
        up.extend(group.ranks.windows(2).map(|w| (w[0], w[1])));
    } else {
        let local = &nodes[0].1;
        up.extend(local.windows(2).rev().map(|w| (w[1], w[0])));
        let mut at = nodes.len() - 1;
        while let Some(p) = parent(at, nodes.len(), false) {
            up.push((nodes[at].1[0], nodes[p].1[0]));
            at = p;
        }
    }
    let down: Vec<(u32, u32)> = up.iter().rev().map(|&(a, b)| (b, a)).collect();
    up.into_iter().chain(down).collect()
}

pub fn lower(op: CollectiveOp, group: &Group, bytes: f64) -> Option<Schedule> {
    if op != CollectiveOp::AllReduce {
        return None;
    }
    let nodes = group.by_node();
    let per = group.regular().unwrap_or(1) as usize;
    let channels = if nodes.len() > 1 && group.regular().is_some() {
        per
    } else {
        1
    };
    let per_channel = bytes / channels as f64;
    let chunks = (per_channel / CHUNK_BYTES).ceil().max(1.0);
    let chunk = per_channel / chunks;
    let mut transfers = Vec::new();
    let mut both = |a: u32, b: u32| {
        transfers.push(Transfer::gpus(a, b, chunk));
        transfers.push(Transfer::gpus(b, a, chunk));
    };
    let mut depth = 0usize;
    for c in 0..channels {
        if channels == 1 {
            // One chain through the whole group when it does not split evenly into nodes.
            for w in group.ranks.windows(2) {
                both(w[0], w[1]);
            }
            depth = group.ranks.len() - 1;
            continue;
        }
        for (_, local) in &nodes {
            // The chain starts at the channel's tree vertex.
            let order: Vec<u32> = local[c..].iter().chain(&local[..c]).copied().collect();
            for w in order.windows(2) {
                both(w[0], w[1]);
            }
        }
        let mirror = c % 2 == 1;
        for (i, (_, local)) in nodes.iter().enumerate() {
            if let Some(p) = parent(i, nodes.len(), mirror) {
                both(local[c], nodes[p].1[c]);
            }
        }
        let tree_depth = (usize::BITS - nodes.len().leading_zeros()) as usize - 1;
        depth = tree_depth + per - 1;
    }
    let mut s = Schedule::default();
    s.push_pipelined(
        "tree step",
        transfers,
        chunks as u64 + 2 * depth as u64,
        path(group, &nodes, channels),
    );
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrored_trees_swap_leaves_and_interiors() {
        let n = 7;
        let interior = |mirror| {
            (0..n)
                .filter(|&i| (0..n).any(|j| parent(j, n, mirror) == Some(i)))
                .collect::<Vec<_>>()
        };
        let a = interior(false);
        let b = interior(true);
        assert!(a.iter().all(|i| !b.contains(i)), "{a:?} {b:?}");
    }

    #[test]
    fn every_node_but_the_root_has_one_parent() {
        for mirror in [false, true] {
            let roots = (0..16).filter(|&i| parent(i, 16, mirror).is_none()).count();
            assert_eq!(roots, 1);
        }
    }
}
