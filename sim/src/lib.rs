//! clustersim: a discrete-event simulator of GPU clusters running large-model work.
//!
//! The public API is what the front ends (the CLI, the viewer, the calibrator, scripts) need:
//! parsing a scenario ([`scenario`]), lowering it to plain configurations ([`scenario::lower`]),
//! running it ([`run()`]) and its report ([`report`]); the catalogs (`hw::gpu`, `model::preset`,
//! `model::dit_preset`, `net::topology::catalog`); the pricing a script may call alone (a kernel
//! on a GPU, `hw`; a collective on a topology, `collective::cost`); sweeps, plans, checks and
//! validation; [`panic_message()`] for a front end that catches a panic. Everything else is
//! `pub(crate)`. See ARCHITECTURE.md at the repository root for the map of modules and their
//! invariants.

pub mod check;
pub mod collective;
pub mod collective_bench;
pub mod engine;
pub mod exec;
pub mod files;
pub mod hw;
pub mod key_error;
mod layering;
pub mod model;
pub mod net;
mod panic_message;
pub mod plan;
pub mod quantity;
pub mod release;
pub mod report;
pub mod run;
pub mod scenario;
pub mod stats;
pub mod suggest;
pub mod sweep;
pub mod uncertainty;
pub mod validate;
pub mod workload;

pub use panic_message::panic_message;
pub use run::{RunOutput, run};
pub use scenario::Scenario;
