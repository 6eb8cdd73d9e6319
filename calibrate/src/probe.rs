//! Device discovery: whether this machine can load the CUDA driver and the libraries the
//! benchmarks will need (cuBLAS, NCCL, NVRTC), and what the driver reports about each GPU.
//!
//! Everything goes through cudarc's dynamically loaded bindings. cudarc panics on first use when
//! a library (or one of its symbols) is missing, so this module checks first: the driver with
//! `is_culib_present`, then each driver symbol it calls, and only then calls into the driver.
//! Every failure becomes a [`ProbeError`]; nothing here panics.
//!
//! It uses the driver API at cudarc's `result` level (`cuInit`, `cuDeviceGet*`,
//! `cuDriverGetVersion`) and deliberately creates no CUDA context: listing devices must not take
//! GPU memory or time from other work on the machine.
//!
//! Deliberately ignored: anything NVML knows and the driver API does not (power, temperature,
//! current clocks, ECC), MIG instances, the interconnect topology (NVLink, PCIe switches), library
//! versions, and measuring anything. `CUDA_VISIBLE_DEVICES` is honoured only in the sense that
//! the driver already applies it: indices are the driver's ordinals as this process sees them.

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys::{self, CUdevice_attribute};

/// The driver entry points this module calls, checked before the first call so that a libcuda
/// without one of them is reported instead of making cudarc panic.
const DRIVER_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceTotalMem_v2",
    "cuDeviceGetAttribute",
    "cuGetErrorName",
    "cuGetErrorString",
];

/// What the driver reports about the machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Inventory {
    /// As `cuDriverGetVersion` returns it: 1000 * major + 10 * minor (12040 is 12.4).
    pub driver_version: i32,
    pub devices: Vec<DeviceInfo>,
    pub libraries: Vec<Library>,
}

/// One GPU as the driver API describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInfo {
    /// The driver's ordinal for this process.
    pub index: usize,
    pub name: String,
    /// (major, minor), e.g. (9, 0) for Hopper.
    pub compute_capability: (i32, i32),
    pub sm_count: i32,
    pub memory_bytes: u64,
    /// Peak SM clock; `None` where the driver does not report it.
    pub max_sm_clock_khz: Option<u32>,
    /// Peak memory clock; `None` where the driver does not report it.
    pub memory_clock_khz: Option<u32>,
    /// Global memory bus width; `None` where the driver does not report it.
    pub memory_bus_width_bits: Option<u32>,
}

/// Whether cudarc can load one of the CUDA libraries.
#[derive(Debug, Clone, PartialEq)]
pub struct Library {
    /// Display name, e.g. "cuBLAS".
    pub name: &'static str,
    /// Short key as cudarc names the library, e.g. "cublas".
    pub key: &'static str,
    pub loadable: bool,
    /// The plain shared-object names cudarc tries for it (`libnccl.so`, `libnccl.so.13`, ...), to
    /// tell the user what to put on `LD_LIBRARY_PATH` when it is missing.
    pub searched: Vec<String>,
}

/// A failed driver call, with the driver's own name and description of the error.
#[derive(Debug, Clone, PartialEq)]
pub struct DriverFailure {
    /// e.g. "CUDA_ERROR_NO_DEVICE".
    pub name: String,
    /// e.g. "no CUDA-capable device is detected".
    pub description: String,
}

impl DriverFailure {
    fn from_error(err: DriverError) -> Self {
        let name = match err.error_name() {
            Ok(s) => s.to_string_lossy().into_owned(),
            Err(_) => format!("{:?}", err.0),
        };
        let description = match err.error_string() {
            Ok(s) => s.to_string_lossy().into_owned(),
            Err(_) => String::from("no description from the driver"),
        };
        DriverFailure { name, description }
    }
}

impl std::fmt::Display for DriverFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.description)
    }
}

/// Why no inventory could be taken.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeError {
    /// libcuda could not be loaded at all.
    NoDriver,
    /// libcuda loaded but lacks an entry point this module calls.
    MissingSymbol(&'static str),
    /// `cuInit` failed for a reason other than the absence of devices.
    InitFailed(DriverFailure),
    /// The driver works but reports no device.
    NoDevice { driver_version: i32 },
    /// A query about a device failed after the driver initialised.
    QueryFailed {
        what: String,
        failure: DriverFailure,
    },
}

impl ProbeError {
    /// True when the machine simply has nothing to measure (no driver, an unusable driver, no
    /// device), as opposed to a driver call failing part-way through.
    pub fn nothing_to_measure(&self) -> bool {
        !matches!(self, ProbeError::QueryFailed { .. })
    }
}

/// Loads the driver and lists the devices and libraries it can see.
pub fn probe() -> Result<Inventory, ProbeError> {
    check_driver()?;
    let driver_version = driver_version()?;
    if let Err(err) = result::init() {
        return Err(if err.0 == sys::CUresult::CUDA_ERROR_NO_DEVICE {
            ProbeError::NoDevice { driver_version }
        } else {
            ProbeError::InitFailed(DriverFailure::from_error(err))
        });
    }
    let count = result::device::get_count().map_err(|e| query_failed("the device count", e))?;
    if count <= 0 {
        return Err(ProbeError::NoDevice { driver_version });
    }
    let devices = (0..count).map(device_info).collect::<Result<_, _>>()?;
    Ok(Inventory {
        driver_version,
        devices,
        libraries: libraries(),
    })
}

