//! The machine and the invocation a calibration run records for its provenance: the device as
//! the driver names it, the catalog GPU that name stands for, driver, kernel module and library
//! versions, and when the run started.

use clustersim::hw::gpu::{self, GpuSpec};

/// What is known about the machine and the invocation, for provenance.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunInfo {
    pub tool_version: String,
    /// The command line as typed.
    pub command: String,
    pub started_unix_s: u64,
    pub device_index: usize,
    pub device_count: usize,
    pub device_name: String,
    pub compute_capability: (i32, i32),
    pub sm_count: i32,
    pub memory_bytes: u64,
    pub l2_bytes: Option<u64>,
    pub max_sm_clock_khz: Option<u32>,
    pub memory_clock_khz: Option<u32>,
    /// `cuDriverGetVersion`: 1000 * major + 10 * minor.
    pub driver_api: i32,
    /// The kernel module's version ("580.159.03"), when /proc says it.
    pub kernel_module: Option<String>,
    /// cuBLAS and cuBLASLt versions as loaded ("13.1.0"), when they loaded.
    pub cublas: Option<String>,
    pub cublaslt: Option<String>,
}

/// "580.159.03" from the text of /proc/driver/nvidia/version.
pub fn parse_kernel_module_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("NVRM version"))?;
    line.split_whitespace()
        .find(|t| {
            t.starts_with(|c: char| c.is_ascii_digit())
                && t.contains('.')
                && t.chars().all(|c| c.is_ascii_digit() || c == '.')
        })
        .map(str::to_string)
}

/// "13.1.0" for cuBLAS's 130100 (major * 10000 + minor * 100 + patch since cuBLAS 11.x's
/// successors; 11402 in the older major * 1000 + minor * 100 + patch is 11.4.2).
pub fn library_version(v: u64) -> String {
    let (major, rest) = if v >= 100_000 {
        (v / 10_000, v % 10_000)
    } else {
        (v / 1000, v % 1000)
    };
    format!("{major}.{}.{}", rest / 100, rest % 100)
}

/// "12.8" for the driver's 12080.
pub fn driver_api_version(raw: i32) -> String {
    format!("{}.{}", raw / 1000, (raw % 1000) / 10)
}

/// ISO 8601 UTC, to the second, of a Unix time.
pub fn utc_timestamp(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        (secs % 3600) / 60,
        secs % 60
    )
}

/// Driver names that are not catalog names or aliases, and the catalog GPU they are.
const DRIVER_NAMES: &[(&str, &str)] = &[
    ("H100 80GB HBM3", "H100-SXM5-80GB"),
    ("H100 PCIe", "H100-PCIe-80GB"),
    ("H800 80GB HBM3", "H800-SXM5-80GB"),
];

/// The catalog GPU of a device as the driver names it ("NVIDIA H100 80GB HBM3"), if the name
/// says which one unambiguously.
pub fn catalog_gpu(device_name: &str) -> Option<&'static GpuSpec> {
    let name = device_name.trim();
    let bare = name
        .strip_prefix("NVIDIA ")
        .or_else(|| name.strip_prefix("nvidia "))
        .unwrap_or(name);
    if let Ok(spec) = gpu::find(bare) {
        return Some(spec);
    }
    DRIVER_NAMES
        .iter()
        .find(|(driver, _)| driver.eq_ignore_ascii_case(bare))
        .and_then(|(_, catalog)| gpu::find(catalog).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc_timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_timestamp(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_timestamp(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(utc_timestamp(1_795_000_000), "2026-11-18T11:06:40Z");
    }

    #[test]
    fn versions() {
        assert_eq!(library_version(130_100), "13.1.0");
        assert_eq!(library_version(120_904), "12.9.4");
        assert_eq!(library_version(11_402), "11.4.2");
        assert_eq!(driver_api_version(13000), "13.0");
        let proprietary = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.03  Thu Oct  9 \
                           2025\nGCC version:  gcc version 12.2.0";
        assert_eq!(
            parse_kernel_module_version(proprietary).as_deref(),
            Some("580.159.03")
        );
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release \
                    Build  (dvs-builder@U16-I3-B03-4-3)  Thu Jan 16 2025";
        assert_eq!(
            parse_kernel_module_version(open).as_deref(),
            Some("570.86.15")
        );
        assert_eq!(parse_kernel_module_version("nothing here"), None);
    }

    #[test]
    fn driver_names_map_to_the_catalog() {
        let name = |d: &str| catalog_gpu(d).map(|g| &*g.name);
        assert_eq!(name("NVIDIA H200"), Some("H200-SXM-141GB"));
        assert_eq!(name("NVIDIA H100 80GB HBM3"), Some("H100-SXM5-80GB"));
        assert_eq!(name("NVIDIA H100 PCIe"), Some("H100-PCIe-80GB"));
        assert_eq!(name("NVIDIA A100-SXM4-80GB"), Some("A100-SXM4-80GB"));
        assert_eq!(name("NVIDIA A100-SXM4-40GB"), Some("A100-SXM4-40GB"));
        assert_eq!(name("NVIDIA A100 80GB PCIe"), Some("A100-PCIe-80GB"));
        assert_eq!(name("Tesla V100-SXM2-32GB"), Some("V100-SXM2-32GB"));
        // Not in the catalog, or ambiguous: no guess.
        assert_eq!(name("NVIDIA H100 NVL"), None);
        assert_eq!(name("NVIDIA A100-PCIE-40GB"), None);
        assert_eq!(name("NVIDIA GeForce RTX 4090"), None);
    }
}
