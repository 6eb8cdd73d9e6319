//! Reports: the JSON every run prints, and the traces it can write.

pub(crate) mod links;
pub mod trace;

pub use trace::write_chrome_trace;
