//! Reports: the JSON every run prints, its readable summary, and the traces it can write.

pub mod any;
pub mod cluster;
pub mod collective;
pub mod diffusion;
pub mod federated;
pub mod kernels;
pub(crate) mod links;
pub mod percentiles;
pub mod serving;
pub mod summary;
pub mod trace;
pub mod training;
pub mod typed;

pub use trace::write_chrome_trace;
