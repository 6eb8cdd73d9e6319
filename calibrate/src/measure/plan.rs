//! What `measure` measures, in which order, how often, and how long that should take.
//!
//! GEMM weight shapes (n, k) are those of one tensor-parallel shard (Megatron column/row split,
//! the mapping Vidur's tables use) of two layer families, `gpt` (multi-head attention, MLP of
//! 4 x hidden) and `llama` (8 KV heads, gated MLP as Llama 3), at hidden 4096 and 8192, TP 1, 2,
//! 4 and 8 and head_dim 128: qkv `((heads + 2 kv_heads) x 128 / TP, hidden)`, out
//! `(hidden, hidden / TP)`, up `(ffn x (2 if gated) / TP, hidden)`, down `(hidden, ffn / TP)`.
//! Shapes shared by several (family, hidden, TP) are measured once, each at every `m` (tokens) of
//! the grid in every format of the plan the GPU supports: bf16 and fp16, fp8 where it has fp8
//! tensor cores, tf32 in the full run.
//!
//! Order: launch overhead, copies, the elementwise kernel, host copies, then the GEMMs format by
//! format (bf16 first: the simulator prices training in bf16). No new point is taken once
//! `budget_s` (seconds) has passed; [`Plan::estimate_s`] predicts the time from datasheet figures.
//! The shape table and the plans' numbers: docs/CALIBRATION.md#gemms

use super::stats::{RepPolicy, expected_point_s};
use super::{Transfer, TransferSet};
use clustersim::hw::{Dtype, GpuSpec};

/// Hidden sizes whose layer shapes are measured.
pub const HIDDEN_SIZES: [u64; 2] = [4096, 8192];
/// Tensor-parallel degrees whose shard shapes are measured.
pub const TP_DEGREES: [u64; 4] = [1, 2, 4, 8];
/// Head dimension of every family.
pub const HEAD_DIM: u64 = 128;

/// `m` of a quick run: powers of two from 1 to 8192.
pub const QUICK_M: &[u64] = &[
    1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192,
];
/// `m` of a full run: powers of two and the points halfway between them (in a log scale),
/// from 1 to 16384.
pub const FULL_M: &[u64] = &[
    1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096,
    6144, 8192, 12288, 16384,
];

/// One weight shape of the grid, with the layers that use it ("llama h8192 tp2 up").
#[derive(Clone, Debug, PartialEq)]
pub struct GemmShape {
    pub n: u64,
    pub k: u64,
    pub uses: Vec<String>,
}

/// A layer family (see the module docs).
struct Family {
    name: &'static str,
    /// None: multi-head attention.
    kv_heads: Option<u64>,
    gated: bool,
    ffn: fn(u64) -> u64,
}

const FAMILIES: [Family; 2] = [
    Family {
        name: "gpt",
        kv_heads: None,
        gated: false,
        ffn: |h| 4 * h,
    },
    Family {
        name: "llama",
        kv_heads: Some(8),
        gated: true,
        ffn: |h| match h {
            4096 => 14336,
            8192 => 28672,
            // 8/3 of hidden rounded up to a multiple of 1024, as Llama sizes its MLP.
            _ => (8 * h / 3).div_ceil(1024) * 1024,
        },
    },
];

/// The weight shapes of the grid, sorted by (n, k), each once.
pub fn gemm_shapes() -> Vec<GemmShape> {
    let mut shapes: Vec<GemmShape> = Vec::new();
    let mut add =
        |n: u64, k: u64, use_: String| match shapes.iter_mut().find(|s| s.n == n && s.k == k) {
            Some(s) => s.uses.push(use_),
            None => shapes.push(GemmShape {
                n,
                k,
                uses: vec![use_],
            }),
        };
    for f in &FAMILIES {
        for h in HIDDEN_SIZES {
            let heads = h / HEAD_DIM;
            let kv = f.kv_heads.unwrap_or(heads);
            let ffn = (f.ffn)(h);
            let up = ffn * if f.gated { 2 } else { 1 };
            for tp in TP_DEGREES {
                let label = |op: &str| format!("{} h{h} tp{tp} {op}", f.name);
                add((heads + 2 * kv) * HEAD_DIM / tp, h, label("qkv"));
                add(h, h / tp, label("out"));
                add(up / tp, h, label("up"));
                add(h, ffn / tp, label("down"));
            }
        }
    }
    shapes.sort_by_key(|s| (s.n, s.k));
    shapes
}

