//! In-switch reduction (NVLink SHARP, NCCL's NVLS): the NVSwitch adds up the GPUs' data.
//!
//! Each GPU's share of the result (S/n) is read through the switch with a reducing load, which
//! pulls that share from every GPU, and written back through the switch with a multicast store.
//! In a pipelined steady state every GPU sends S (its data, to all the reducing loads) plus S/n
//! (its reduced share) to the switch and receives S/n plus S (every share, by multicast):
//! S (1 + 1/n) each way, once, instead of a ring's 2(n-1)/n S over 2(n-1) steps.
//! Defined inside one NVSwitch domain (one node).

use crate::collective::group::Group;
use crate::collective::op::CollectiveOp;
use crate::collective::schedule::{Endpoint, Schedule, Transfer};

pub fn lower(op: CollectiveOp, group: &Group, bytes: f64) -> Option<Schedule> {
    if op != CollectiveOp::AllReduce || group.by_node().len() != 1 {
        return None;
    }
    let n = group.size() as f64;
    let each = bytes * (1.0 + 1.0 / n);
    let node = group.node_of(group.ranks[0]);
    let transfers = group
        .ranks
        .iter()
        .flat_map(|&r| {
            [
                Transfer {
                    src: Endpoint::Gpu(r),
                    dst: Endpoint::NodeSwitch(node),
                    bytes: each,
                },
                Transfer {
                    src: Endpoint::NodeSwitch(node),
                    dst: Endpoint::Gpu(r),
                    bytes: each,
                },
            ]
        })
        .collect();
    let mut s = Schedule::default();
    s.push("in-switch reduction", transfers, 1);
    Some(s)
}
