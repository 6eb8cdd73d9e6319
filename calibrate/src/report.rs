//! Rendering of what [`crate::probe`] found: a plain-text table, a JSON document, and the
//! message for a machine with nothing to measure.
//!
//! Pure functions from probe results to strings; they print nothing and query nothing, so they
//! are tested with hand-built inventories. Values the driver did not report are shown as such
//! ("not reported" in text, `null` in JSON), never filled in. JSON is written by serde_json from
//! small report structs that mirror the probe's types (the probe's types stay free of serde); it
//! keeps the driver's own units (bytes, kHz) so that nothing is rounded away.
//!
//! Deliberately ignored: colour, terminal width, localisation, and any schema versioning of the
//! JSON (it is a listing, not yet a calibration profile).

use crate::probe::{DeviceInfo, Inventory, Library, ProbeError};
use crate::table::write_table;
use serde::{Serialize, Serializer};
use std::fmt::Write as _;

/// Prefix of every line this tool writes to stderr.
pub const PROG: &str = "clustersim-calibrate";

const GIB: f64 = (1u64 << 30) as f64;

/// "12.4" for the driver's 12040.
pub fn driver_version(raw: i32) -> String {
    format!("{}.{}", raw / 1000, (raw % 1000) / 10)
}

/// The human-readable listing.
pub fn devices_text(inv: &Inventory) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "CUDA driver {} ({})",
        driver_version(inv.driver_version),
        inv.driver_version
    );
    let header = [
        "GPU",
        "name",
        "cc",
        "SMs",
        "memory",
        "max SM clock",
        "memory clock",
        "memory bus",
    ];
    let rows: Vec<[String; 8]> = inv.devices.iter().map(device_row).collect();
    write_table(&mut out, "", header, &rows);
    let _ = writeln!(out, "Libraries (as cudarc loads them):");
    let name_width = inv
        .libraries
        .iter()
        .map(|l| l.name.len())
        .max()
        .unwrap_or(0);
    for lib in &inv.libraries {
        let _ = writeln!(out, "  {:<name_width$}  {}", lib.name, library_status(lib));
    }
    out
}

fn device_row(d: &DeviceInfo) -> [String; 8] {
    let mhz = |khz: Option<u32>| match khz {
        Some(k) => format!("{} MHz", k / 1000),
        None => String::from("not reported"),
    };
    [
        d.index.to_string(),
        d.name.clone(),
        format!("{}.{}", d.compute_capability.0, d.compute_capability.1),
        d.sm_count.to_string(),
        format!("{:.1} GiB", d.memory_bytes as f64 / GIB),
        mhz(d.max_sm_clock_khz),
        mhz(d.memory_clock_khz),
        match d.memory_bus_width_bits {
            Some(b) => format!("{b}-bit"),
            None => String::from("not reported"),
        },
    ]
}

fn library_status(lib: &Library) -> String {
    if lib.loadable {
        String::from("loadable")
    } else if lib.searched.is_empty() {
        String::from("not found")
    } else {
        format!(
            "not found (cudarc looks for {}; put a directory holding one of these on LD_LIBRARY_PATH)",
            lib.searched.join(", ")
        )
    }
}

/// The listing as one JSON object, ending in a newline.
pub fn devices_json(inv: &Inventory) -> String {
    let listing = Listing {
        driver_version: driver_version(inv.driver_version),
        driver_version_raw: inv.driver_version,
        devices: inv.devices.iter().map(Device::from).collect(),
        libraries: Libraries(&inv.libraries),
    };
    let mut out = serde_json::to_string_pretty(&listing)
        .expect("the listing has only string keys and plain values, so it always serializes");
    out.push('\n');
    out
}

/// The JSON form of an [`Inventory`]: the driver version both as "12.8" and as the driver's
/// integer, the devices, and the libraries as an object from cudarc's key to loadability.
#[derive(Serialize)]
struct Listing<'a> {
    driver_version: String,
    driver_version_raw: i32,
    devices: Vec<Device<'a>>,
    libraries: Libraries<'a>,
}

/// The JSON form of a [`DeviceInfo`]: the compute capability as "9.0", everything else as the
/// driver reported it (bytes, kHz, bits; `null` where it reported nothing).
#[derive(Serialize)]
struct Device<'a> {
    index: usize,
    name: &'a str,
    compute_capability: String,
    sm_count: i32,
    memory_bytes: u64,
    max_sm_clock_khz: Option<u32>,
    memory_clock_khz: Option<u32>,
    memory_bus_width_bits: Option<u32>,
}