/// Everything one run measures.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub quick: bool,
    /// GEMM formats, in order; those the GPU lacks are skipped with the reason.
    pub dtypes: Vec<Dtype>,
    pub shapes: Vec<GemmShape>,
    pub m_values: Vec<u64>,
    /// Buffer sizes (bytes) of each transfer kind, in order.
    pub transfers: Vec<TransferSet>,
    /// Launch overhead: `max_batch` empty kernels per timed batch, `reps` batches; `reps` single
    /// launches.
    pub launch_policy: RepPolicy,
    pub gemm_policy: RepPolicy,
    pub transfer_policy: RepPolicy,
    /// GPU seconds of large GEMMs run before the first GEMM point, to bring clocks up.
    pub gemm_warmup_s: f64,
    /// Seconds after which no new point is started.
    pub budget_s: f64,
}

/// Sizes from `2^lo` to `2^hi` bytes, every `step` powers of two.
fn pow2_sizes(lo: u32, hi: u32, step: usize) -> Vec<u64> {
    (lo..=hi).step_by(step).map(|e| 1u64 << e).collect()
}

impl Plan {
    /// The quick run (`--quick`, the device check's): under 3 minutes on one GPU.
    pub fn quick() -> Plan {
        let policy = RepPolicy {
            warmup_calls: 2,
            warmup_s: 1e-3,
            reps: 5,
            min_reps: 3,
            target_batch_s: 3e-4,
            max_batch: 100,
            point_budget_s: 0.25,
        };
        Plan {
            quick: true,
            dtypes: vec![Dtype::Bf16, Dtype::Fp16, Dtype::Fp8],
            shapes: gemm_shapes(),
            m_values: QUICK_M.to_vec(),
            transfers: vec![
                TransferSet::new(Transfer::DeviceCopy, pow2_sizes(12, 30, 2)),
                TransferSet::new(Transfer::Elementwise, pow2_sizes(12, 30, 2)),
                TransferSet::new(Transfer::HostToDevice, pow2_sizes(12, 28, 2)),
                TransferSet::new(Transfer::DeviceToHost, pow2_sizes(12, 28, 2)),
            ],
            launch_policy: RepPolicy {
                warmup_calls: 200,
                warmup_s: 2e-3,
                reps: 9,
                min_reps: 9,
                target_batch_s: 1.0,
                max_batch: 200,
                point_budget_s: 1.0,
            },
            gemm_policy: policy,
            transfer_policy: policy,
            gemm_warmup_s: 0.3,
            budget_s: 150.0,
        }
    }

    /// The full run: a denser grid, tf32 too, more repetitions; under 6 minutes on one GPU.
    pub fn full() -> Plan {
        let policy = RepPolicy {
            warmup_calls: 3,
            warmup_s: 3e-3,
            reps: 9,
            min_reps: 5,
            target_batch_s: 1e-3,
            max_batch: 200,
            point_budget_s: 1.0,
        };
        Plan {
            quick: false,
            dtypes: vec![Dtype::Bf16, Dtype::Fp16, Dtype::Fp8, Dtype::Tf32],
            shapes: gemm_shapes(),
            m_values: FULL_M.to_vec(),
            transfers: vec![
                TransferSet::new(Transfer::DeviceCopy, pow2_sizes(12, 31, 1)),
                TransferSet::new(Transfer::Elementwise, pow2_sizes(12, 30, 1)),
                TransferSet::new(Transfer::HostToDevice, pow2_sizes(12, 30, 1)),
                TransferSet::new(Transfer::DeviceToHost, pow2_sizes(12, 30, 1)),
            ],
            launch_policy: RepPolicy {
                warmup_calls: 400,
                warmup_s: 5e-3,
                reps: 21,
                min_reps: 21,
                target_batch_s: 1.0,
                max_batch: 200,
                point_budget_s: 2.0,
            },
            gemm_policy: policy,
            transfer_policy: policy,
            gemm_warmup_s: 1.0,
            budget_s: 330.0,
        }
    }

