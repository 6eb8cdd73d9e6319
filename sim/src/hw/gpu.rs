//! The GPU catalog: datasheet figures of the accelerators people train and serve on.
//!
//! Every figure is a vendor datasheet number (dense, i.e. without structured sparsity) with its
//! source named in `source`. Measured efficiencies are not here: they belong to the cost model
//! (`hw::roofline`) and to calibration profiles.

use super::dtype::Dtype;

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

/// Datasheet figures of one GPU model.
#[derive(Clone, Debug)]
pub struct GpuSpec {
    /// The vendor's spelling, e.g. "A100-SXM4-80GB", "H100-SXM5-80GB".
    pub name: &'static str,
    /// Other names users type; matched case-insensitively, like `name`.
    pub aliases: &'static [&'static str],
    pub vendor: &'static str,
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
    /// Host link (PCIe) bandwidth per direction, bytes/s.
    pub pcie_bandwidth: f64,
    /// Board power, watts.
    pub tdp_watts: f64,
    /// Where the figures come from.
    pub source: &'static str,
}

impl GpuSpec {
    /// Dense peak for arithmetic in `dtype`, or `None` where the GPU has no such units. INT4
    /// weights are dequantised and computed in 16-bit, so they map to the 16-bit peak.
    pub fn peak_flops(&self, dtype: Dtype) -> Option<f64> {
        match dtype {
            Dtype::Fp32 => Some(self.peak_fp32),
            Dtype::Tf32 => self.peak_tf32,
            Dtype::Bf16 | Dtype::Int4 => self.peak_bf16,
            Dtype::Fp16 => Some(self.peak_fp16),
            Dtype::Fp8 => self.peak_fp8,
            Dtype::Int8 => self.peak_int8,
        }
    }

    /// Whether `query` names this GPU (case-insensitive, ignoring spaces, '-' and '_').
    pub fn is_named(&self, query: &str) -> bool {
        let q = normalize(query);
        normalize(self.name) == q || self.aliases.iter().any(|a| normalize(a) == q)
    }
}

fn normalize(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, ' ' | '-' | '_'))
        .flat_map(char::to_lowercase)
        .collect()
}

const GB: f64 = 1e9;
const TFLOPS: f64 = 1e12;
const GIB: u64 = 1 << 30;

static CATALOG: &[GpuSpec] = &[
    GpuSpec {
        name: "A100-SXM4-80GB",
        aliases: &["A100-80GB", "A100 80GB", "A100"],
        vendor: "NVIDIA",
        peak_fp32: 19.5 * TFLOPS,
        peak_tf32: Some(156.0 * TFLOPS),
        peak_bf16: Some(312.0 * TFLOPS),
        peak_fp16: 312.0 * TFLOPS,
        peak_fp8: None,
        peak_int8: Some(624.0 * TFLOPS),
        memory_bytes: 80 * GIB,
        memory_bandwidth: 2039.0 * GB,
        intra_link: IntraLinkKind::NvSwitch,
        intra_bandwidth: 300.0 * GB,
        pcie_bandwidth: 32.0 * GB,
        tdp_watts: 400.0,
        source: "NVIDIA A100 Tensor Core GPU datasheet (2021), SXM4 80GB column",
    },
    GpuSpec {
        name: "H100-SXM5-80GB",
        aliases: &["H100-SXM", "H100 SXM", "H100-80GB", "H100"],
        vendor: "NVIDIA",
        peak_fp32: 67.0 * TFLOPS,
        peak_tf32: Some(494.7 * TFLOPS),
        peak_bf16: Some(989.4 * TFLOPS),
        peak_fp16: 989.4 * TFLOPS,
        peak_fp8: Some(1978.9 * TFLOPS),
        peak_int8: Some(1978.9 * TFLOPS),
        memory_bytes: 80 * GIB,
        memory_bandwidth: 3350.0 * GB,
        intra_link: IntraLinkKind::NvSwitch,
        intra_bandwidth: 450.0 * GB,
        pcie_bandwidth: 64.0 * GB,
        tdp_watts: 700.0,
        source: "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 SXM column (dense figures)",
    },
];

/// Every GPU in the catalog, in the order `clustersim list gpus` prints them.
pub fn catalog() -> &'static [GpuSpec] {
    CATALOG
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
            let best = std::iter::once(g.name)
                .chain(g.aliases.iter().copied())
                .map(|n| strsim::jaro_winkler(&q, &normalize(n)))
                .fold(0.0, f64::max);
            (best, g.name)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    Err(scored.into_iter().take(3).map(|(_, n)| n).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_match_case_insensitively() {
        assert_eq!(find("a100-80gb").unwrap().name, "A100-SXM4-80GB");
        assert_eq!(find("H100").unwrap().name, "H100-SXM5-80GB");
        assert_eq!(find("h100 sxm5 80gb").unwrap().name, "H100-SXM5-80GB");
    }

    #[test]
    fn unknown_names_get_suggestions() {
        let suggestions = find("A10O-80GB").unwrap_err();
        assert_eq!(suggestions[0], "A100-SXM4-80GB");
    }

    #[test]
    fn aliases_are_unambiguous() {
        for gpu in catalog() {
            for alias in std::iter::once(gpu.name).chain(gpu.aliases.iter().copied()) {
                let owners: Vec<_> = catalog().iter().filter(|g| g.is_named(alias)).collect();
                assert_eq!(owners.len(), 1, "{alias} names {} GPUs", owners.len());
            }
        }
    }
}
