//! The GPU catalog: datasheet figures of the accelerators people train and serve on.
//!
//! Every figure is a vendor datasheet number (dense, i.e. without structured sparsity) with its
//! source named in `source`. Measured efficiencies are not here: they belong to the cost model
//! (`hw::roofline`) and to calibration profiles.

use super::dtype::Dtype;
use super::roofline::Efficiency;
use std::borrow::Cow;

mod catalog;
use catalog::CATALOG;

/// How GPUs inside one server are usually joined.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IntraLinkKind {
    /// Every GPU reaches every other through NVSwitch chips at full per-GPU bandwidth.
    NvSwitch,
    /// Direct GPU-to-GPU links (NVLink bridges or AMD Infinity Fabric), bandwidth split over peers.
    Mesh,
    /// Only PCIe through the host's root complex or a PCIe switch.
    Pcie,
}

/// The GPU's architecture: kernels written for one (FlashAttention 3 for Hopper) run on it alone,
/// and a kernel's achieved fraction of peak depends on it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Architecture {
    Volta,
    Turing,
    Ampere,
    AdaLovelace,
    Hopper,
    Blackwell,
    Cdna2,
    Cdna3,
    /// Google's TPU v3: two TensorCores of two 128 x 128 bf16 matrix units each, on a 2-D torus.
    TpuV3,
    /// Not a GPU: a device defined in the scenario (`[cluster.accelerator]`, `hw::accelerator`).
    Custom,
}

/// Datasheet figures of one GPU model.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuSpec {
    /// The vendor's spelling, e.g. "A100-SXM4-80GB", "H100-SXM5-80GB".
    pub name: Cow<'static, str>,
    /// Other names users type; matched case-insensitively, like `name`.
    pub aliases: &'static [&'static str],
    pub vendor: &'static str,
    pub architecture: Architecture,
    /// Dense peak FLOP/s (or OP/s for integers) by format; `None` where the hardware lacks it.
    pub peak_fp32: f64,
    pub peak_tf32: Option<f64>,
    pub peak_bf16: Option<f64>,
    pub peak_fp16: f64,
    pub peak_fp8: Option<f64>,
    pub peak_int8: Option<f64>,
    /// HBM (or GDDR) capacity in bytes.
    pub memory_bytes: u64,
    /// Memory bandwidth in bytes/s.
    pub memory_bandwidth: f64,
    /// The usual intra-server link and its bandwidth per GPU per direction, in bytes/s.
    pub intra_link: IntraLinkKind,
    pub intra_bandwidth: f64,
    /// The fraction of `intra_bandwidth` that collectives' bulk transfers reach on that link;
    /// `None`: NVLink's, shared (`net::tier::Efficiency::DEFAULT`).
    pub intra_efficiency: Option<f64>,
    /// Host link (PCIe) bandwidth per direction, bytes/s.
    pub pcie_bandwidth: f64,
    /// Board power, watts.
    pub tdp_watts: f64,
    /// Whether the usual server's NVSwitches reduce in the switch (NVLink SHARP, NCCL's NVLS):
    /// third-generation NVSwitch (Hopper HGX boards) and later.
    pub in_switch_reduction: bool,
    /// Streaming multiprocessors (NVIDIA) or compute units (AMD, both dies of a module): how many
    /// thread blocks of a grid run side by side at full speed (`ComputeModel::cost_on_grid`).
    pub multiprocessors: u32,
    /// Dense peak for 4-bit arithmetic where the device has its own (an accelerator with 4-bit
    /// multipliers); `None`: 4-bit weights are dequantised and computed at the 16-bit peak.
    pub peak_int4: Option<f64>,
    /// Idle board power, watts; `None`: [`super::power::IDLE_FRACTION`] of the TDP.
    pub idle_watts: Option<f64>,
    /// The clock, as a share of the clock the efficiency constants were measured at (isolated
    /// kernels, `Efficiency::DEFAULT`), at which a compute-bound tensor-core kernel draws exactly
    /// the TDP (`hw::clock`). 1: the board holds that clock under sustained matrix work; below 1
    /// it cannot, and GEMMs run back to back (training, long prefills) throttle to it.
    pub sustained_clock: f64,
    /// Transcendental evaluations per second (the exponentials of softmax) on units beside the
    /// matrix units; `None`: not priced apart, hidden under the kernel's matrix work and memory
    /// traffic (on the catalog's GPUs attention has hundreds of FLOPs per exponential).
    pub nonlinear_rate: Option<f64>,
    /// How much of its peaks the device's kernels reach; `None`: the shared constants measured on
    /// GPUs ([`Efficiency::DEFAULT`]). Custom accelerators (`hw::accelerator`) may set their own.
    pub efficiency: Option<Efficiency>,
    /// Where the figures come from.
    pub source: Cow<'static, str>,
}