    /// The largest `m` of the grid.
    pub fn m_max(&self) -> u64 {
        self.m_values.iter().copied().max().unwrap_or(1)
    }

    /// Number of points the plan would measure (GEMM points for every listed format, transfer
    /// sizes, three launch figures).
    pub fn points(&self) -> usize {
        self.dtypes.len() * self.shapes.len() * self.m_values.len()
            + self.transfers.iter().map(|t| t.sizes.len()).sum::<usize>()
            + 3
    }

    /// Expected wall-clock seconds on `gpu`, from its datasheet: GEMMs at 70% of the format's
    /// peak (formats it lacks are not counted: the run skips them), memory traffic at 85% of its
    /// bandwidth, host copies at 60% of its PCIe figure, every kernel at least 5 us, `sync_s` of
    /// host overhead per timed batch, plus a fixed 15 s for start-up (context, cuBLAS, module).
    pub fn estimate_s(&self, gpu: &GpuSpec, sync_s: f64) -> f64 {
        const MIN_KERNEL_S: f64 = 5e-6;
        let mut total = 15.0 + self.gemm_warmup_s;
        // Launch overhead: two batched figures and one of single launches.
        total += 3.0 * expected_point_s(&self.launch_policy, 4e-6, sync_s)
            + f64::from(self.launch_policy.reps) * sync_s;
        for set in &self.transfers {
            let rate = match set.kind {
                Transfer::DeviceCopy | Transfer::Elementwise => 0.85 * gpu.memory_bandwidth,
                Transfer::HostToDevice | Transfer::DeviceToHost => 0.6 * gpu.pcie_bandwidth,
            };
            for &size in &set.sizes {
                let t = (set.kind.bytes_moved(size) as f64 / rate).max(MIN_KERNEL_S);
                total += expected_point_s(&self.transfer_policy, t, sync_s);
            }
        }
        for &dtype in &self.dtypes {
            let Some(peak) = gpu.peak_flops(dtype) else {
                continue;
            };
            for shape in &self.shapes {
                for &m in &self.m_values {
                    let flops = 2.0 * (m * shape.n * shape.k) as f64;
                    let bytes = gemm_bytes(dtype, m, shape.n, shape.k) as f64;
                    let t = (flops / (0.7 * peak))
                        .max(bytes / (0.85 * gpu.memory_bandwidth))
                        .max(MIN_KERNEL_S);
                    total += expected_point_s(&self.gemm_policy, t, sync_s);
                }
            }
        }
        total
    }
}

/// Bytes a GEMM reads and writes at least once: A (m x k) and B (k x n) in `dtype`, C (m x n) in
/// the output format (bf16 for fp8, else `dtype`).
pub fn gemm_bytes(dtype: Dtype, m: u64, n: u64, k: u64) -> u64 {
    let input = dtype.bytes();
    let output = output_dtype(dtype).bytes();
    ((m * k + k * n) as f64 * input + (m * n) as f64 * output) as u64
}

