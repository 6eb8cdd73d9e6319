//! Collectives: how all-reduce and its relatives turn into transfers, and into time on the network.
//!
//! `op` names the operations and nccl-tests' bandwidth definitions; `group` the communicator;
//! `algorithm/` lowers an operation to a `schedule` of point-to-point transfers in phases;
//! `cost` prices a schedule on a topology with either network tier, with optional `compression`
//! (its ratio and codec time, added per step or pipelined with the transfers), and adds the
//! local pass over one chunk that ends a ring collective (`buffer_copy`).

pub mod algorithm;
pub mod buffer_copy;
pub mod compression;
pub mod cost;
pub mod group;
pub mod op;
pub mod protocol;
pub mod schedule;

pub use algorithm::Algorithm;
pub use group::Group;
pub use op::CollectiveOp;
pub use protocol::Protocol;
pub use schedule::{Endpoint, Phase, Schedule, Transfer};