impl<'a> From<&'a DeviceInfo> for Device<'a> {
    fn from(d: &'a DeviceInfo) -> Self {
        Device {
            index: d.index,
            name: &d.name,
            compute_capability: format!("{}.{}", d.compute_capability.0, d.compute_capability.1),
            sm_count: d.sm_count,
            memory_bytes: d.memory_bytes,
            max_sm_clock_khz: d.max_sm_clock_khz,
            memory_clock_khz: d.memory_clock_khz,
            memory_bus_width_bits: d.memory_bus_width_bits,
        }
    }
}

/// The libraries as one JSON object, `{"cublas": true, ...}`, in the probe's order.
struct Libraries<'a>(&'a [Library]);

impl Serialize for Libraries<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|lib| (lib.key, lib.loadable)))
    }
}

/// What to print to stderr when probing failed, one line per entry. A machine with nothing to
/// measure gets the reason, then one line naming the shipped profiles the simulator can use
/// instead of measurements.
pub fn failure_lines(err: &ProbeError) -> Vec<String> {
    const NOTHING: &str = "nothing to measure on this machine.";
    let reason = match err {
        ProbeError::NoDriver => {
            format!("no CUDA driver found (libcuda.so could not be loaded); {NOTHING}")
        }
        ProbeError::MissingSymbol(symbol) => format!(
            "the CUDA driver (libcuda.so) loaded but has no entry point {symbol}; {NOTHING}"
        ),
        ProbeError::InitFailed(failure) => {
            format!("the CUDA driver failed to initialise: {failure}; {NOTHING}")
        }
        ProbeError::NoDevice { driver_version: v } => format!(
            "the CUDA driver ({}) reports no GPU; {NOTHING}",
            driver_version(*v)
        ),
        ProbeError::QueryFailed { what, failure } => {
            return vec![format!(
                "{PROG}: the CUDA driver could not report {what}: {failure}"
            )];
        }
    };
    vec![
        format!("{PROG}: {reason}"),
        format!(
            "{PROG}: {}",
            crate::profiles::one_line(&crate::profiles::shipped())
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::DriverFailure;

    fn inventory() -> Inventory {
        Inventory {
            driver_version: 12080,
            devices: vec![
                DeviceInfo {
                    index: 0,
                    name: "Test GPU \"A\"".into(),
                    compute_capability: (9, 0),
                    sm_count: 132,
                    memory_bytes: 80 << 30,
                    max_sm_clock_khz: Some(1_980_000),
                    memory_clock_khz: Some(2_619_000),
                    memory_bus_width_bits: Some(5120),
                },
                DeviceInfo {
                    index: 1,
                    name: "Other".into(),
                    compute_capability: (8, 6),
                    sm_count: 84,
                    memory_bytes: 3 << 29,
                    max_sm_clock_khz: None,
                    memory_clock_khz: None,
                    memory_bus_width_bits: None,
                },
            ],
            libraries: vec![
                Library {
                    name: "cuBLAS",
                    key: "cublas",
                    loadable: true,
                    searched: vec!["libcublas.so".into()],
                },
                Library {
                    name: "NCCL",
                    key: "nccl",
                    loadable: false,
                    searched: vec!["libnccl.so".into(), "libnccl.so.13".into()],
                },
            ],
        }
    }

    #[test]
    fn driver_versions() {
        assert_eq!(driver_version(12040), "12.4");
        assert_eq!(driver_version(12080), "12.8");
        assert_eq!(driver_version(13000), "13.0");
        assert_eq!(driver_version(11020), "11.2");
    }

    #[test]
    fn text_lists_every_field_and_says_what_is_missing() {
        let text = devices_text(&inventory());
        assert!(text.starts_with("CUDA driver 12.8 (12080)\n"), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].starts_with("GPU  name"), "{text}");
        for needle in [
            "Test GPU \"A\"",
            "9.0",
            "132",
            "80.0 GiB",
            "1980 MHz",
            "2619 MHz",
            "5120-bit",
            "1.5 GiB",
            "not reported",
            "cuBLAS  loadable",
            "NCCL    not found (cudarc looks for libnccl.so, libnccl.so.13;",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
        // Columns line up under their headers.
        let name_at = lines[1].find("name").unwrap();
        assert!(lines[2][name_at..].starts_with("Test GPU"), "{text}");
        assert!(lines[3][name_at..].starts_with("Other"), "{text}");
        let clock_at = lines[1].find("max SM clock").unwrap();
        assert!(lines[2][clock_at..].starts_with("1980 MHz"), "{text}");
        assert!(lines[3][clock_at..].starts_with("not reported"), "{text}");
    }

    #[test]
    fn json_keeps_the_drivers_units_and_nulls() {
        let json = devices_json(&inventory());
        assert!(json.starts_with('{') && json.ends_with("}\n"), "{json}");
        let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(
            v,
            serde_json::json!({
                "driver_version": "12.8",
                "driver_version_raw": 12080,
                "devices": [
                    {
                        "index": 0,
                        "name": "Test GPU \"A\"",
                        "compute_capability": "9.0",
                        "sm_count": 132,
                        "memory_bytes": 85_899_345_920u64,
                        "max_sm_clock_khz": 1_980_000,
                        "memory_clock_khz": 2_619_000,
                        "memory_bus_width_bits": 5120
                    },
                    {
                        "index": 1,
                        "name": "Other",
                        "compute_capability": "8.6",
                        "sm_count": 84,
                        "memory_bytes": 1_610_612_736u64,
                        "max_sm_clock_khz": null,
                        "memory_clock_khz": null,
                        "memory_bus_width_bits": null
                    }
                ],
                "libraries": { "cublas": true, "nccl": false }
            })
        );
        // Key order is part of the output: the driver first, the probe's order for libraries.
        let keys = [
            "\"driver_version\"",
            "\"driver_version_raw\"",
            "\"devices\"",
            "\"libraries\"",
            "\"cublas\"",
            "\"nccl\"",
        ];
        let at: Vec<usize> = keys.iter().map(|k| json.find(k).unwrap()).collect();
        assert!(at.is_sorted(), "{json}");
    }

    #[test]
    fn json_round_trips_awkward_names() {
        let mut inv = inventory();
        let awkward = "a\"b\\c\nd\u{1}\u{7f} é";
        inv.devices[1].name = awkward.into();
        let v: serde_json::Value = serde_json::from_str(&devices_json(&inv)).expect("valid JSON");
        assert_eq!(v["devices"][1]["name"], awkward);
    }

    #[test]
    fn json_without_devices_or_libraries() {
        let mut inv = inventory();
        inv.devices.clear();
        inv.libraries.clear();
        let json = devices_json(&inv);
        assert!(json.contains("\"devices\": [],\n"), "{json}");
        assert!(json.ends_with("\"libraries\": {}\n}\n"), "{json}");
        let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(v["devices"], serde_json::json!([]));
        assert_eq!(v["libraries"], serde_json::json!({}));
    }

    #[test]
    fn no_driver_message_names_the_shipped_profiles() {
        let lines = failure_lines(&ProbeError::NoDriver);
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0],
            "clustersim-calibrate: no CUDA driver found (libcuda.so could not be loaded); \
             nothing to measure on this machine."
        );
        assert!(
            lines[1].starts_with(
                "clustersim-calibrate: without measurements clustersim has its shipped profiles: "
            ),
            "{}",
            lines[1]
        );
        for name in clustersim::hw::profile::shipped_names() {
            assert!(lines[1].contains(name), "{name} missing");
        }
        assert!(lines[1].contains("datasheet figures"));
    }

    #[test]
    fn other_failures() {
        let failure = DriverFailure {
            name: "CUDA_ERROR_INVALID_DEVICE".into(),
            description: "invalid device ordinal".into(),
        };
        let no_dev = failure_lines(&ProbeError::NoDevice {
            driver_version: 13000,
        });
        assert!(no_dev[0].contains("the CUDA driver (13.0) reports no GPU; nothing to measure"));
        assert_eq!(no_dev.len(), 2);
        let init = failure_lines(&ProbeError::InitFailed(failure.clone()));
        assert!(init[0].contains("failed to initialise: CUDA_ERROR_INVALID_DEVICE"));
        let query = failure_lines(&ProbeError::QueryFailed {
            what: "the name of device 0".into(),
            failure,
        });
        assert_eq!(
            query,
            [
                "clustersim-calibrate: the CUDA driver could not report the name of device 0: \
              CUDA_ERROR_INVALID_DEVICE (invalid device ordinal)"
            ]
        );
    }
}
