//! Hardware: the GPU catalog and accelerators defined by their own figures, numeric formats, and the cost of compute on one GPU (roofline, and
//! calibration profiles of measured kernel times).

pub mod accelerator;
pub mod attention_kernel;
pub mod attention_series;
pub(crate) mod clock;
pub mod dtype;
pub mod gpu;
pub(crate) mod host;
pub mod kernel;
pub(crate) mod power;
pub mod profile;
pub mod roofline;

pub use dtype::Dtype;
pub use gpu::{GpuSpec, IntraLinkKind};
pub use kernel::{ElementwiseOp, Kernel, Pass};
pub use profile::{Profile, ProfileError};
pub use roofline::{ComputeModel, ComputeTier, Efficiency, KernelCost, ProfileMismatch};