impl GpuSpec {
    /// Dense peak for arithmetic in `dtype`, or `None` where the GPU has no such units. INT4
    /// weights are dequantised and computed in 16-bit, so they map to the 16-bit peak.
    pub fn peak_flops(&self, dtype: Dtype) -> Option<f64> {
        match dtype {
            Dtype::Fp32 => Some(self.peak_fp32),
            Dtype::Tf32 => self.peak_tf32,
            Dtype::Bf16 => self.peak_bf16,
            Dtype::Int4 => self.peak_int4.or(self.peak_bf16),
            Dtype::Fp16 => Some(self.peak_fp16),
            Dtype::Fp8 => self.peak_fp8,
            Dtype::Int8 => self.peak_int8,
        }
    }

    /// The rate its kernels stream a copy at, bytes/s of traffic: memory bandwidth x the memory
    /// fraction of its efficiency (the device's own, or the shared `Efficiency::DEFAULT`).
    pub fn copy_bandwidth(&self) -> f64 {
        let e = self
            .efficiency
            .unwrap_or(super::roofline::Efficiency::DEFAULT);
        self.memory_bandwidth * e.memory_fraction
    }

    /// Whether `query` names this GPU (case-insensitive, ignoring spaces, '-' and '_').
    pub fn is_named(&self, query: &str) -> bool {
        let q = normalize(query);
        normalize(&self.name) == q || self.aliases.iter().any(|a| normalize(a) == q)
    }
}

fn normalize(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, ' ' | '-' | '_'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Every GPU in the catalog, in the order `clustersim list gpus` prints them.
pub fn catalog() -> &'static [GpuSpec] {
    &CATALOG
}

/// A borrowed spec (a catalog entry) copied into an owned one that runs share.
impl From<&GpuSpec> for std::sync::Arc<GpuSpec> {
    fn from(spec: &GpuSpec) -> Self {
        std::sync::Arc::new(spec.clone())
    }
}

