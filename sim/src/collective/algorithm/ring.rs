//! Rings, as NCCL builds them: one ring per channel, entering and leaving each node on the same
//! rail, so that the node-to-node hops of channel c all use the NIC of the same local GPU.
//!
//! With g ranks on each of N nodes, channel c visits node k starting at local index (c - k) mod g
//! and leaves it from the local index just before, where the next node's visit starts: every
//! inter-node hop stays on one rail, and the g channels use all g rails at once. On fully meshed
//! nodes each channel crosses a node by its own path of [`mesh_rings::paths`], and a group on one
//! such node takes the rings of [`mesh_rings::cover`], so that the channels share out the links;
//! on one node of any other kind, or with unequal ranks per node, a single ring in group order.
//!
//! Steps (S = nccl-tests size, n ranks, C channels, each step moves S/(nC) per ring hop):
//! all-reduce 2(n-1) steps (reduce-scatter then all-gather), reduce-scatter and all-gather n-1.
//! Broadcast and reduce pipeline S in chunks down the ring as a chain: P + n - 2 steps of S/(CP).

use super::mesh_rings;
use crate::collective::group::Group;
use crate::collective::op::CollectiveOp;
use crate::collective::schedule::{Schedule, Transfer};

/// Size of a pipelined chunk for broadcast and reduce, bytes (NCCL's default chunk is of this order).
pub const CHUNK_BYTES: f64 = 512.0 * 1024.0;

/// The rings of a group, one per channel; `mesh`: its nodes are full meshes.
pub fn rings(group: &Group, mesh: bool) -> Vec<Vec<u32>> {
    let nodes = group.by_node();
    if mesh && nodes.len() == 1 {
        let r = &group.ranks;
        return mesh_rings::cover(r.len())
            .into_iter()
            .map(|ring| ring.into_iter().map(|i| r[i]).collect())
            .collect();
    }
    match group.regular() {
        Some(g) if nodes.len() > 1 && g > 1 => {
            // How a channel crosses a node from local index `entry` to `entry - 1`: in index
            // order, or on a full mesh by its own path, so that the channels share out the links.
            let paths = mesh.then(|| mesh_rings::paths(g as usize)).flatten();
            let walk = |entry: usize| -> Vec<usize> {
                match &paths {
                    Some(p) => p[entry].clone(),
                    None => (entry..g as usize).chain(0..entry).collect(),
                }
            };
            (0..g)
                .map(|c| {
                    nodes
                        .iter()
                        .enumerate()
                        .flat_map(|(k, (_, local))| {
                            let entry = (c as i64 - k as i64).rem_euclid(g as i64) as usize;
                            walk(entry).into_iter().map(|i| local[i])
                        })
                        .collect()
                })
                .collect()
        }
        _ => vec![group.ranks.clone()],
    }
}

/// Transfers of one ring step: every rank sends `bytes` to its successor on every ring.
pub fn step(rings: &[Vec<u32>], bytes: f64) -> Vec<Transfer> {
    rings
        .iter()
        .flat_map(|ring| {
            (0..ring.len()).map(move |i| Transfer::gpus(ring[i], ring[(i + 1) % ring.len()], bytes))
        })
        .collect()
}

/// Transfers of one pipelined chain step from the ring's first rank to its last.
fn chain(rings: &[Vec<u32>], bytes: f64, towards_root: bool) -> Vec<Transfer> {
    rings
        .iter()
        .flat_map(|ring| {
            ring.windows(2).map(move |w| {
                if towards_root {
                    Transfer::gpus(w[1], w[0], bytes)
                } else {
                    Transfer::gpus(w[0], w[1], bytes)
                }
            })
        })
        .collect()
}

/// The hops a chunk travels in `steps` steps around `ring` (or down it, as a chain).
fn around(ring: &[u32], steps: u64) -> Vec<(u32, u32)> {
    let n = ring.len();
    (0..steps as usize)
        .map(|i| (ring[i % n], ring[(i + 1) % n]))
        .collect()
}

pub fn lower(op: CollectiveOp, group: &Group, bytes: f64, mesh: bool) -> Option<Schedule> {
    let n = group.size() as u64;
    let rings = rings(group, mesh);
    let c = rings.len() as f64;
    let mut s = Schedule::default();
    match op {
        CollectiveOp::AllReduce => {
            s.push_pipelined(
                "ring step",
                step(&rings, bytes / (n as f64 * c)),
                2 * (n - 1),
                around(&rings[0], 2 * (n - 1)),
            );
        }
        CollectiveOp::ReduceScatter | CollectiveOp::AllGather => {
            s.push_pipelined(
                "ring step",
                step(&rings, bytes / (n as f64 * c)),
                n - 1,
                around(&rings[0], n - 1),
            );
        }
        CollectiveOp::Broadcast | CollectiveOp::Reduce => {
            let chunks = (bytes / c / CHUNK_BYTES).ceil().max(1.0);
            let transfers = chain(&rings, bytes / c / chunks, op == CollectiveOp::Reduce);
            s.push_pipelined(
                "chain step",
                transfers,
                chunks as u64 + n - 2,
                around(&rings[0], n - 1),
            );
        }
        CollectiveOp::AllToAll | CollectiveOp::SendRecv => return None,
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_stay_on_one_rail_between_nodes() {
        let group = Group::first(16, 8);
        let rings = rings(&group, false);
        assert_eq!(rings.len(), 8);
        for ring in &rings {
            let mut sorted = ring.clone();
            sorted.sort();
            assert_eq!(
                sorted,
                (0..16).collect::<Vec<_>>(),
                "a ring visits every rank once"
            );
            // The hop from node 0 to node 1 keeps the local index (the rail).
            let exit = ring[7];
            let entry = ring[8];
            assert_eq!(exit % 8, entry % 8);
        }
        // Different channels use different rails.
        let rails: Vec<u32> = rings.iter().map(|r| r[7] % 8).collect();
        let mut unique = rails.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 8);
    }

    #[test]
    fn on_meshed_nodes_the_channels_share_out_every_link_and_keep_their_rails() {
        let rings = rings(&Group::first(16, 8), true);
        assert_eq!(rings.len(), 8);
        let mut uses = std::collections::HashMap::new();
        for ring in &rings {
            for i in 0..16 {
                let (a, b) = (ring[i], ring[(i + 1) % 16]);
                if a / 8 == b / 8 {
                    *uses.entry((a, b)).or_insert(0) += 1;
                } else if i < 15 {
                    assert_eq!(a % 8, b % 8, "node to node, a channel stays on its rail");
                }
            }
        }
        // 2 nodes x 56 directed links, each carrying one channel.
        assert_eq!(uses.len(), 112);
        assert!(uses.values().all(|&u| u == 1));
    }

    #[test]
    fn all_reduce_moves_2_n_minus_1_over_n_of_the_data_per_rank() {
        let group = Group::first(8, 8);
        let s = lower(CollectiveOp::AllReduce, &group, 8e6, false).unwrap();
        assert_eq!(s.steps(), 14);
        let per_rank = s.bytes() / 8.0;
        assert!((per_rank - 2.0 * 7.0 / 8.0 * 8e6).abs() < 1e-3);
    }
}
