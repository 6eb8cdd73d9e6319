//! Direct exchanges: all-to-all (every rank sends S/n to every other, all at once) and
//! send/recv (the group's first rank sends S to its second).

use crate::collective::group::Group;
use crate::collective::op::CollectiveOp;
use crate::collective::schedule::{Schedule, Transfer};

/// All-to-all phases larger than this many flows are refused (a 2,048-rank all-to-all has four
/// million): expert-parallel groups are far smaller.
pub const MAX_FLOWS: usize = 4_000_000;

pub fn lower(op: CollectiveOp, group: &Group, bytes: f64) -> Option<Schedule> {
    let r = &group.ranks;
    let n = r.len();
    let mut s = Schedule::default();
    match op {
        CollectiveOp::AllToAll => {
            if n * (n - 1) > MAX_FLOWS {
                return None;
            }
            let each = bytes / n as f64;
            let transfers = (0..n)
                .flat_map(|i| {
                    (0..n)
                        .filter(move |&j| j != i)
                        .map(move |j| Transfer::gpus(r[i], r[j], each))
                })
                .collect();
            s.push("all-to-all", transfers, 1);
        }
        CollectiveOp::SendRecv => {
            if n < 2 {
                return None;
            }
            s.push("send", vec![Transfer::gpus(r[0], r[1], bytes)], 1);
        }
        _ => return None,
    }
    Some(s)
}
