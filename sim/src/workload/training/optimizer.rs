//! The optimizer of a training step: the state it keeps, the bytes its step touches and, for
//! GaLore, the extra matrix work of projecting gradients. Units: bytes and FLOPs per GPU.
//!
//! Every optimizer keeps fp32 master weights (4 bytes a parameter) plus its state: Adam two fp32
//! moments (8); 8-bit Adam two 8-bit moments with block-wise scales (about 2); Adafactor a second
//! moment factored into row and column sums per m x n matrix (4(m + n)); GaLore, per m x n matrix
//! (m <= n), the projection and Adam's moments of the rank-r projected gradient (4mr + 8rn). The
//! matrices are those the GPU holds ([`layer_matrices`]: tensor-parallel shards, local experts);
//! other weights keep a full fp32 second moment (Adafactor) or Adam's state (GaLore). The step
//! streams 14 bytes a parameter plus twice the state beyond the master weights. GaLore adds 4mnr
//! FLOPs of projection a step (TF32 GEMMs) and an SVD every `interval` steps, priced as an fp32
//! GEMM of 2nm^2 + 11m^3 FLOPs (a lower bound).
//!
//! Ignored: GaLore's per-layer weight updates (gradients stay fp32 in memory), the scale factor
//! and clipping arithmetic. Per-optimizer details and sources: docs/TRAINING.md#optimizer

use super::setup::TrainingConfig;
use crate::hw::host::HostSpec;
use crate::hw::{Dtype, Kernel};

/// Bytes of fp32 master weights a parameter.
const MASTER_BYTES: f64 = 4.0;
/// Bytes a step streams a parameter besides the optimizer's state: master weight in and out (8),
/// fp32 gradient in (4), 16-bit weight out (2).
const STEP_BYTES: f64 = 14.0;
/// Adam's two fp32 moments.
const ADAM_MOMENT_BYTES: f64 = 8.0;
/// 8-bit Adam's two moments with their block-wise scales.
const ADAM_8BIT_MOMENT_BYTES: f64 = 2.0;
/// Bytes of an fp32 value (Adafactor's factored moments, GaLore's projection and moments).
const FP32: f64 = 4.0;

/// The optimizer, resolved.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Optimizer {
    Adam,
    Adam8bit,
    Adafactor,
    /// GaLore over Adam: projection `rank`, SVD every `interval` steps.
    Galore {
        rank: u32,
        interval: u32,
    },
}

/// A weight matrix of `rows` x `cols` that a GPU holds, `count` times.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Matrix {
    pub rows: u64,
    pub cols: u64,
    pub count: f64,
}

impl Matrix {
    pub fn params(&self) -> f64 {
        (self.rows * self.cols) as f64 * self.count
    }
}

impl Optimizer {
    pub fn name(&self) -> &'static str {
        match self {
            Optimizer::Adam => "adam",
            Optimizer::Adam8bit => "adam-8bit",
            Optimizer::Adafactor => "adafactor",
            Optimizer::Galore { .. } => "galore",
        }
    }

    /// The report's view: the name, and GaLore's rank and interval.
    pub fn report(&self) -> serde_json::Value {
        match *self {
            Optimizer::Galore { rank, interval } => {
                serde_json::json!({ "name": self.name(), "rank": rank, "interval": interval })
            }
            _ => serde_json::json!({ "name": self.name() }),
        }
    }

    /// Bytes of optimizer state (master weights included) of pipeline stage `stage`'s parameters
    /// on one GPU, before any ZeRO sharding.
    pub fn state_bytes(&self, s: &TrainingConfig, stage: u32) -> f64 {
        let params = s.stage_params(stage);
        match *self {
            Optimizer::Adam => (MASTER_BYTES + ADAM_MOMENT_BYTES) * params,
            Optimizer::Adam8bit => (MASTER_BYTES + ADAM_8BIT_MOMENT_BYTES) * params,
            Optimizer::Adafactor => {
                let mut matrices = layer_matrices(s, stage);
                matrices.extend(table_matrices(s, stage));
                let listed: f64 = matrices.iter().map(Matrix::params).sum();
                let factored: f64 = matrices
                    .iter()
                    .map(|x| FP32 * (x.rows + x.cols) as f64 * x.count)
                    .sum();
                // Not listed as a matrix: a full fp32 second moment.
                MASTER_BYTES * params + factored + FP32 * (params - listed).max(0.0)
            }
            Optimizer::Galore { rank, .. } => {
                let matrices = layer_matrices(s, stage);
                let listed: f64 = matrices.iter().map(Matrix::params).sum();
                let projected: f64 = matrices
                    .iter()
                    .map(|x| galore_matrix_bytes(x, rank as u64) * x.count)
                    .sum();
                MASTER_BYTES * params + projected + ADAM_MOMENT_BYTES * (params - listed).max(0.0)
            }
        }
    }

    /// The fused optimizer step over `shard` parameters whose optimizer state (master weights
    /// included) is `state` bytes: a bandwidth-bound kernel.
    pub fn step_kernel(&self, shard: f64, state: f64) -> Kernel {
        let own = (state - MASTER_BYTES * shard).max(0.0);
        Kernel::Memory {
            bytes: STEP_BYTES * shard + 2.0 * own,
            flops: 12.0 * shard,
        }
    }

    /// The fused step of [`Self::step_kernel`] on a host's CPUs (`hw::host`): seconds, FLOPs
    /// and bytes.
    pub fn host_step(&self, host: &HostSpec, shard: f64, state: f64) -> (f64, f64, f64) {
        let Kernel::Memory { bytes, flops } = self.step_kernel(shard, state) else {
            unreachable!("the optimizer step is a memory-bound kernel")
        };
        (host.seconds(flops, bytes), flops, bytes)
    }

    /// GaLore's extra work on pipeline stage `stage` each step: fp32 GEMMs, each with the share
    /// of a step it is charged at (1 for the projections, 1/interval for the SVDs). Empty for the
    /// other optimizers.
    pub fn projection_kernels(&self, s: &TrainingConfig, stage: u32) -> Vec<(Kernel, f64)> {
        let Optimizer::Galore { rank, interval } = *self else {
            return Vec::new();
        };
        let r = rank as u64;
        let mut out = Vec::new();
        for x in layer_matrices(s, stage) {
            let (m, n) = (x.rows.min(x.cols), x.rows.max(x.cols));
            if r >= m {
                continue;
            }
            let gemm = |m, n, k, dtype| Kernel::Gemm {
                m,
                n,
                k,
                batch: 1,
                dtype,
            };
            // Down (r x m by m x n) and up (m x r by r x n).
            out.push((gemm(r, n, m, Dtype::Tf32), x.count));
            out.push((gemm(m, n, r, Dtype::Tf32), x.count));
            // The SVD's 2nm^2 + 11m^3 FLOPs as an m x m product over n + 5.5m.
            let svd = gemm(m, m, n + 11 * m / 2, Dtype::Fp32);
            out.push((svd, x.count / interval as f64));
        }
        out
    }
}