/// The format of a GEMM's output: bf16 for fp8 inputs (what fp8 training and inference keep),
/// otherwise the input format.
pub fn output_dtype(dtype: Dtype) -> Dtype {
    match dtype {
        Dtype::Fp8 => Dtype::Bf16,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clustersim::hw::gpu;

    #[test]
    fn shapes_cover_both_families_every_tp_and_are_unique() {
        let shapes = gemm_shapes();
        for w in shapes.windows(2) {
            assert!((w[0].n, w[0].k) < (w[1].n, w[1].k), "sorted and unique");
        }
        let has = |n: u64, k: u64| shapes.iter().any(|s| s.n == n && s.k == k);
        // Llama-3-70B at TP 8: qkv (64 + 16) x 128 / 8 = 1280, up 2 x 28672 / 8 = 7168.
        assert!(has(1280, 8192) && has(7168, 8192) && has(8192, 3584) && has(8192, 1024));
        // GPT-style hidden 4096 at TP 1: qkv 12288, MLP 16384.
        assert!(has(12288, 4096) && has(16384, 4096) && has(4096, 16384) && has(4096, 4096));
        // Every (family, hidden, TP, op) appears exactly once among the uses.
        let uses: usize = shapes.iter().map(|s| s.uses.len()).sum();
        assert_eq!(uses, 2 * HIDDEN_SIZES.len() * TP_DEGREES.len() * 4);
        // The out projection is shared by both families.
        let out = shapes.iter().find(|s| s.n == 8192 && s.k == 4096).unwrap();
        assert!(
            out.uses.contains(&"gpt h8192 tp2 out".to_string()),
            "{out:?}"
        );
        assert!(
            out.uses.contains(&"llama h8192 tp2 out".to_string()),
            "{out:?}"
        );
        // Every dimension is a multiple of 128 (tensor-core and fp8 friendly).
        assert!(shapes.iter().all(|s| s.n % 128 == 0 && s.k % 128 == 0));
        assert!(shapes.len() >= 40 && shapes.len() <= 64, "{}", shapes.len());
    }

    #[test]
    fn m_grids_are_increasing_and_start_at_one() {
        for grid in [QUICK_M, FULL_M] {
            assert_eq!(grid[0], 1);
            assert!(grid.windows(2).all(|w| w[0] < w[1]));
        }
        assert!(QUICK_M.iter().all(|m| FULL_M.contains(m)));
    }

    #[test]
    fn plans_fit_their_budgets_on_datacenter_gpus() {
        // 2 ms per timed batch is pessimistic: a batch waits for a spin sized from the host's
        // submission time, then for the GPU.
        for name in ["H100-SXM5-80GB", "H200-SXM-141GB", "A100-SXM4-80GB"] {
            let gpu = gpu::find(name).unwrap();
            let quick = Plan::quick();
            let full = Plan::full();
            let q = quick.estimate_s(gpu, 2e-3);
            let f = full.estimate_s(gpu, 2e-3);
            println!("{name}: quick {q:.0} s, full {f:.0} s");
            assert!(q < 0.8 * quick.budget_s, "{name}: quick {q:.0} s");
            assert!(f < 0.8 * full.budget_s, "{name}: full {f:.0} s");
            // The budgets themselves stay under the 3 and 6 minutes the issue allows, with
            // room for start-up and writing the files.
            assert!(quick.budget_s + 20.0 <= 180.0);
            assert!(full.budget_s + 20.0 <= 360.0);
        }
    }

    #[test]
    fn plan_contents() {
        let q = Plan::quick();
        let f = Plan::full();
        assert_eq!(q.dtypes[..2], [Dtype::Bf16, Dtype::Fp16]);
        assert!(f.dtypes.contains(&Dtype::Tf32) && !q.dtypes.contains(&Dtype::Tf32));
        assert_eq!(q.m_max(), 8192);
        assert_eq!(f.m_max(), 16384);
        assert!(f.points() > q.points());
        for plan in [&q, &f] {
            let kinds: Vec<Transfer> = plan.transfers.iter().map(|t| t.kind).collect();
            assert_eq!(
                kinds,
                [
                    Transfer::DeviceCopy,
                    Transfer::Elementwise,
                    Transfer::HostToDevice,
                    Transfer::DeviceToHost
                ]
            );
            for set in &plan.transfers {
                assert_eq!(set.sizes[0], 4096);
                assert!(set.sizes.windows(2).all(|w| w[0] < w[1]));
                // Elementwise sizes split into float4 elements.
                assert!(set.sizes.iter().all(|s| s % 16 == 0));
            }
        }
        assert_eq!(pow2_sizes(12, 16, 2), [4096, 16384, 65536]);
    }

    #[test]
    fn gemm_byte_accounting() {
        // bf16 1 x 4096 x 4096: the weight dominates.
        assert_eq!(
            gemm_bytes(Dtype::Bf16, 1, 4096, 4096),
            2 * (4096 + 4096 * 4096 + 4096)
        );
        // fp8 inputs, bf16 output.
        assert_eq!(gemm_bytes(Dtype::Fp8, 2, 8, 4), 2 * 4 + 4 * 8 + 2 * 2 * 8);
        assert_eq!(gemm_bytes(Dtype::Tf32, 1, 1, 1), 12);
        assert_eq!(output_dtype(Dtype::Fp8), Dtype::Bf16);
        assert_eq!(output_dtype(Dtype::Tf32), Dtype::Tf32);
    }
}
