//! The catalog's entries: datasheet figures of each GPU, with the source of each; NVIDIA's here,
//! AMD's and Google's in `catalog/amd_google.rs`. The types and look-ups are in `hw::gpu`.

use super::{Architecture, GpuSpec, IntraLinkKind};
use std::borrow::Cow;
use std::sync::LazyLock;

mod amd_google;

pub(super) const GB: f64 = 1e9;
pub(super) const TFLOPS: f64 = 1e12;
/// Memory capacities: vendors print "GB", but HBM stacks and GDDR chips come in binary densities,
/// so the "80GB" of an A100/H100 is 80 GiB (nvidia-smi shows 81920 MiB less a small reservation).
/// Every entry below says which convention it uses and why; so far all of them turn out to be GiB.
pub(super) const GIB: u64 = 1 << 30;

/// V100 SXM2 32GB; the 16 GB part differs only in memory.
const V100_SXM2_32GB: GpuSpec = GpuSpec {
    name: Cow::Borrowed("V100-SXM2-32GB"),
    aliases: &["V100", "V100-32GB", "V100-SXM2", "Tesla V100-SXM2-32GB"],
    vendor: "NVIDIA",
    architecture: Architecture::Volta,
    peak_fp32: 15.7 * TFLOPS,
    peak_tf32: None,
    peak_bf16: None,
    // "Tensor Performance 125 TFLOPS" (FP16 multiply, FP32 accumulate); no sparsity on Volta.
    peak_fp16: 125.0 * TFLOPS,
    peak_fp8: None,
    // The datasheet gives no INT8 figure: Volta tensor cores have no INT8 mode (DP4A on the
    // CUDA cores exists but is not a datasheet number).
    peak_int8: None,
    // GiB: 4 HBM2 stacks of 8 GiB.
    memory_bytes: 32 * GIB,
    memory_bandwidth: 900.0 * GB,
    // DGX-1/HGX-1 hybrid cube mesh: 6 NVLink2 links x 25 GB/s per direction = 150 GB/s per
    // direction in total (300 GB/s "NVLink" in the datasheet); a given pair has 1 or 2 links,
    // and some pairs none (they go through a peer or PCIe).
    intra_link: IntraLinkKind::Mesh,
    intra_bandwidth: 150.0 * GB,
    // PCIe Gen3 x16: 32 GB/s bidirectional.
    pcie_bandwidth: 16.0 * GB,
    tdp_watts: 300.0,
    in_switch_reduction: false,
    multiprocessors: 80,
    peak_int4: None,
    idle_watts: None,
    nonlinear_rate: None,
    sustained_clock: 1.0,
    intra_efficiency: None,
    efficiency: None,
    source: Cow::Borrowed(
        "NVIDIA V100 Tensor Core GPU datasheet (Jan 2020), V100 SXM2 column (32GB)",
    ),
};

/// H100 SXM5 80GB; the Grand Teton part differs in memory.
const H100_SXM5_80GB: GpuSpec = GpuSpec {
    name: Cow::Borrowed("H100-SXM5-80GB"),
    aliases: &["H100-SXM", "H100 SXM", "H100-80GB", "H100"],
    vendor: "NVIDIA",
    architecture: Architecture::Hopper,
    peak_fp32: 67.0 * TFLOPS,
    peak_tf32: Some(494.7 * TFLOPS),
    peak_bf16: Some(989.4 * TFLOPS),
    peak_fp16: 989.4 * TFLOPS,
    peak_fp8: Some(1978.9 * TFLOPS),
    peak_int8: Some(1978.9 * TFLOPS),
    // GiB: 5 HBM3 stacks of 16 GiB.
    memory_bytes: 80 * GIB,
    memory_bandwidth: 3350.0 * GB,
    intra_link: IntraLinkKind::NvSwitch,
    intra_bandwidth: 450.0 * GB,
    pcie_bandwidth: 64.0 * GB,
    tdp_watts: 700.0,
    in_switch_reduction: true,
    multiprocessors: 132,
    peak_int4: None,
    idle_watts: None,
    nonlinear_rate: None,
    // Under sustained matrix work a 700 W Hopper SXM board sits at its TDP with the SM clock at
    // 1,400-1,700 MHz, not the 1,980 MHz isolated kernels see, and PyTorch's bf16 GEMMs of 96
    // training-layer shapes, timed back to back after the layers ran, took a median 1/0.923 of
    // the roofline's time (calibration/h200-2026-11-30, run 4: `clocks.csv`, `gemms.json`;
    // same GH100 die and TDP as this board).
    sustained_clock: 0.923,
    intra_efficiency: None,
    efficiency: None,
    source: Cow::Borrowed(
        "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 SXM column (dense figures)",
    ),
};

