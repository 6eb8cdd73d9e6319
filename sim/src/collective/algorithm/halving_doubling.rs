//! Recursive halving and doubling (Rabenseifner): reduce-scatter by exchanging halves with
//! partners at distance 1, 2, 4, ... (the data halving each step), all-gather by the reverse.
//! log2(n) steps each way, so latency grows slowly with n; needs a power-of-two group.

use crate::collective::group::Group;
use crate::collective::op::CollectiveOp;
use crate::collective::schedule::{Schedule, Transfer};

fn exchange(group: &Group, distance: usize, bytes: f64) -> Vec<Transfer> {
    let r = &group.ranks;
    (0..r.len())
        .map(|i| Transfer::gpus(r[i], r[i ^ distance], bytes))
        .collect()
}

pub fn lower(op: CollectiveOp, group: &Group, bytes: f64) -> Option<Schedule> {
    let n = group.ranks.len();
    if !n.is_power_of_two() || n < 2 {
        return None;
    }
    let levels = n.trailing_zeros() as usize;
    let mut s = Schedule::default();
    let scatter = |s: &mut Schedule| {
        for k in 0..levels {
            s.push(
                "halving step",
                exchange(group, 1 << k, bytes / (2 << k) as f64),
                1,
            );
        }
    };
    let gather = |s: &mut Schedule| {
        for k in (0..levels).rev() {
            s.push(
                "doubling step",
                exchange(group, 1 << k, bytes / (2 << k) as f64),
                1,
            );
        }
    };
    match op {
        CollectiveOp::AllReduce => {
            scatter(&mut s);
            gather(&mut s);
        }
        CollectiveOp::ReduceScatter => scatter(&mut s),
        CollectiveOp::AllGather => gather(&mut s),
        _ => return None,
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_the_same_bytes_as_a_ring_in_log_steps() {
        let g = Group::first(16, 8);
        let s = lower(CollectiveOp::AllReduce, &g, 1.6e7).unwrap();
        assert_eq!(s.steps(), 8);
        let per_rank = s.bytes() / 16.0;
        assert!((per_rank - 2.0 * 15.0 / 16.0 * 1.6e7).abs() < 1.0);
        assert!(lower(CollectiveOp::AllReduce, &Group::first(12, 8), 1.0).is_none());
    }
}