/// State bytes of one matrix under GaLore at rank `r`: projection and projected moments, or
/// Adam's moments when the rank does not reduce it.
fn galore_matrix_bytes(x: &Matrix, r: u64) -> f64 {
    let (m, n) = (x.rows.min(x.cols), x.rows.max(x.cols));
    if r >= m {
        ADAM_MOMENT_BYTES * (m * n) as f64
    } else {
        FP32 * (m * r) as f64 + ADAM_MOMENT_BYTES * (r * n) as f64
    }
}

/// The weight matrices of the layers of pipeline stage `stage` that one GPU holds (see
/// [`matrices_of_layer`]).
pub fn layer_matrices(s: &TrainingConfig, stage: u32) -> Vec<Matrix> {
    (0..s.virtual_stages)
        .flat_map(|chunk| s.chunk_layers(chunk * s.pp + stage))
        .flat_map(|layer| matrices_of_layer(s, layer))
        .collect()
}

/// The weight matrices of `layer` that one GPU holds: attention's QKV and output projections
/// (not multi-head latent attention's), the dense MLP's up and down projections or the local
/// routed and shared experts' (routers, norms and biases not listed).
pub fn matrices_of_layer(s: &TrainingConfig, layer: u32) -> Vec<Matrix> {
    let m = &s.model;
    let tp = s.tp as u64;
    let h = m.hidden as u64;
    let mut out = Vec::new();
    let mut add = |rows: u64, cols: u64, count: f64| {
        if rows > 0 && cols > 0 && count > 0.0 {
            out.push(Matrix { rows, cols, count });
        }
    };
    if m.mla.is_none() && m.has_attention(layer) {
        add(h, m.qkv_width() / tp, 1.0);
        add(m.q_width() / tp, h, 1.0);
    }
    match &m.moe {
        Some(moe) if m.is_moe_layer(layer) => {
            let local = moe.experts as f64 / s.ep as f64 + moe.shared_experts as f64;
            add(h, m.expert_up_width() / tp, local);
            add(moe.expert_ffn as u64 / tp, h, local);
        }
        _ => {
            add(h, m.up_width() / tp, 1.0);
            add(m.ffn as u64 / tp, h, 1.0);
        }
    }
    out
}

/// The embedding table and output projection one GPU of stage `stage` holds (vocab / tp x
/// hidden each), as `Training::stage_params` counts them.
fn table_matrices(s: &TrainingConfig, stage: u32) -> Vec<Matrix> {
    let m = &s.model;
    let rows = m.vocab as u64 / s.tp as u64;
    let mut count = 0.0;
    if stage == 0 {
        count += 1.0;
    }
    if stage == s.pp - 1 && (!m.tied_embeddings || s.pp > 1) {
        count += 1.0;
    }
    if count == 0.0 {
        return Vec::new();
    }
    vec![Matrix {
        rows,
        cols: m.hidden as u64,
        count,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn galore_state_shrinks_with_rank_and_stops_at_full_rank() {
        let x = Matrix {
            rows: 4096,
            cols: 11008,
            count: 1.0,
        };
        let full = galore_matrix_bytes(&x, 4096);
        assert_eq!(full, 8.0 * 4096.0 * 11008.0);
        let r1024 = galore_matrix_bytes(&x, 1024);
        assert_eq!(r1024, 4.0 * 4096.0 * 1024.0 + 8.0 * 1024.0 * 11008.0);
        assert!(r1024 < full / 3.0);
        assert!(galore_matrix_bytes(&x, 256) < r1024);
    }

    #[test]
    fn step_bytes_match_adam_and_8bit_adam() {
        for (opt, state, bytes) in [
            (Optimizer::Adam, 12.0, 30.0),
            (Optimizer::Adam8bit, 6.0, 18.0),
        ] {
            match opt.step_kernel(1e6, state * 1e6) {
                Kernel::Memory { bytes: b, .. } => assert_eq!(b, bytes * 1e6, "{}", opt.name()),
                k => panic!("{k:?}"),
            }
        }
    }
}