const A100_SXM4_80GB: GpuSpec = GpuSpec {
    name: Cow::Borrowed("A100-SXM4-80GB"),
    // An A100 of unstated memory is this one, the HGX A100 servers' usual part.
    aliases: &["A100-80GB", "A100 80GB", "A100", "A100-SXM4", "A100-SXM"],
    vendor: "NVIDIA",
    architecture: Architecture::Ampere,
    peak_fp32: 19.5 * TFLOPS,
    peak_tf32: Some(156.0 * TFLOPS),
    peak_bf16: Some(312.0 * TFLOPS),
    peak_fp16: 312.0 * TFLOPS,
    peak_fp8: None,
    peak_int8: Some(624.0 * TFLOPS),
    // GiB: 5 HBM2e stacks of 16 GiB.
    memory_bytes: 80 * GIB,
    memory_bandwidth: 2039.0 * GB,
    intra_link: IntraLinkKind::NvSwitch,
    intra_bandwidth: 300.0 * GB,
    pcie_bandwidth: 32.0 * GB,
    tdp_watts: 400.0,
    in_switch_reduction: false,
    multiprocessors: 108,
    peak_int4: None,
    idle_watts: None,
    nonlinear_rate: None,
    sustained_clock: 1.0,
    intra_efficiency: None,
    efficiency: None,
    source: Cow::Borrowed("NVIDIA A100 Tensor Core GPU datasheet (2021), SXM4 80GB column"),
};

