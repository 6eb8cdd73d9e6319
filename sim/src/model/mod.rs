//! Model descriptions: transformer shapes and named presets.

pub mod preset;
pub mod transformer;

pub use transformer::Transformer;
