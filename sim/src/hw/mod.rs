//! Hardware: the GPU catalog, numeric formats, and the cost of compute on one GPU.

pub mod dtype;
pub mod gpu;
pub mod roofline;

pub use dtype::Dtype;
pub use gpu::{GpuSpec, IntraLinkKind};
pub use roofline::{ComputeModel, ComputeTier, Efficiency, Kernel, KernelCost};
