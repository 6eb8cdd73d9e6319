//! Hardware: the GPU catalog, numeric formats, and the cost of compute on one GPU.

pub mod dtype;
pub mod gpu;

pub use dtype::Dtype;
pub use gpu::{GpuSpec, IntraLinkKind};