/// Fails unless libcuda loads and has every entry point in [`DRIVER_SYMBOLS`].
fn check_driver() -> Result<(), ProbeError> {
    // SAFETY: only tries to dlopen the driver library and drops the handle.
    if !unsafe { sys::is_culib_present() } {
        return Err(ProbeError::NoDriver);
    }
    // SAFETY: `is_culib_present` just succeeded, so `culib` finds the library instead of
    // panicking. Looking a symbol up does not call it; the type is a placeholder.
    let lib = unsafe { sys::culib() };
    for &symbol in DRIVER_SYMBOLS {
        if unsafe { lib.get::<unsafe extern "C" fn()>(symbol) }.is_err() {
            return Err(ProbeError::MissingSymbol(symbol));
        }
    }
    Ok(())
}

fn driver_version() -> Result<i32, ProbeError> {
    let mut version: std::ffi::c_int = 0;
    // SAFETY: the symbol is present (checked), and `cuDriverGetVersion` needs no `cuInit`; it
    // writes one int through the pointer.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .map_err(|e| query_failed("the driver version", e))?;
    Ok(version)
}

fn device_info(ordinal: i32) -> Result<DeviceInfo, ProbeError> {
    let what = |field: &str| format!("the {field} of device {ordinal}");
    let dev = result::device::get(ordinal).map_err(|e| query_failed(&what("handle"), e))?;
    let name = result::device::get_name(dev).map_err(|e| query_failed(&what("name"), e))?;
    // SAFETY: `dev` came from `cuDeviceGet` after a successful `cuInit`.
    let memory_bytes = unsafe { result::device::total_mem(dev) }
        .map_err(|e| query_failed(&what("memory size"), e))?;
    let attr = |a: CUdevice_attribute| {
        // SAFETY: as above.
        unsafe { result::device::get_attribute(dev, a) }
    };
    let required =
        |a: CUdevice_attribute, field: &str| attr(a).map_err(|e| query_failed(&what(field), e));
    // Clocks and bus width are deprecated in recent CUDA and may be unreported (an error or 0).
    let optional = |a: CUdevice_attribute| {
        attr(a)
            .ok()
            .and_then(|v| u32::try_from(v).ok())
            .filter(|&v| v > 0)
    };
    Ok(DeviceInfo {
        index: usize::try_from(ordinal).unwrap_or_default(),
        name,
        compute_capability: (
            required(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                "compute capability",
            )?,
            required(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                "compute capability",
            )?,
        ),
        sm_count: required(
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            "SM count",
        )?,
        memory_bytes: memory_bytes as u64,
        max_sm_clock_khz: optional(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        memory_clock_khz: optional(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        memory_bus_width_bits: optional(
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
        ),
    })
}

fn query_failed(what: &str, err: DriverError) -> ProbeError {
    ProbeError::QueryFailed {
        what: what.to_string(),
        failure: DriverFailure::from_error(err),
    }
}

/// Whether cudarc can load cuBLAS, NCCL and NVRTC. Independent of the driver and of devices.
pub fn libraries() -> Vec<Library> {
    // SAFETY: each call only tries to dlopen the library under cudarc's candidate names and
    // drops the handle.
    let found = unsafe {
        [
            ("cuBLAS", "cublas", cudarc::cublas::sys::is_culib_present()),
            ("NCCL", "nccl", cudarc::nccl::sys::is_culib_present()),
            ("NVRTC", "nvrtc", cudarc::nvrtc::sys::is_culib_present()),
        ]
    };
    found
        .into_iter()
        .map(|(name, key, loadable)| Library {
            name,
            key,
            loadable,
            searched: searched_names(key),
        })
        .collect()
}

/// The plain shared-object names (`libX.so`, `libX.so.N`) among cudarc's candidates for `key`,
/// in cudarc's order, without repeats.
fn searched_names(key: &str) -> Vec<String> {
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
    let plain = format!("{DLL_PREFIX}{key}{DLL_SUFFIX}");
    let mut names: Vec<String> = Vec::new();
    for name in cudarc::get_lib_name_candidates(key) {
        let is_plain = name == plain
            || name
                .strip_prefix(&plain)
                .is_some_and(|rest| rest.starts_with('.'));
        if is_plain && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn nccl_search_names_are_the_plain_sonames_cudarc_tries() {
        let names = searched_names("nccl");
        assert_eq!(names.first().map(String::as_str), Some("libnccl.so"));
        assert!(names.iter().all(|n| n.starts_with("libnccl.so")));
        assert!(names.contains(&"libnccl.so.12".to_string()));
        // The soname NCCL actually ships under; cudarc does not look for it.
        assert!(!names.contains(&"libnccl.so.2".to_string()));
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(unique, names);
    }

    #[test]
    fn libraries_lists_the_three_in_order() {
        let keys: Vec<_> = libraries().iter().map(|l| l.key).collect();
        assert_eq!(keys, ["cublas", "nccl", "nvrtc"]);
    }

    #[test]
    fn probe_never_panics_and_agrees_with_driver_presence() {
        let present = unsafe { sys::is_culib_present() };
        match probe() {
            Err(ProbeError::NoDriver) => assert!(!present),
            other => {
                assert!(present, "got {other:?} without a driver");
                if let Ok(inv) = other {
                    assert!(!inv.devices.is_empty());
                    assert!(inv.driver_version > 0);
                }
            }
        }
    }

    #[test]
    fn only_query_failures_are_not_nothing_to_measure() {
        let failure = DriverFailure {
            name: "CUDA_ERROR_UNKNOWN".into(),
            description: "unknown error".into(),
        };
        assert!(ProbeError::NoDriver.nothing_to_measure());
        assert!(ProbeError::MissingSymbol("cuInit").nothing_to_measure());
        assert!(ProbeError::InitFailed(failure.clone()).nothing_to_measure());
        assert!(
            ProbeError::NoDevice {
                driver_version: 12040
            }
            .nothing_to_measure()
        );
        assert!(
            !ProbeError::QueryFailed {
                what: "x".into(),
                failure,
            }
            .nothing_to_measure()
        );
    }
}
