//! `[kernels]`: many tiny kernel launches against the same work consolidated into fewer launches
//! (`kind = "kernels"`), as dynamic parallelism on GPUs launches child grids from parent threads.

use super::quantity::{Bytes, Duration};
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelsSection {
    /// Child grids the naive version launches (one per parent thread that has work).
    pub children: u64,
    /// Thread blocks in each child grid.
    pub blocks: u64,
    /// Device memory each child reads and writes.
    pub bytes: Bytes,
    /// Arithmetic each child does, FLOPs (default 0; hidden under its memory traffic).
    pub flops: Option<f64>,
    /// Children merged into one launch: 1 is none, `children` one grid for all (e.g. 32 for a
    /// warp's children, a block's thread count for a block's).
    pub consolidate: u64,
    /// Time each launch costs before its work (default: the roofline's kernel overhead).
    pub launch_overhead: Option<Duration>,
}
