//! The units of work a GPU runs, as the cost models see them: matrix products, fused attention,
//! streaming and elementwise kernels, with the FLOPs and bytes each does. What a kernel costs is
//! priced elsewhere (`hw::roofline`, `hw::profile`).

use super::dtype::Dtype;

/// A unit of work on one GPU.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Kernel {
    /// `batch` independent products of (m x k) by (k x n), inputs and output in `dtype`.
    Gemm {
        m: u64,
        n: u64,
        k: u64,
        batch: u64,
        dtype: Dtype,
    },
    /// Fused (flash) attention over `batch_heads` heads: queries of `q_len` against `kv_len` keys.
    /// The backward pass does 2.5 times the forward's matrix work (five products against two).
    Attention {
        batch_heads: u64,
        q_len: u64,
        kv_len: u64,
        head_dim: u64,
        causal: bool,
        backward: bool,
        dtype: Dtype,
    },
    /// Bandwidth-bound streaming work (a fused optimizer step, a copy) touching `bytes` of device
    /// memory, with `flops` of arithmetic that it hides under the memory traffic.
    Memory { bytes: f64, flops: f64 },
    /// A framework's elementwise kernel (normalisation, activation, rotary embedding, residual add,
    /// softmax cross-entropy): bandwidth-bound like `Memory`, at a lower achieved bandwidth.
    /// `op` and `backward` say which kind and pass, for calibration profiles that time each apart.
    Elementwise {
        op: ElementwiseOp,
        backward: bool,
        bytes: f64,
        flops: f64,
    },
}

/// Which pass of training a kernel belongs to (serving kernels are forward).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pass {
    Forward,
    Backward,
}

impl Pass {
    /// From a kernel's `backward` flag.
    pub fn of(backward: bool) -> Pass {
        if backward {
            Pass::Backward
        } else {
            Pass::Forward
        }
    }

    /// The name profiles use.
    pub fn name(self) -> &'static str {
        match self {
            Pass::Forward => "forward",
            Pass::Backward => "backward",
        }
    }
}

/// What a framework's elementwise kernel does. The roofline prices all alike; a calibration
/// profile may hold a measured curve for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElementwiseOp {
    /// Layer norm or RMS norm.
    Norm,
    /// A plain activation (GELU, ReLU, SiLU).
    Activation,
    /// A gated activation (SwiGLU, GeGLU): act(gate) x up.
    GatedActivation,
    /// A residual add.
    Add,
    /// Anything else (loss, embedding gradients, rotary embedding).
    Other,
}

impl ElementwiseOp {
    /// The name profiles use.
    pub fn name(self) -> &'static str {
        match self {
            ElementwiseOp::Norm => "norm",
            ElementwiseOp::Activation => "activation",
            ElementwiseOp::GatedActivation => "gated_activation",
            ElementwiseOp::Add => "add",
            ElementwiseOp::Other => "other",
        }
    }
}

impl Kernel {
    /// Floating-point operations the kernel performs (a multiply-add counts two).
    pub fn flops(&self) -> f64 {
        match *self {
            // In floating point: the products of large shapes pass 2^64.
            Kernel::Gemm { m, n, k, batch, .. } => {
                2.0 * m as f64 * n as f64 * k as f64 * batch as f64
            }
            Kernel::Attention {
                batch_heads,
                q_len,
                kv_len,
                head_dim,
                causal,
                backward,
                ..
            } => {
                // Scores (QK^T) and output (PV): two products of q_len x kv_len x head_dim.
                let full =
                    4.0 * batch_heads as f64 * q_len as f64 * kv_len as f64 * head_dim as f64;
                let done = if causal && q_len == kv_len {
                    full / 2.0
                } else {
                    full
                };
                if backward { 2.5 * done } else { done }
            }
            Kernel::Memory { flops, .. } | Kernel::Elementwise { flops, .. } => flops,
        }
    }

    /// Transcendental evaluations the kernel needs on a device that prices them apart: one
    /// exponential per attention score (the backward recomputes them); none for the others,
    /// whose nonlinear functions are not counted (activations are memory-bound everywhere).
    pub fn nonlinear_ops(&self) -> f64 {
        match *self {
            Kernel::Attention {
                batch_heads,
                q_len,
                kv_len,
                causal,
                backward,
                ..
            } => {
                let scores = (batch_heads * q_len * kv_len) as f64;
                let done = if causal && q_len == kv_len {
                    scores / 2.0
                } else {
                    scores
                };
                if backward { 2.0 * done } else { done }
            }
            _ => 0.0,
        }
    }

    /// Bytes the kernel moves to and from device memory (each operand read once, output written once).
    pub fn bytes(&self) -> f64 {
        match *self {
            Kernel::Gemm {
                m,
                n,
                k,
                batch,
                dtype,
            } => (batch * (m * k + k * n + m * n)) as f64 * dtype.bytes(),
            Kernel::Attention {
                batch_heads,
                q_len,
                kv_len,
                head_dim,
                backward,
                dtype,
                ..
            } => {
                // Q and O by query, K and V by key; the backward reads them again with their grads.
                let once =
                    (batch_heads * head_dim * (2 * q_len + 2 * kv_len)) as f64 * dtype.bytes();
                if backward { 2.0 * once } else { once }
            }
            Kernel::Memory { bytes, .. } | Kernel::Elementwise { bytes, .. } => bytes,
        }
    }
}
