//! The catalog's AMD and Google accelerators: datasheet figures, with the source of each.

use super::{GB, GIB, TFLOPS};
use crate::hw::gpu::{Architecture, GpuSpec, IntraLinkKind};
use crate::hw::roofline::Efficiency;
use std::borrow::Cow;

const MI300X: GpuSpec = GpuSpec {
    name: Cow::Borrowed("MI300X"),
    aliases: &["AMD MI300X", "Instinct MI300X", "MI300X-192GB"],
    vendor: "AMD",
    architecture: Architecture::Cdna3,
    // Dense figures (the datasheet gives sparse ones separately). Vector and matrix FP32
    // are both 163.4; AMD's datasheet gives a TF32 matrix figure, used here.
    peak_fp32: 163.4 * TFLOPS,
    peak_tf32: Some(653.7 * TFLOPS),
    peak_bf16: Some(1307.4 * TFLOPS),
    peak_fp16: 1307.4 * TFLOPS,
    peak_fp8: Some(2614.9 * TFLOPS),
    peak_int8: Some(2614.9 * TFLOPS),
    // GiB: 8 HBM3 stacks of 24 GiB (ROCm's GPU spec table lists "VRAM (GiB) 192").
    memory_bytes: 192 * GIB,
    memory_bandwidth: 5300.0 * GB,
    // Infinity Fabric, fully connected 8-GPU platform: 7 peer links of 128 GB/s peak
    // bidirectional (64 GB/s per direction) = 448 GB/s per direction in aggregate, but only
    // 64 GB/s per direction to any single peer. The 8th link is for scale-out. Sources: AMD
    // MI300X datasheet ("Infinity Fabric Links", "Peak Infinity Fabric Link Bandwidth
    // 128 GB/s"), MI300X platform datasheet (896 GB/s aggregate bidirectional).
    intra_link: IntraLinkKind::Mesh,
    intra_bandwidth: 448.0 * GB,
    // PCIe Gen5 x16.
    pcie_bandwidth: 64.0 * GB,
    // 750 W peak board power.
    tdp_watts: 750.0,
    in_switch_reduction: false,
    multiprocessors: 304,
    peak_int4: None,
    idle_watts: None,
    nonlinear_rate: None,
    sustained_clock: 1.0,
    // xGMI carries 45-48 GB/s of each 64 GB/s link after CRC and protocol overhead
    // (TransferBench, all seven links at once), and RCCL's all-reduce on 8 MI300X reaches a
    // bus bandwidth of 306 GB/s at 256 MB and 318 GB/s at 16 GB, 0.68-0.71 of the 448 GB/s
    // line rate (ROCm blog "Understanding RCCL Bandwidth and xGMI Performance on AMD
    // Instinct MI300X", March 2025).
    intra_efficiency: Some(0.71),
    // AMD's own maximum achievable GEMM rates with hipBLASLt, warm and at the clock dense
    // matrix work holds (1,115-1,230 MHz of 2,100): 654 TFLOP/s fp16, 708 bf16 and 1,273 fp8,
    // 0.50, 0.54 and 0.49 of the datasheet ("Measuring Max-Achievable FLOPs - Part 2", ROCm
    // blog, Feb 2025), where NVIDIA's GPUs reach 0.75. Fused attention runs on the same
    // matrix cores at the same clock: the shared 0.6 scaled alike. Streaming kernels reach 0.78
    // of the HBM's datasheet rate: BabelStream on 10.5 GB arrays (far beyond the 256 MB Infinity
    // Cache) on an Azure ND MI300X v5 measured 4.10-4.28 TB/s for Triad, Add, Copy and Mul, where
    // the same harness measured an H100 SXM at 0.87-0.89 (Azure/AI-benchmarking-guide results,
    // March 2025; ROCm's roofline tool reads 4.2 TB/s): validation/mi300x-memory.md.
    efficiency: Some(Efficiency {
        gemm_peak_fraction: 0.5,
        attention_peak_fraction: 0.4,
        memory_fraction: 0.78,
        ..Efficiency::DEFAULT
    }),
    source: Cow::Borrowed(
        "AMD Instinct MI300X accelerator datasheet (2023), OAM module; AMD Instinct \
             MI300X platform datasheet for Infinity Fabric",
    ),
};
pub(super) static ENTRIES: &[GpuSpec] = &[
    // ---- AMD CDNA ----
    GpuSpec {
        name: Cow::Borrowed("MI250X"),
        aliases: &["AMD MI250X", "Instinct MI250X", "MI250X-128GB"],
        vendor: "AMD",
        architecture: Architecture::Cdna2,
        // One OAM module, i.e. both GCDs (the OS shows each GCD as its own GPU with half of
        // everything below). FP32 is the matrix (and packed-FP32) peak, 95.7 TFLOPS, which is what
        // FP32 GEMMs get; plain vector FP32 is 47.9. CDNA2 has no TF32/XF32 and no FP8.
        peak_fp32: 95.7 * TFLOPS,
        peak_tf32: None,
        peak_bf16: Some(383.0 * TFLOPS),
        peak_fp16: 383.0 * TFLOPS,
        peak_fp8: None,
        peak_int8: Some(383.0 * TFLOPS),
        // GiB: 8 HBM2e stacks of 16 GiB (64 GiB per GCD).
        memory_bytes: 128 * GIB,
        memory_bandwidth: 3276.8 * GB,
        // Infinity Fabric: the datasheet lists 8 links x 100 GB/s peak (bidirectional; ROCm
        // docs: 50 GB/s per direction per x16 link at 25 GT/s) = 400 GB/s per direction in
        // total. Point-to-point, not switched: on a 4-OAM node (e.g. Frontier) GCDs on different
        // OAMs share 1 or 2 links (50-100 GB/s per direction); the two GCDs inside one OAM share
        // 4 links (200 GB/s per direction), which is not counted here.
        intra_link: IntraLinkKind::Mesh,
        intra_bandwidth: 400.0 * GB,
        // Each GCD has its own PCIe Gen4 x16 link to the host: 2 x 32 GB/s per OAM.
        pcie_bandwidth: 64.0 * GB,
        // 560 W peak board power (OAM, liquid or air cooled); 500 W in some platforms.
        tdp_watts: 560.0,
        in_switch_reduction: false,
        multiprocessors: 220,
        peak_int4: None,
        idle_watts: None,
        nonlinear_rate: None,
        sustained_clock: 1.0,
        intra_efficiency: None,
        efficiency: None,
        source: Cow::Borrowed(
            "AMD Instinct MI250X accelerator datasheet (2021), OAM module (both GCDs); \
                 ROCm MI250 microarchitecture page for the link figures",
        ),
    },
    MI300X,
    GpuSpec {
        name: Cow::Borrowed("MI325X"),
        aliases: &["AMD MI325X", "Instinct MI325X", "MI325X-256GB"],
        // The MI300X's compute dies, peaks (AMD's MI325X datasheet: 1,307.4 dense fp16/bf16,
        // 2,614.9 fp8 TFLOPS), baseboard and xGMI links, with HBM3E: ROCm's GPU spec table lists
        // "VRAM (GiB) 256".
        memory_bytes: 256 * GIB,
        memory_bandwidth: 6000.0 * GB,
        // 1,000 W peak board power.
        tdp_watts: 1000.0,
        // AMD's maximum achievable GEMM rates (the MI300X's source): 794 TFLOP/s fp16, 843 bf16
        // and 1,519 fp8 at 1,354-1,464 MHz, 0.61, 0.64 and 0.58 of the datasheet; the extra
        // board power holds a higher clock than the MI300X's. Attention scaled alike.
        efficiency: Some(Efficiency {
            gemm_peak_fraction: 0.6,
            attention_peak_fraction: 0.48,
            ..Efficiency::DEFAULT
        }),
        source: Cow::Borrowed(
            "AMD Instinct MI325X accelerator datasheet (2024), OAM module; ROCm GPU \
                 specifications table",
        ),
        ..MI300X
    },
    // ---- Google TPU ----
    GpuSpec {
        name: Cow::Borrowed("TPU-v3"),
        aliases: &["TPUv3", "TPU v3", "Cloud TPU v3"],
        vendor: "Google",
        architecture: Architecture::TpuV3,
        // One chip (two TensorCores). The matrix units multiply bf16 and accumulate in fp32; there
        // is no fp16, fp8 or int8 path, so an fp16 model is priced at the bf16 peak. FP32 matrix
        // products run as bf16 passes (6 for full fp32 precision): 123 / 6 = 20.5, our
        // derivation, not a datasheet figure (the optimizer step it prices is memory-bound).
        peak_fp32: 20.5 * TFLOPS,
        peak_tf32: None,
        peak_bf16: Some(123.0 * TFLOPS),
        peak_fp16: 123.0 * TFLOPS,
        peak_fp8: None,
        peak_int8: None,
        // GiB, as the Cloud TPU page writes it ("32 GiB, 900 GBps").
        memory_bytes: 32 * GIB,
        memory_bandwidth: 900.0 * GB,
        // No server-internal switch: every chip has 4 inter-chip-interconnect (ICI) links of
        // 656 Gb/s (82 GB/s) to its torus neighbours (Jouppi et al. 2020, Table 3; 1,024 chips x
        // 4 x 82 GB/s = 336 TB/s matches the Cloud page's "all-reduce bandwidth per Pod 340
        // TB/s"). Chips of one board are neighbours on the same torus: a scenario models the
        // torus with one chip per node (`topology = "torus-2d"`, `torus_link_bandwidth`).
        intra_link: IntraLinkKind::Mesh,
        intra_bandwidth: 4.0 * 82.0 * GB,
        // The host's PCIe Gen3 x16 (assumed; the four chips of a board share one host).
        pcie_bandwidth: 16.0 * GB,
        // Measured power per chip, min/mean/max 123/220/262 W (Cloud TPU v3 page): the maximum as
        // the board power, the minimum as idle.
        tdp_watts: 262.0,
        in_switch_reduction: false,
        // Two TensorCores.
        multiprocessors: 2,
        peak_int4: None,
        idle_watts: Some(123.0),
        nonlinear_rate: None,
        sustained_clock: 1.0,
        intra_efficiency: None,
        efficiency: None,
        source: Cow::Borrowed(
            "Google Cloud TPU v3 documentation (system architecture: 123 TFLOPS bf16, 32 GiB \
                 HBM2 at 900 GBps, measured power 123/220/262 W, 2-D torus pods of 1,024 chips); \
                 Jouppi et al., CACM 2020, Table 3 (4 ICI links at 656 Gbit/s)",
        ),
    },
];
