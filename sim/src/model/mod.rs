//! Model descriptions: transformer shapes (dense or mixture-of-experts), named presets, Hugging
//! Face `config.json` parsing (`[model]` is resolved by `scenario/lower/model.rs`, docs/MODELS.md).

pub mod dit;
pub mod dit_preset;
pub mod hf;
pub mod preset;
pub mod transformer;

pub use transformer::{Activation, Mla, Moe, Transformer};
