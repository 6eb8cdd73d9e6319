//! NVLS tree (NCCL's NVLSTree): in-switch reduction inside each server, a double binary tree
//! between servers, all-reduce only, on servers whose NVSwitch reduces (Hopper and later).
//!
//! Each server's NVSwitch reduces the GPUs' data (`nvls`: every GPU sends S plus its share S/g
//! and receives its share plus S, S (1 + 1/g) each way); local GPU c then carries the server's
//! share c (S/g) through the servers' trees over its own NIC (its rail): two binary trees, the
//! second the mirror of the first, each with half the share, reduced up to the root and
//! broadcast back down; the switch multicasts the result. NCCL pipelines all of it, so the
//! schedule is one phase in which every transfer runs at once (the slowest path bounds the
//! rate) and a chunk's trip (through the switch, up the tree and back down) pays its hops'
//! latencies once. On two servers each tree is one edge, used in both directions, so a server's
//! NICs carry S/g each way: twice the bus bandwidth a ring gets from the same NICs.

use super::tree::parent;
use crate::collective::group::Group;
use crate::collective::op::CollectiveOp;
use crate::collective::schedule::{Endpoint, Phase, Schedule, Transfer};

pub fn lower(op: CollectiveOp, group: &Group, bytes: f64) -> Option<Schedule> {
    let nodes = group.by_node();
    let per = group.regular()? as usize;
    if op != CollectiveOp::AllReduce || nodes.len() < 2 || per < 2 {
        return None;
    }
    let g = per as f64;
    let each = bytes * (1.0 + 1.0 / g);
    let half = bytes / g / 2.0;
    let mut transfers = Vec::new();
    for (_, local) in &nodes {
        let switch = Endpoint::NodeSwitch(group.node_of(local[0]));
        for &r in local {
            let gpu = Endpoint::Gpu(r);
            transfers.push(Transfer {
                src: gpu,
                dst: switch,
                bytes: each,
            });
            transfers.push(Transfer {
                src: switch,
                dst: gpu,
                bytes: each,
            });
        }
    }
    for c in 0..per {
        for mirror in [false, true] {
            for i in 0..nodes.len() {
                if let Some(p) = parent(i, nodes.len(), mirror) {
                    let (a, b) = (nodes[i].1[c], nodes[p].1[c]);
                    transfers.push(Transfer::gpus(a, b, half));
                    transfers.push(Transfer::gpus(b, a, half));
                }
            }
        }
    }
    // A chunk's trip, as NCCL's tuning model prices it: through the switch once, up channel
    // 0's tree to its root and back down.
    let first = nodes[0].1[0];
    let switch = Endpoint::NodeSwitch(group.node_of(first));
    let mut up = Vec::new();
    let mut at = nodes.len() - 1;
    while let Some(p) = parent(at, nodes.len(), false) {
        up.push((Endpoint::Gpu(nodes[at].1[0]), Endpoint::Gpu(nodes[p].1[0])));
        at = p;
    }
    let mut path = vec![(Endpoint::Gpu(first), switch)];
    path.extend(up.iter().copied());
    path.extend(up.iter().rev().map(|&(a, b)| (b, a)));
    Some(Schedule {
        phases: vec![Phase {
            label: "nvls tree",
            transfers,
            repeat: 1,
            path,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_to_all_reduce_over_several_servers_only() {
        assert!(lower(CollectiveOp::AllReduce, &Group::first(8, 8), 1e6).is_none());
        assert!(lower(CollectiveOp::AllGather, &Group::first(16, 8), 1e6).is_none());
        assert!(lower(CollectiveOp::AllReduce, &Group::first(16, 8), 1e6).is_some());
    }

    /// Each server's NICs carry S/g per GPU each way between two servers; the switch links
    /// S (1 + 1/g).
    #[test]
    fn two_servers_exchange_each_share_once_each_way() {
        let s = lower(CollectiveOp::AllReduce, &Group::first(16, 8), 8e6).unwrap();
        let phase = &s.phases[0];
        let between: f64 = phase
            .transfers
            .iter()
            .filter(|t| matches!((t.src, t.dst), (Endpoint::Gpu(a), Endpoint::Gpu(b)) if a / 8 == 0 && b / 8 == 1))
            .map(|t| t.bytes)
            .sum();
        assert!((between - 8e6).abs() < 1e-6, "{between}");
        let into_switch: f64 = phase
            .transfers
            .iter()
            .filter(|t| t.src == Endpoint::Gpu(3))
            .filter(|t| matches!(t.dst, Endpoint::NodeSwitch(_)))
            .map(|t| t.bytes)
            .sum();
        assert!((into_switch - 8e6 * 9.0 / 8.0).abs() < 1e-6);
    }
}
