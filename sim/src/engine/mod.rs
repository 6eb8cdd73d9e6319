//! The discrete-event engine: integer time, an event queue ordered by (time, insertion sequence),
//! named random streams, and the [`Process`] seam that workloads implement.
//!
//! It knows nothing of GPUs, links or models. It does no I/O, reads no wall clock and starts no
//! threads: the same process and seed give the same sequence of events on every machine.

mod queue;
mod rng;
mod simulation;
mod time;

pub use queue::{EventId, EventQueue};
pub use rng::RngStreams;
pub use simulation::{Process, RunStats, Scheduler, Simulation};
pub use time::SimTime;
