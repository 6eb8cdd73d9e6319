//! Model descriptions: transformer shapes (dense or mixture-of-experts), named presets, Hugging
//! Face `config.json` import, and the resolution of a scenario's `[model]` (docs/MODELS.md).

pub mod dit;
pub mod dit_preset;
mod hf;
pub mod preset;
pub mod resolve;
pub mod transformer;

pub use resolve::{ModelError, Resolved, resolve, resolve_noted, resolve_scenario};
pub use transformer::{Activation, Mla, Moe, Transformer};