/// NVIDIA's GPUs, oldest first; then [`amd_google::ENTRIES`].
static NVIDIA: &[GpuSpec] = &[
    // ---- NVIDIA Volta / Turing ----
    V100_SXM2_32GB,
    GpuSpec {
        name: Cow::Borrowed("V100-SXM2-16GB"),
        aliases: &["V100-16GB", "Tesla V100-SXM2-16GB"],
        // GiB: 4 HBM2 stacks of 4 GiB (the first V100s, e.g. the IBM AC922 nodes of Lassen and
        // Sierra); otherwise identical to the 32 GB part.
        memory_bytes: 16 * GIB,
        source: Cow::Borrowed(
            "NVIDIA V100 Tensor Core GPU datasheet (Jan 2020), V100 SXM2 column (16GB)",
        ),
        ..V100_SXM2_32GB
    },
    GpuSpec {
        name: Cow::Borrowed("V100S-PCIe-32GB"),
        aliases: &["V100S", "V100S-PCIe", "Tesla V100S", "V100S-32GB"],
        vendor: "NVIDIA",
        architecture: Architecture::Volta,
        // The V100S is the PCIe V100 at higher clocks and faster HBM2: "Double-Precision 8.2
        // TFLOPS, Single-Precision 16.4 TFLOPS, Tensor Performance 130 TFLOPS".
        peak_fp32: 16.4 * TFLOPS,
        peak_tf32: None,
        peak_bf16: None,
        peak_fp16: 130.0 * TFLOPS,
        peak_fp8: None,
        peak_int8: None,
        // GiB: 4 HBM2 stacks of 8 GiB.
        memory_bytes: 32 * GIB,
        memory_bandwidth: 1134.0 * GB,
        // No NVLink on the PCIe card: peers over PCIe Gen3 x16.
        intra_link: IntraLinkKind::Pcie,
        intra_bandwidth: 16.0 * GB,
        pcie_bandwidth: 16.0 * GB,
        tdp_watts: 250.0,
        in_switch_reduction: false,
        multiprocessors: 80,
        peak_int4: None,
        idle_watts: None,
        nonlinear_rate: None,
        sustained_clock: 1.0,
        intra_efficiency: None,
        efficiency: None,
        source: Cow::Borrowed("NVIDIA V100S Tensor Core GPU datasheet (Nov 2019), PCIe 32GB"),
    },
    GpuSpec {
        name: Cow::Borrowed("T4"),
        aliases: &["Tesla T4", "NVIDIA T4", "T4-16GB"],
        vendor: "NVIDIA",
        architecture: Architecture::Turing,
        peak_fp32: 8.1 * TFLOPS,
        peak_tf32: None,
        peak_bf16: None,
        // "Mixed Precision (FP16/FP32) 65 TFLOPS"; Turing has no structured sparsity.
        peak_fp16: 65.0 * TFLOPS,
        peak_fp8: None,
        peak_int8: Some(130.0 * TFLOPS),
        // GiB: 8 x 16 Gbit GDDR6 chips (nvidia-smi shows 15360 MiB with ECC on).
        memory_bytes: 16 * GIB,
        // "320+ GB/s" in the datasheet, "up to 320 GB/s" in the product brief (256-bit, 10 Gbps).
        memory_bandwidth: 320.0 * GB,
        // No NVLink: peers talk over PCIe Gen3 x16.
        intra_link: IntraLinkKind::Pcie,
        intra_bandwidth: 16.0 * GB,
        pcie_bandwidth: 16.0 * GB,
        tdp_watts: 70.0,
        in_switch_reduction: false,
        multiprocessors: 40,
        peak_int4: None,
        idle_watts: None,
        nonlinear_rate: None,
        sustained_clock: 1.0,
        intra_efficiency: None,
        efficiency: None,
        source: Cow::Borrowed(
            "NVIDIA T4 Tensor Core GPU datasheet (2019) and T4 product brief, PCIe low-profile 70 W",
        ),
    },
    // ---- NVIDIA Ampere ----
    GpuSpec {
        name: Cow::Borrowed("A100-SXM4-40GB"),
        aliases: &["A100-40GB", "A100-SXM-40GB"],
        vendor: "NVIDIA",
        architecture: Architecture::Ampere,
        peak_fp32: 19.5 * TFLOPS,
        peak_tf32: Some(156.0 * TFLOPS),
        peak_bf16: Some(312.0 * TFLOPS),
        peak_fp16: 312.0 * TFLOPS,
        peak_fp8: None,
        peak_int8: Some(624.0 * TFLOPS),
        // GiB: 5 active HBM2 stacks of 8 GiB.
        memory_bytes: 40 * GIB,
        memory_bandwidth: 1555.0 * GB,
        // NVLink3 600 GB/s bidirectional through NVSwitch (HGX A100).
        intra_link: IntraLinkKind::NvSwitch,
        intra_bandwidth: 300.0 * GB,
        pcie_bandwidth: 32.0 * GB,
        tdp_watts: 400.0,
        in_switch_reduction: false,
        multiprocessors: 108,
        peak_int4: None,
        idle_watts: None,
        nonlinear_rate: None,
        sustained_clock: 1.0,
        intra_efficiency: None,
        efficiency: None,
        source: Cow::Borrowed(
            "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 40GB SXM column (dense figures)",
        ),
    },
    A100_SXM4_80GB,
    GpuSpec {
        name: Cow::Borrowed("A800-SXM4-80GB"),
        aliases: &["A800", "A800 80GB", "A800-80GB", "A800-SXM4"],
        // The A100 80GB SXM's GA100 with the same compute, memory and 400 W; NVLink cut to
        // 400 GB/s bidirectional (8 of the 12 NVLink3 links) through NVSwitch.
        intra_bandwidth: 200.0 * GB,
        source: Cow::Borrowed(
            "NVIDIA A800 Tensor Core GPU datasheet (2022), A800 80GB SXM column (dense figures)",
        ),
        ..A100_SXM4_80GB
    },
    GpuSpec {
        name: Cow::Borrowed("A100-PCIe-80GB"),
        aliases: &["A100-PCIe", "A100-80GB-PCIe"],
        vendor: "NVIDIA",
        architecture: Architecture::Ampere,
        peak_fp32: 19.5 * TFLOPS,
        peak_tf32: Some(156.0 * TFLOPS),
        peak_bf16: Some(312.0 * TFLOPS),
        peak_fp16: 312.0 * TFLOPS,
        peak_fp8: None,
        peak_int8: Some(624.0 * TFLOPS),
        // GiB: 5 HBM2e stacks of 16 GiB.
        memory_bytes: 80 * GIB,
        memory_bandwidth: 1935.0 * GB,
        // Peers over PCIe Gen4 x16. Pairs can be joined by NVLink bridges (600 GB/s
        // bidirectional between the two cards of a pair only).
        intra_link: IntraLinkKind::Pcie,
        intra_bandwidth: 32.0 * GB,
        pcie_bandwidth: 32.0 * GB,
        tdp_watts: 300.0,
        in_switch_reduction: false,
        multiprocessors: 108,
        peak_int4: None,
        idle_watts: None,
        nonlinear_rate: None,
        sustained_clock: 1.0,
        intra_efficiency: None,
        efficiency: None,
        source: Cow::Borrowed(
            "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 80GB PCIe column (dense figures)",
        ),
    },
    GpuSpec {
        name: Cow::Borrowed("A40"),
        aliases: &["NVIDIA A40", "A40-48GB"],
        vendor: "NVIDIA",
        architecture: Architecture::Ampere,
        peak_fp32: 37.4 * TFLOPS,
        peak_tf32: Some(74.8 * TFLOPS),
        peak_bf16: Some(149.7 * TFLOPS),
        peak_fp16: 149.7 * TFLOPS,
        peak_fp8: None,
        peak_int8: Some(299.3 * TFLOPS),
        // GiB: 24 x 16 Gbit GDDR6 chips (nvidia-smi shows 46068 MiB with ECC on).
        memory_bytes: 48 * GIB,
        memory_bandwidth: 696.0 * GB,
        // Peers over PCIe Gen4 x16. Pairs can be joined by an NVLink bridge (112.5 GB/s
        // bidirectional, between the two cards of a pair only).
        intra_link: IntraLinkKind::Pcie,
        intra_bandwidth: 32.0 * GB,
        pcie_bandwidth: 32.0 * GB,
        tdp_watts: 300.0,
        in_switch_reduction: false,
        multiprocessors: 84,
        peak_int4: None,
        idle_watts: None,
        nonlinear_rate: None,
        sustained_clock: 1.0,
        intra_efficiency: None,
        efficiency: None,
        source: Cow::Borrowed("NVIDIA A40 datasheet (2021), PCIe dual-slot (dense figures)"),
    },
    // ---- NVIDIA Ada Lovelace ----
    GpuSpec {
        name: Cow::Borrowed("L4"),
        aliases: &["NVIDIA L4", "L4-24GB"],
        vendor: "NVIDIA",
        architecture: Architecture::AdaLovelace,
        peak_fp32: 30.3 * TFLOPS,
        // The datasheet prints only sparse figures (120*, 242*, 242*, 485*, 485*): halved here.
        peak_tf32: Some(60.0 * TFLOPS),
        peak_bf16: Some(121.0 * TFLOPS),
        peak_fp16: 121.0 * TFLOPS,
        peak_fp8: Some(242.5 * TFLOPS),
        peak_int8: Some(242.5 * TFLOPS),
        // GiB: 12 x 16 Gbit GDDR6 chips (nvidia-smi shows 23034 MiB with ECC on).
        memory_bytes: 24 * GIB,
        memory_bandwidth: 300.0 * GB,
        // No NVLink: peers over PCIe Gen4 x16.
        intra_link: IntraLinkKind::Pcie,
        intra_bandwidth: 32.0 * GB,
        pcie_bandwidth: 32.0 * GB,
        tdp_watts: 72.0,
        in_switch_reduction: false,
        multiprocessors: 58,
        peak_int4: None,
        idle_watts: None,
        nonlinear_rate: None,
        sustained_clock: 1.0,
        intra_efficiency: None,
        efficiency: None,
        source: Cow::Borrowed(
            "NVIDIA L4 Tensor Core GPU datasheet (2023), PCIe low-profile (sparse figures halved)",
        ),
    },
    GpuSpec {
        name: Cow::Borrowed("L20"),
        aliases: &["NVIDIA L20", "L20-48GB"],
        vendor: "NVIDIA",
        architecture: Architecture::AdaLovelace,
        // UNCERTAIN: NVIDIA publishes no public L20 datasheet. These are the figures of the
        // China-market spec sheet as widely reported (Nov 2023), read as dense: 59.8 FP32 matches
        // 92 SMs x 128 lanes x 2 x 2.52 GHz, and 239 FP8 TFLOPS keeps the card under the Oct 2023
        // export-rule thresholds, which are computed on dense throughput.
        peak_fp32: 59.8 * TFLOPS,
        peak_tf32: Some(59.8 * TFLOPS),
        peak_bf16: Some(119.5 * TFLOPS),
        peak_fp16: 119.5 * TFLOPS,
        peak_fp8: Some(239.0 * TFLOPS),
        peak_int8: Some(239.0 * TFLOPS),
        // GiB: same 48 GiB GDDR6 configuration as the L40S.
        memory_bytes: 48 * GIB,
        memory_bandwidth: 864.0 * GB,
        // No NVLink: peers over PCIe Gen4 x16.
        intra_link: IntraLinkKind::Pcie,
        intra_bandwidth: 32.0 * GB,
        pcie_bandwidth: 32.0 * GB,
        tdp_watts: 275.0,
        in_switch_reduction: false,
        multiprocessors: 92,
        peak_int4: None,
        idle_watts: None,
        nonlinear_rate: None,
        sustained_clock: 1.0,
        intra_efficiency: None,
        efficiency: None,
        source: Cow::Borrowed(
            "NVIDIA L20 specifications (China market, Nov 2023; no public datasheet, \
                 partner spec sheet as reported), PCIe dual-slot",
        ),
    },
    GpuSpec {
        name: Cow::Borrowed("L40S"),
        aliases: &["NVIDIA L40S", "L40S-48GB"],
        vendor: "NVIDIA",
        architecture: Architecture::AdaLovelace,
        peak_fp32: 91.6 * TFLOPS,
        peak_tf32: Some(183.0 * TFLOPS),
        peak_bf16: Some(362.05 * TFLOPS),
        peak_fp16: 362.05 * TFLOPS,
        peak_fp8: Some(733.0 * TFLOPS),
        // The datasheet's INT8 row equals its FP8 row (733 | 1,466*).
        peak_int8: Some(733.0 * TFLOPS),
        // GiB: 24 x 16 Gbit GDDR6 chips (nvidia-smi shows 46068 MiB with ECC on).
        memory_bytes: 48 * GIB,
        memory_bandwidth: 864.0 * GB,
        // No NVLink: peers over PCIe Gen4 x16.
        intra_link: IntraLinkKind::Pcie,
        intra_bandwidth: 32.0 * GB,
        pcie_bandwidth: 32.0 * GB,
        tdp_watts: 350.0,
        in_switch_reduction: false,
        multiprocessors: 142,
        peak_int4: None,
        idle_watts: None,
        nonlinear_rate: None,
        sustained_clock: 1.0,
        intra_efficiency: None,
        efficiency: None,
        source: Cow::Borrowed("NVIDIA L40S datasheet (2023), PCIe dual-slot (dense figures)"),
    },
    // ---- NVIDIA Hopper ----
    H100_SXM5_80GB,
    GpuSpec {
        // The H100 of Meta's Grand Teton servers: the SXM board with HBM2e instead of HBM3. Its
        // peak is not published; the source says it lies between the SXM's and the NVL's, so
        // the SXM datasheet's compute (the upper end), NVLink and PCIe figures stand in.
        name: Cow::Borrowed("H100-SXM-96GB-HBM2e"),
        aliases: &["H100 SXM 96GB HBM2e", "H100-96GB-HBM2e", "H100 HBM2e"],
        // GiB: 6 HBM2e stacks of 16 GiB.
        memory_bytes: 96 * GIB,
        memory_bandwidth: 2400.0 * GB,
        // "the default 500W power limit, although tuning it up to 700W TDP": the TDP is the
        // SXM's 700 W, the limit is the scenario's (`power_limit`).
        source: Cow::Borrowed(
            "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md (96 GB HBM2e at \
                 2.4 TB/s peak, 700 W TDP, run at a 500 W default limit); compute, NVLink and \
                 PCIe from the H100 SXM datasheet column, the source putting the true peak \
                 between the SXM's and the NVL's",
        ),
        ..H100_SXM5_80GB
    },
    GpuSpec {
        name: Cow::Borrowed("H100-PCIe-80GB"),
        aliases: &["H100-PCIe", "H100-80GB-PCIe"],
        vendor: "NVIDIA",
        architecture: Architecture::Hopper,
        peak_fp32: 51.0 * TFLOPS,
        // Datasheet: 756*, 1,513*, 1,513*, 3,026*, 3,026* (with sparsity): halved here.
        peak_tf32: Some(378.0 * TFLOPS),
        peak_bf16: Some(756.5 * TFLOPS),
        peak_fp16: 756.5 * TFLOPS,
        peak_fp8: Some(1513.0 * TFLOPS),
        peak_int8: Some(1513.0 * TFLOPS),
        // GiB: 5 HBM2e stacks of 16 GiB.
        memory_bytes: 80 * GIB,
        // "2TB/s" in the datasheet, "greater than 2,000 GB/s" in the product brief.
        memory_bandwidth: 2000.0 * GB,
        // Peers over PCIe Gen5 x16. Pairs can be joined by NVLink bridges (600 GB/s
        // bidirectional, between the two cards of a pair only).
        intra_link: IntraLinkKind::Pcie,
        intra_bandwidth: 64.0 * GB,
        pcie_bandwidth: 64.0 * GB,
        // Configurable 300-350 W; 350 W is the unconstrained maximum (product brief).
        tdp_watts: 350.0,
        in_switch_reduction: false,
        multiprocessors: 114,
        peak_int4: None,
        idle_watts: None,
        nonlinear_rate: None,
        sustained_clock: 1.0,
        intra_efficiency: None,
        efficiency: None,
        source: Cow::Borrowed(
            "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 PCIe column (sparse figures \
                 halved); H100 PCIe product brief PB-11133-001 (2022)",
        ),
    },
    GpuSpec {
        name: Cow::Borrowed("H800-SXM5-80GB"),
        aliases: &["H800", "H800-SXM", "H800-80GB"],
        // Same GH100 compute as the H100 SXM apart from FP64 (cut to ~1 TFLOPS); the datasheet
        // prints the H100 SXM sparse figures (989*, 1,979*, 3,958*), halved here. Memory as the
        // H100 SXM (5 HBM3 stacks of 16 GiB), "up to 700 W", configurable.
        // NVLink cut to 400 GB/s bidirectional (8 links instead of 18), through NVSwitch.
        intra_bandwidth: 200.0 * GB,
        source: Cow::Borrowed(
            "NVIDIA H800 Tensor Core GPU datasheet (2023), H800 SXM column (sparse figures \
                 halved)",
        ),
        ..H100_SXM5_80GB
    },
    GpuSpec {
        name: Cow::Borrowed("H20-96GB"),
        aliases: &["H20", "NVIDIA H20", "H20-SXM"],
        vendor: "NVIDIA",
        architecture: Architecture::Hopper,
        // UNCERTAIN: NVIDIA publishes no public H20 datasheet. Figures of the China-market spec
        // sheet as widely reported (2024), dense: 148 TFLOPS BF16 and 296 FP8 keep the part under
        // the Oct 2023 export-rule thresholds; measured BF16 GEMMs reach ~142 TFLOPS, so these
        // are not sparse figures.
        peak_fp32: 44.0 * TFLOPS,
        peak_tf32: Some(74.0 * TFLOPS),
        peak_bf16: Some(148.0 * TFLOPS),
        peak_fp16: 148.0 * TFLOPS,
        peak_fp8: Some(296.0 * TFLOPS),
        peak_int8: Some(296.0 * TFLOPS),
        // GiB: 6 HBM3 stacks of 16 GiB (nvidia-smi shows ~97871 MiB). A later 141 GB variant
        // exists and is not this entry.
        memory_bytes: 96 * GIB,
        memory_bandwidth: 4000.0 * GB,
        // Full NVLink4 (900 GB/s bidirectional) through NVSwitch on HGX H20 boards.
        intra_link: IntraLinkKind::NvSwitch,
        intra_bandwidth: 450.0 * GB,
        pcie_bandwidth: 64.0 * GB,
        tdp_watts: 400.0,
        in_switch_reduction: true,
        multiprocessors: 78,
        peak_int4: None,
        idle_watts: None,
        nonlinear_rate: None,
        sustained_clock: 1.0,
        intra_efficiency: None,
        efficiency: None,
        source: Cow::Borrowed(
            "NVIDIA H20 specifications (China market, 2024; no public datasheet, partner \
                 spec sheet as reported), HGX SXM board",
        ),
    },
    GpuSpec {
        name: Cow::Borrowed("H200-SXM-141GB"),
        aliases: &["H200", "H200-SXM", "H200-141GB"],
        // Same compute, NVLink and power ("up to 700 W", configurable) as the H100 SXM; the
        // datasheet prints sparse figures (989*, 1,979*, 3,958*), halved here.
        // GiB: 6 HBM3e stacks of 24 GiB with 141 GiB exposed; nvidia-smi shows 143771 MiB
        // (~140.4 GiB), far closer to 141 GiB than to 141e9 bytes (~131.3 GiB).
        memory_bytes: 141 * GIB,
        memory_bandwidth: 4800.0 * GB,
        source: Cow::Borrowed(
            "NVIDIA H200 Tensor Core GPU datasheet (2024), H200 SXM column (sparse figures \
                 halved)",
        ),
        ..H100_SXM5_80GB
    },
    // ---- NVIDIA Blackwell ----
    GpuSpec {
        name: Cow::Borrowed("B200-SXM-180GB"),
        aliases: &["B200", "B200-SXM", "B200-180GB", "HGX B200"],
        vendor: "NVIDIA",
        architecture: Architecture::Blackwell,
        // Per-GPU HGX B200 column; the datasheet prints sparse figures (2.2*, 4.5*, 4.5*, 9*,
        // 9* PFLOPS), halved here. The Blackwell technical brief gives FP32 80 TFLOPS at 1000 W;
        // the datasheet says 75.
        peak_fp32: 75.0 * TFLOPS,
        peak_tf32: Some(1100.0 * TFLOPS),
        peak_bf16: Some(2250.0 * TFLOPS),
        peak_fp16: 2250.0 * TFLOPS,
        peak_fp8: Some(4500.0 * TFLOPS),
        peak_int8: Some(4500.0 * TFLOPS),
        // GiB: 8 HBM3e stacks with 180 GiB exposed (nvidia-smi shows 183359 MiB, ~179 GiB). The
        // launch material said 192 GB; the HGX/DGX B200 datasheets say 180 GB (1.44 TB per 8).
        memory_bytes: 180 * GIB,
        // 7.7 TB/s in the HGX datasheet ("up to 62 TB/s" per 8 GPUs); DGX B200 says 64 TB/s.
        memory_bandwidth: 7700.0 * GB,
        // NVLink5 1.8 TB/s bidirectional through NVSwitch.
        intra_link: IntraLinkKind::NvSwitch,
        intra_bandwidth: 900.0 * GB,
        // PCIe Gen5 x16 (128 GB/s bidirectional) per the HGX datasheet.
        pcie_bandwidth: 64.0 * GB,
        // "Configurable up to 1,000 W".
        tdp_watts: 1000.0,
        in_switch_reduction: true,
        multiprocessors: 148,
        peak_int4: None,
        idle_watts: None,
        nonlinear_rate: None,
        // The datasheet's 2.25 PFLOPS bf16 is 148 SMs x 8,192 FLOP a clock at 1,856 MHz. Under
        // sustained tensor-core work at 1,000 W the board holds about 1,580 MHz (FlashAttention-4's
        // forward run back to back falls from 1,965 MHz within ~70 iterations, flashinfer PR
        // #2899), 0.85 of that clock; dense bf16 GEMM loops read 1,342-1,612 MHz in flashinfer's
        // MoE kernel notes.
        sustained_clock: 0.85,
        intra_efficiency: None,
        efficiency: None,
        source: Cow::Borrowed(
            "NVIDIA HGX B200 datasheet (2025), per-GPU HGX B200 column (sparse figures halved)",
        ),
    },
    GpuSpec {
        name: Cow::Borrowed("GB200-186GB"),
        aliases: &["GB200", "GB200-NVL72", "GB200-GPU"],
        vendor: "NVIDIA",
        architecture: Architecture::Blackwell,
        // One Blackwell GPU of a GB200 superchip (two GPUs + one Grace CPU), per-GPU GB200
        // NVL72 column; the datasheet prints sparse figures (2.5*, 5*, 5*, 10*, 10* PFLOPS),
        // halved here.
        peak_fp32: 80.0 * TFLOPS,
        peak_tf32: Some(1250.0 * TFLOPS),
        peak_bf16: Some(2500.0 * TFLOPS),
        peak_fp16: 2500.0 * TFLOPS,
        peak_fp8: Some(5000.0 * TFLOPS),
        peak_int8: Some(5000.0 * TFLOPS),
        // GiB, by analogy with B200 (8 HBM3e stacks, 186 GiB exposed; ~13.4 TB per NVL72 rack).
        memory_bytes: 186 * GIB,
        memory_bandwidth: 8000.0 * GB,
        // NVLink5 1.8 TB/s bidirectional to the NVLink Switch trays (72-GPU domain).
        intra_link: IntraLinkKind::NvSwitch,
        intra_bandwidth: 900.0 * GB,
        // UNCERTAIN: the host link is NVLink-C2C to Grace, 900 GB/s bidirectional per
        // superchip; assumed split evenly between its two GPUs: 225 GB/s per GPU per direction.
        pcie_bandwidth: 225.0 * GB,
        // "Configurable up to 1,200 W" per GPU (the whole superchip is up to ~2,700 W).
        tdp_watts: 1200.0,
        in_switch_reduction: true,
        multiprocessors: 148,
        peak_int4: None,
        idle_watts: None,
        nonlinear_rate: None,
        // Unmeasured for bf16. An NVFP4 GEMM of 16384^3 held at the 1,200 W cap settles at
        // 1,582 MHz of 2,062 (the clock the datasheet's peak is quoted at) with low-entropy
        // operands and near 1,200 MHz with random ones (a public NVML trace of cuBLASLt); until a
        // bf16 figure is found the board is priced at its rated clock, so it comes out faster
        // against the B200 (0.85) than its silicon suggests.
        sustained_clock: 1.0,
        intra_efficiency: None,
        efficiency: None,
        source: Cow::Borrowed(
            "NVIDIA GB200 NVL72 datasheet (2025), per-Blackwell-GPU column (sparse figures \
                 halved)",
        ),
    },
];

/// Every entry, in the order `clustersim list gpus` prints them.
pub(super) static CATALOG: LazyLock<Vec<GpuSpec>> =
    LazyLock::new(|| [NVIDIA, amd_google::ENTRIES].concat());
