//! Two-dimensional all-reduce on a torus of single-chip nodes (TPU pods): the group's ranks in
//! each row of the torus (the first dimension: nodes `k1 r` to `k1 (r + 1) - 1`) reduce-scatter
//! around their row, the ranks holding the same shard in every row all-reduce it around their
//! column, and the rows all-gather. Every ring runs both ways at once with half the data (each
//! chip drives all four of its links), so the step counts are 2(a - 1) along rows and 2(b - 1)
//! along columns for a x b ranks, instead of a flat ring's 2(ab - 1): on 4,096 chips, 316 steps
//! instead of 8,190. Applies to all-reduce over a group with the same number of ranks (at least 2)
//! in each of at least 2 torus rows, on a torus with one GPU per node (with several, the node's
//! own links come first: the hierarchical algorithm). Kumar et al. (MLSys 2021) describe the
//! TPU's 2-D all-reduce this way; ignored: their further pipelining across dimensions.

use super::hierarchical::two_level;
use crate::collective::group::Group;
use crate::collective::op::CollectiveOp;
use crate::collective::schedule::Schedule;
use std::collections::BTreeMap;

/// The schedule, or None where it does not apply. `row` is the torus's first dimension, in nodes
/// (None: not a torus of single-GPU nodes).
pub fn lower(op: CollectiveOp, group: &Group, bytes: f64, row: Option<u32>) -> Option<Schedule> {
    let row = row?;
    if op != CollectiveOp::AllReduce || group.gpus_per_node != 1 || row < 2 {
        return None;
    }
    let mut rows: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for &r in &group.ranks {
        rows.entry(r / row).or_default().push(r);
    }
    let rows: Vec<Vec<u32>> = rows.into_values().collect();
    let a = rows[0].len();
    if rows.len() < 2 || a < 2 || rows.iter().any(|r| r.len() != a) {
        return None;
    }
    Some(two_level(
        &rows,
        bytes,
        [
            "torus row reduce-scatter",
            "torus column all-reduce",
            "torus row all-gather",
        ],
        true,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torus_all_reduce_takes_row_and_column_steps() {
        let group = Group::new((0..4096).collect(), 1);
        let s = lower(CollectiveOp::AllReduce, &group, 4096.0 * 1024.0, Some(128)).unwrap();
        // 2 x 127 steps along rows of 128, 2 x 31 along columns of 32.
        assert_eq!(s.steps(), 2 * 127 + 2 * 31);
        // Every rank sends 2(a-1)/a x S along its row and 2(b-1)/b x S/a along its column.
        let per_rank = s.bytes() / 4096.0;
        let expected = 4096.0 * 1024.0 * (2.0 * 127.0 / 128.0 + 2.0 * 31.0 / 32.0 / 128.0);
        assert!(
            (per_rank / expected - 1.0).abs() < 1e-9,
            "{per_rank} vs {expected}"
        );
        // Both directions of each ring at once.
        let first = &s.phases[0].transfers;
        assert!(
            first
                .iter()
                .any(|t| t.src == crate::collective::schedule::Endpoint::Gpu(1)
                    && t.dst == crate::collective::schedule::Endpoint::Gpu(0))
        );
    }

    #[test]
    fn it_needs_a_torus_of_single_chips_and_whole_rows() {
        let op = CollectiveOp::AllReduce;
        let group = Group::new((0..64).collect(), 1);
        assert!(lower(op, &group, 1e6, None).is_none());
        assert!(lower(CollectiveOp::AllGather, &group, 1e6, Some(8)).is_none());
        assert!(lower(op, &Group::new((0..64).collect(), 8), 1e6, Some(8)).is_none());
        // One row only.
        assert!(lower(op, &Group::new((0..8).collect(), 1), 1e6, Some(8)).is_none());
        // Strided (every fourth chip, as data parallelism beside tp = 4): rows of 2.
        let strided = Group::new((0..64).step_by(4).collect(), 1);
        assert_eq!(
            lower(op, &strided, 1e6, Some(8)).unwrap().steps(),
            2 + 2 * 7
        );
    }
}