/// Looks a GPU up by name or alias; on failure returns the closest names to suggest.
pub fn find(name: &str) -> Result<&'static GpuSpec, Vec<&'static str>> {
    if let Some(gpu) = CATALOG.iter().find(|g| g.is_named(name)) {
        return Ok(gpu);
    }
    let q = normalize(name);
    let mut scored: Vec<(f64, &'static str)> = CATALOG
        .iter()
        .map(|g| {
            let name: &'static str = &g.name;
            let best = std::iter::once(name)
                .chain(g.aliases.iter().copied())
                .map(|n| strsim::jaro_winkler(&q, &normalize(n)))
                .fold(0.0, f64::max);
            (best, name)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    Err(scored.into_iter().take(3).map(|(_, n)| n).collect())
}

#[cfg(test)]
mod tests {
    use super::catalog::{GB, GIB, TFLOPS};
    use super::*;

    #[test]
    fn names_and_aliases_match_case_insensitively() {
        assert_eq!(find("a100-80gb").unwrap().name, "A100-SXM4-80GB");
        assert_eq!(find("H100").unwrap().name, "H100-SXM5-80GB");
        assert_eq!(find("h100 sxm5 80gb").unwrap().name, "H100-SXM5-80GB");
    }

    #[test]
    fn copies_stream_at_the_devices_own_memory_fraction() {
        let h100 = find("H100").unwrap();
        assert_eq!(h100.copy_bandwidth(), 0.85 * 3350e9);
        let mut custom = h100.clone();
        custom.efficiency = Some(crate::hw::roofline::Efficiency {
            memory_fraction: 0.5,
            ..crate::hw::roofline::Efficiency::DEFAULT
        });
        assert_eq!(custom.copy_bandwidth(), 0.5 * 3350e9);
    }

    #[test]
    fn unknown_names_get_suggestions() {
        let suggestions = find("A10O-80GB").unwrap_err();
        assert_eq!(suggestions[0], "A100-SXM4-80GB");
    }

    /// The GPUs the catalog must cover, each looked up by the alias a user would type.
    const REQUIRED: &[(&str, &str)] = &[
        ("V100", "V100-SXM2-32GB"),
        ("V100S", "V100S-PCIe-32GB"),
        ("v100-32gb", "V100-SXM2-32GB"),
        ("A40", "A40"),
        ("A100-40GB", "A100-SXM4-40GB"),
        ("A100-80GB", "A100-SXM4-80GB"),
        ("A100", "A100-SXM4-80GB"),
        ("A100-SXM4", "A100-SXM4-80GB"),
        ("A100-PCIe", "A100-PCIe-80GB"),
        ("A800", "A800-SXM4-80GB"),
        ("A800 80GB", "A800-SXM4-80GB"),
        ("L20", "L20"),
        ("L40S", "L40S"),
        ("H20", "H20-96GB"),
        ("H100", "H100-SXM5-80GB"),
        ("H100-PCIe", "H100-PCIe-80GB"),
        ("H800", "H800-SXM5-80GB"),
        ("H200", "H200-SXM-141GB"),
        ("B200", "B200-SXM-180GB"),
        ("GB200", "GB200-186GB"),
        ("MI250X", "MI250X"),
        ("MI300X", "MI300X"),
        ("mi300x", "MI300X"),
        ("L4", "L4"),
        ("T4", "T4"),
        ("tesla_t4", "T4"),
    ];

    #[test]
    fn catalog_covers_the_required_gpus() {
        for (alias, name) in REQUIRED {
            match find(alias) {
                Ok(gpu) => assert_eq!(gpu.name, *name, "{alias}"),
                Err(suggestions) => panic!("{alias} not found; closest: {suggestions:?}"),
            }
        }
    }

    #[test]
    fn sixteen_bit_peaks_are_at_least_fp32() {
        for gpu in catalog() {
            assert!(gpu.peak_fp32 > 0.0, "{}", gpu.name);
            assert!(gpu.peak_fp16 >= gpu.peak_fp32, "{}: fp16 < fp32", gpu.name);
            if let Some(bf16) = gpu.peak_bf16 {
                assert!(bf16 >= gpu.peak_fp32, "{}: bf16 < fp32", gpu.name);
            }
            if let Some(tf32) = gpu.peak_tf32 {
                assert!(
                    tf32 >= gpu.peak_fp32 && tf32 <= gpu.peak_fp16,
                    "{}: tf32",
                    gpu.name
                );
            }
        }
    }

    #[test]
    fn bf16_matches_fp16_on_nvidia_from_ampere_on() {
        // Volta and Turing have no BF16 at all; every later NVIDIA part runs BF16 and FP16 at the
        // same tensor-core rate.
        for gpu in catalog().iter().filter(|g| g.vendor == "NVIDIA") {
            match gpu.peak_bf16 {
                Some(bf16) => assert_eq!(bf16, gpu.peak_fp16, "{}", gpu.name),
                None => assert!(
                    ["V100-SXM2-32GB", "V100-SXM2-16GB", "V100S-PCIe-32GB", "T4"]
                        .contains(&&*gpu.name),
                    "{}",
                    gpu.name
                ),
            }
        }
        assert_eq!(find("V100").unwrap().peak_bf16, None);
        assert_eq!(find("T4").unwrap().peak_bf16, None);
    }

    #[test]
    fn fp8_is_about_twice_bf16() {
        for gpu in catalog() {
            if let Some(fp8) = gpu.peak_fp8 {
                let bf16 = gpu.peak_bf16.expect("FP8 parts have BF16");
                let ratio = fp8 / bf16;
                assert!(
                    (1.95..=2.05).contains(&ratio),
                    "{}: fp8/bf16 = {ratio}",
                    gpu.name
                );
            }
        }
        // FP8 only from Hopper, Ada and CDNA3 on.
        for name in ["V100", "T4", "A100", "A100-40GB", "A40", "MI250X"] {
            assert_eq!(find(name).unwrap().peak_fp8, None, "{name}");
        }
    }

    #[test]
    fn tf32_is_absent_where_the_hardware_lacks_it() {
        for name in ["V100", "T4", "MI250X"] {
            assert_eq!(find(name).unwrap().peak_tf32, None, "{name}");
            assert_eq!(find(name).unwrap().peak_flops(Dtype::Tf32), None, "{name}");
        }
    }

    #[test]
    fn memory_and_links_are_positive_and_plausible() {
        for gpu in catalog() {
            assert!(gpu.memory_bytes >= 16 * GIB, "{}", gpu.name);
            assert!(gpu.memory_bytes <= 256 * GIB, "{}", gpu.name);
            assert!(gpu.memory_bandwidth > 100.0 * GB, "{}", gpu.name);
            assert!(gpu.intra_bandwidth > 0.0, "{}", gpu.name);
            assert!(gpu.pcie_bandwidth >= 16.0 * GB, "{}", gpu.name);
            assert!(gpu.tdp_watts > 0.0, "{}", gpu.name);
            assert!(!gpu.source.is_empty(), "{}", gpu.name);
            // Peers never talk faster than the GPU reads its own memory.
            assert!(gpu.intra_bandwidth < gpu.memory_bandwidth, "{}", gpu.name);
            if gpu.intra_link == IntraLinkKind::Pcie {
                assert_eq!(gpu.intra_bandwidth, gpu.pcie_bandwidth, "{}", gpu.name);
            }
        }
        let gib = |name: &str| find(name).unwrap().memory_bytes / GIB;
        assert_eq!(gib("H200"), 141);
        assert_eq!(gib("MI300X"), 192);
        assert_eq!(gib("V100"), 32);
    }

    #[test]
    fn link_kinds_follow_the_usual_servers() {
        let kind = |name: &str| find(name).unwrap().intra_link;
        for name in [
            "A100",
            "A100-40GB",
            "A800",
            "H100",
            "H800",
            "H20",
            "H200",
            "B200",
            "GB200",
        ] {
            assert_eq!(kind(name), IntraLinkKind::NvSwitch, "{name}");
        }
        for name in ["V100", "MI250X", "MI300X", "MI325X"] {
            assert_eq!(kind(name), IntraLinkKind::Mesh, "{name}");
        }
        for name in [
            "A40",
            "L20",
            "L40S",
            "L4",
            "T4",
            "H100-PCIe",
            "A100-PCIe",
            "V100S",
        ] {
            assert_eq!(kind(name), IntraLinkKind::Pcie, "{name}");
        }
        assert_eq!(find("H800").unwrap().intra_bandwidth, 200.0 * GB);
        assert_eq!(find("A800").unwrap().intra_bandwidth, 200.0 * GB);
        assert_eq!(find("MI300X").unwrap().intra_bandwidth, 448.0 * GB);
    }

    #[test]
    fn aliases_are_unambiguous() {
        for gpu in catalog() {
            for alias in std::iter::once(&*gpu.name).chain(gpu.aliases.iter().copied()) {
                let owners: Vec<_> = catalog().iter().filter(|g| g.is_named(alias)).collect();
                assert_eq!(owners.len(), 1, "{alias} names {} GPUs", owners.len());
            }
        }
    }

    #[test]
    fn tpu_v3_has_bf16_only_and_four_ici_links() {
        let tpu = find("tpu v3").unwrap();
        assert_eq!(tpu.name, "TPU-v3");
        assert_eq!(tpu.peak_flops(Dtype::Bf16), Some(123.0 * TFLOPS));
        assert_eq!(tpu.peak_flops(Dtype::Fp8), None);
        assert_eq!(tpu.memory_bytes, 32 * GIB);
        // 1,024 chips x 4 links x 82 GB/s: the Cloud page's 340 TB/s of pod all-reduce bandwidth.
        let pod = 1024.0 * tpu.intra_bandwidth;
        assert!((pod / 340e12 - 1.0).abs() < 0.02, "{pod}");
    }
}
