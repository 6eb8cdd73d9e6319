//! Model descriptions: transformer shapes (dense or mixture-of-experts), named presets, Hugging
//! Face `config.json` parsing (`[model]` is resolved by `scenario/lower/model.rs`, docs/MODELS.md).

pub(crate) mod dit;
pub mod dit_preset;
pub(crate) mod hf;
pub mod preset;
pub(crate) mod transformer;

pub use transformer::{Activation, Mla, Moe, Transformer};
