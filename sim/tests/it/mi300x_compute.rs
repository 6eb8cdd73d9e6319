//! The MI300X's GEMMs against a public table of measured kernels: the tuned int8 GEMMs that
//! ROCm/aiter ships for 304-CU gfx942 parts (`aiter/configs/a8w8_bpreshuffle_tuned_gemm.csv`,
//! commit 08e1e1d: per-token int8 with pre-shuffled weights, each shape's fastest asm kernel, time
//! in microseconds), two weight shapes from 64 to 32,768 tokens. The catalog prices the MI300X's
//! matrix units at AMD's maximum-achievable rate (0.5 of the datasheet), not at these kernels.
//! Prints every row it compares.

use crate::common::median;
use clustersim::hw::gpu;
use clustersim::hw::{ComputeModel, Dtype, Kernel};

/// (M, N, K, measured us).
const AITER_INT8: &[(u64, u64, u64, f64)] = &[
    (64, 1536, 5120, 16.7759),
    (128, 1536, 5120, 17.9602),
    (256, 1536, 5120, 17.6791),
    (512, 1536, 5120, 18.7067),
    (1024, 1536, 5120, 21.0125),
    (1664, 1536, 5120, 27.6261),
    (4096, 1536, 5120, 63.8361),
    (8192, 1536, 5120, 128.8567),
    (16384, 1536, 5120, 211.7054),
    (32768, 1536, 5120, 406.391),
    (64, 5120, 1280, 7.7424),
    (128, 5120, 1280, 8.5797),
    (256, 5120, 1280, 9.2104),
    (512, 5120, 1280, 11.2508),
    (1024, 5120, 1280, 18.2637),
    (1664, 5120, 1280, 21.5241),
    (4096, 5120, 1280, 58.5804),
    (8192, 5120, 1280, 105.657),
    (16384, 5120, 1280, 195.4489),
    (32768, 5120, 1280, 379.1231),
];

/// From 1,024 tokens on, within 20% each and 15% at the median (measured: -17% to +8%, median
/// about -10%: the model is a little fast). Below that the K = 5120 shape's tuned kernels (tiles
/// of 16-48 x 128, no split-K) fill only part of the 304 compute units and take 1.5-2.3 times as
/// long as priced (the N = 5120 shape stays within 13%): the roofline does not model how many
/// units a grid fills.
#[test]
fn mi300x_gemms_from_1024_tokens_within_15_percent_of_aiters_kernels() {
    let model = ComputeModel::new(gpu::find("MI300X").unwrap());
    let mut large = Vec::new();
    for &(m, n, k, us) in AITER_INT8 {
        let gemm = Kernel::Gemm {
            m,
            n,
            k,
            batch: 1,
            dtype: Dtype::Int8,
        };
        let t = model.cost(&gemm).unwrap().seconds * 1e6;
        let err = t / us - 1.0;
        println!(
            "{m:>6} x {n:>5} x {k:>5}  measured {us:>8.2} us  priced {t:>8.2} us  {:+.0}%",
            100.0 * err
        );
        if m >= 1024 {
            assert!(err.abs() < 0.2, "{m} x {n} x {k}: {:+.0}%", 100.0 * err);
            large.push(err.abs());
        }
    }
    let med = median(&mut large);
    println!("median |error| from 1,024 tokens: {:.1}%", 100.0 * med);
    assert!(med < 0.15, "median {:.1}%", 100.0 * med);
}

/// A streaming kernel far larger than the 256 MB Infinity Cache moves its bytes at BabelStream's
/// measured 4.10-4.28 TB/s on an MI300X (Triad, Add, Copy, Mul; validation/mi300x-memory.md), not
/// at the shared 0.85 of the datasheet's 5.3 TB/s (4.5 TB/s).
#[test]
fn mi300x_streams_at_babelstreams_rate() {
    let model = ComputeModel::new(gpu::find("MI300X").unwrap());
    let bytes = 3.0 * 10.5e9;
    let triad = Kernel::Memory {
        bytes,
        flops: 2.0 * 1.3e9,
    };
    let rate = bytes / model.cost(&triad).unwrap().seconds / 1e12;
    assert!((4.0..4.3).contains(&rate), "{rate:.2} TB/s");
}
