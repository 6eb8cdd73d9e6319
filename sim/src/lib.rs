//! clustersim: a discrete-event simulator of GPU clusters running large-model work.
//!
//! See ARCHITECTURE.md at the repository root for the map of modules and their invariants.

pub mod engine;
pub mod hw;
pub mod model;
pub mod scenario;
