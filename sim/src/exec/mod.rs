//! Execution: runs graphs of operations on the engine and records what ran when.

pub(crate) mod counter;
pub(crate) mod executor;
pub(crate) mod graph;
pub(crate) mod timeline;

pub use counter::Counter;
pub use executor::execute;
pub use graph::{Contention, Graph, Lane, LaneId, LaneUse, Op, OpId, OpKind};
pub use timeline::Timeline;
