//! What a calibration run measures and what drives it: the operations (GEMMs, transfers,
//! launches), a measurement's record, and the [`Bench`] a GPU implements (`gpu`), or a fake one
//! in the tests.

use super::plan;
use super::stats::Measurement;
use clustersim::hw::Dtype;

/// A bandwidth-bound operation measured over buffer sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transfer {
    /// `cuMemcpyDtoDAsync` between two buffers on the GPU.
    DeviceCopy,
    /// `c = a + b` over fp32, one float4 per thread (a kernel of the PTX module).
    Elementwise,
    /// `cuMemcpyHtoDAsync` from pinned (page-locked) host memory.
    HostToDevice,
    /// `cuMemcpyDtoHAsync` into pinned host memory.
    DeviceToHost,
}

impl Transfer {
    /// Short name, as the CSV and JSON write it.
    pub fn name(self) -> &'static str {
        match self {
            Transfer::DeviceCopy => "device_copy",
            Transfer::Elementwise => "elementwise_add",
            Transfer::HostToDevice => "host_to_device",
            Transfer::DeviceToHost => "device_to_host",
        }
    }

    /// What it is, for people.
    pub fn label(self) -> &'static str {
        match self {
            Transfer::DeviceCopy => "device-to-device copy",
            Transfer::Elementwise => "elementwise add (fp32)",
            Transfer::HostToDevice => "host-to-device copy (pinned)",
            Transfer::DeviceToHost => "device-to-host copy (pinned)",
        }
    }

    /// Bytes moved for buffers of `size` bytes: read plus written in device memory for the
    /// on-device kinds (a copy reads and writes `size`; the add reads two and writes one), the
    /// bytes crossing the link for host copies.
    pub fn bytes_moved(self, size: u64) -> u64 {
        match self {
            Transfer::DeviceCopy => 2 * size,
            Transfer::Elementwise => 3 * size,
            Transfer::HostToDevice | Transfer::DeviceToHost => size,
        }
    }
}

/// One transfer kind and its buffer sizes (bytes), in order.
#[derive(Clone, Debug, PartialEq)]
pub struct TransferSet {
    pub kind: Transfer,
    pub sizes: Vec<u64>,
}

impl TransferSet {
    pub fn new(kind: Transfer, sizes: Vec<u64>) -> Self {
        TransferSet { kind, sizes }
    }
}

/// The three launch-overhead figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchKind {
    /// GPU time per empty kernel in a long back-to-back sequence that the host enqueued ahead
    /// (events around the sequence, divided by its length).
    BackToBack,
    /// Host (CPU) time to submit one launch, in the same sequences (wall clock).
    HostSubmit,
    /// Events around one empty kernel launched alone: what a lone kernel costs, submission
    /// latency included.
    Single,
}

impl LaunchKind {
    pub fn name(self) -> &'static str {
        match self {
            LaunchKind::BackToBack => "launch_back_to_back",
            LaunchKind::HostSubmit => "launch_host_submit",
            LaunchKind::Single => "launch_single",
        }
    }
}

/// What one measurement timed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// C (m x n) = A (m x k) B (k x n), B being the weight (see [`super::gpu`] for the layout).
    Gemm {
        dtype: Dtype,
        m: u64,
        n: u64,
        k: u64,
    },
    /// A transfer over buffers of `size` bytes.
    Transfer {
        kind: Transfer,
        size: u64,
    },
    Launch(LaunchKind),
}

impl Op {
    /// Floating-point operations per call (a multiply-add counts two).
    pub fn flops(&self) -> f64 {
        match *self {
            Op::Gemm { m, n, k, .. } => 2.0 * m as f64 * n as f64 * k as f64,
            Op::Transfer {
                kind: Transfer::Elementwise,
                size,
            } => (size / 4) as f64,
            _ => 0.0,
        }
    }

    /// Bytes read and written per call (for a GEMM, each operand once).
    pub fn bytes(&self) -> f64 {
        match *self {
            Op::Gemm { dtype, m, n, k } => plan::gemm_bytes(dtype, m, n, k) as f64,
            Op::Transfer { kind, size } => kind.bytes_moved(size) as f64,
            Op::Launch(_) => 0.0,
        }
    }

    /// The section it belongs to, as the CSV writes it ("gemm", "device_copy", ...).
    pub fn section(&self) -> &'static str {
        match self {
            Op::Gemm { .. } => "gemm",
            Op::Transfer { kind, .. } => kind.name(),
            Op::Launch(kind) => kind.name(),
        }
    }
}

/// One measured point.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub op: Op,
    pub measurement: Measurement,
}

/// A failed call: `fatal` when the GPU can no longer be trusted (a driver error other than
/// running out of memory), so that the run stops; otherwise only that point or shape is skipped.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchError {
    pub fatal: bool,
    pub message: String,
}

impl BenchError {
    pub fn fatal(message: impl Into<String>) -> Self {
        BenchError {
            fatal: true,
            message: message.into(),
        }
    }

    pub fn skip(message: impl Into<String>) -> Self {
        BenchError {
            fatal: false,
            message: message.into(),
        }
    }
}

/// What the run needs from a GPU. Times are seconds of GPU time between two CUDA events unless
/// said otherwise; `calls` invocations run back to back between the events.
pub trait Bench {
    /// Ok when GEMMs in `dtype` can be measured, else why not.
    fn gemm_support(&self, dtype: Dtype) -> Result<(), String>;
    /// Ok when `kind` can be measured, else why not.
    fn transfer_support(&self, kind: Transfer) -> Result<(), String>;
    /// Ok when launch overhead can be measured, else why not.
    fn launch_support(&self) -> Result<(), String>;
    /// Allocates and fills operands for GEMMs of weight shape (n, k) with up to `m_max` rows.
    fn prepare_gemm(&mut self, dtype: Dtype, n: u64, k: u64, m_max: u64) -> Result<(), BenchError>;
    /// Times `calls` GEMMs of `m` rows on the prepared operands.
    fn time_gemm(&mut self, m: u64, calls: u32) -> Result<f64, BenchError>;
    /// Allocates the buffers of one transfer of `size` bytes.
    fn prepare_transfer(&mut self, kind: Transfer, size: u64) -> Result<(), BenchError>;
    /// Times `calls` of the prepared transfer.
    fn time_transfer(&mut self, calls: u32) -> Result<f64, BenchError>;
    /// Times `calls` empty kernels enqueued ahead: (GPU seconds, host seconds spent submitting).
    fn time_launches(&mut self, calls: u32) -> Result<(f64, f64), BenchError>;
    /// Times one empty kernel between two events, nothing enqueued ahead.
    fn time_single_launch(&mut self) -> Result<f64, BenchError>;
    /// Frees what the last prepare allocated.
    fn release(&mut self);
}
