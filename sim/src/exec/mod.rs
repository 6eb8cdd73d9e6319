//! Execution: runs graphs of operations on the engine and records what ran when.

pub mod counter;
pub mod executor;
pub mod graph;
pub mod timeline;

pub use counter::Counter;
pub use executor::execute;
pub use graph::{Contention, Graph, Lane, LaneId, LaneUse, Op, OpId, OpKind};
pub use timeline::Timeline;
