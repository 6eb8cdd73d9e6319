//! Execution: runs graphs of operations on the engine and records what ran when.

pub(crate) mod chain;
pub(crate) mod contention;
pub(crate) mod counter;
pub(crate) mod executor;
pub(crate) mod fabric;
pub(crate) mod graph;
pub(crate) mod guest;
pub(crate) mod jobs;
pub(crate) mod replicas;
pub(crate) mod timeline;

pub use chain::{ChainId, Part, placed};
pub use counter::Counter;
pub use executor::{execute, execute_replicas};
pub use fabric::LinkLoads;
pub use graph::{Contention, Graph, Lane, LaneId, LaneUse, Op, OpId, OpKind};
pub use guest::{Guest, GuestCtx};
pub use jobs::{GuestBytes, Job, JobRun, execute_jobs};
pub use replicas::{Groups, Jitter, NO_SYNC, Replicas, Waits};
pub use timeline::Timeline;
