//! Collectives: how all-reduce and its relatives turn into transfers, and into time on the network.
//!
//! `op` names the operations and nccl-tests' bandwidth definitions; `group` the communicator;
//! `algorithm/` lowers an operation to a `schedule` of point-to-point transfers in phases;
//! `cost` prices a schedule on a topology with either network tier (each link's capacity built
//! once a collective, `capacities`), with optional `compression` (its ratio and codec time, added
//! per step or pipelined with the transfers), and adds the local pass over one chunk that ends a
//! ring collective (`buffer_copy`).

pub mod algorithm;
pub(crate) mod buffer_copy;
mod capacities;
pub(crate) mod compression;
pub mod cost;
pub(crate) mod group;
pub(crate) mod op;
pub(crate) mod protocol;
pub mod refusal;
mod routing;
pub(crate) mod schedule;

/// Thread blocks a collective kernel holds on each GPU while it runs (one per NCCL channel), which
/// the kernels beside it cannot use (`exec::Contention`), on servers whose GPUs talk over NVLink:
/// an H100's `ncclAllGather` beside a GEMM launches 24 (Nsight Systems trace in
/// "Compute-Communication Overlap Causes Severe GEMM Performance Degradation because of Tail
/// Effect", NVIDIA developer forums, 2025). At 24 of 132 SMs the kernels beside it take 1.22x as
/// long; Lee et al. ("Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed
/// Deep Learning", arXiv 2507.03114, 2025) measure an average compute slowdown of 18.9% (at most
/// 40%) under overlap on A100, H100, MI250 and MI210. Ignored: the collective's share of HBM
/// bandwidth, fewer channels on some paths (inter-node, point-to-point), and the tail a GEMM of
/// exactly one wave gets.
pub const COLLECTIVE_BLOCKS: u32 = 24;

/// Where PCIe joins a server's GPUs NCCL opens few channels (its logs on such servers list two
/// rings, "Channel 00/02" and "Channel 01/02"): the blocks a collective holds there.
pub const PCIE_COLLECTIVE_BLOCKS: u32 = 2;

/// The blocks a collective holds on each GPU of a server joined by `intra`.
pub fn collective_blocks(intra: crate::net::topology::IntraKind) -> u32 {
    use crate::net::topology::IntraKind;
    match intra {
        IntraKind::NvSwitch | IntraKind::NvLinkMesh => COLLECTIVE_BLOCKS,
        IntraKind::NvLinkPairs | IntraKind::Pcie => PCIE_COLLECTIVE_BLOCKS,
    }
}

pub use algorithm::Algorithm;
pub use group::Group;
pub use op::CollectiveOp;
pub use protocol::Protocol;
pub use refusal::Refusal;
pub use schedule::{Endpoint, Phase, Schedule, Transfer};
