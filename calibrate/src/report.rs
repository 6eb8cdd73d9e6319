//! Rendering of what [`crate::probe`] found: a plain-text table, a JSON document, and the
//! message for a machine with nothing to measure.
//!
//! Pure functions from probe results to strings; they print nothing and query nothing, so they
//! are tested with hand-built inventories. Values the driver did not report are shown as such
//! ("not reported" in text, `null` in JSON), never filled in. JSON is written by hand (the crate
//! needs no more than a flat object and a string escaper); it keeps the driver's own units
//! (bytes, kHz) so that nothing is rounded away.
//!
//! Deliberately ignored: colour, terminal width, localisation, and any schema versioning of the
//! JSON (it is a listing, not yet a calibration profile).

use crate::probe::{DeviceInfo, Inventory, Library, ProbeError};
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
    ]
    .map(String::from);
    let rows: Vec<[String; 8]> = inv.devices.iter().map(device_row).collect();
    let mut widths = header.clone().map(|h| h.len());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
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
    let opt = |v: Option<u32>| v.map_or_else(|| String::from("null"), |v| v.to_string());
    let mut out = String::from("{\n");
    let _ = writeln!(
        out,
        "  \"driver_version\": {},",
        json_string(&driver_version(inv.driver_version))
    );
    let _ = writeln!(out, "  \"driver_version_raw\": {},", inv.driver_version);
    out.push_str("  \"devices\": [");
    for (i, d) in inv.devices.iter().enumerate() {
        out.push_str(if i == 0 { "\n" } else { ",\n" });
        let fields = [
            ("index", d.index.to_string()),
            ("name", json_string(&d.name)),
            (
                "compute_capability",
                json_string(&format!(
                    "{}.{}",
                    d.compute_capability.0, d.compute_capability.1
                )),
            ),
            ("sm_count", d.sm_count.to_string()),
            ("memory_bytes", d.memory_bytes.to_string()),
            ("max_sm_clock_khz", opt(d.max_sm_clock_khz)),
            ("memory_clock_khz", opt(d.memory_clock_khz)),
            ("memory_bus_width_bits", opt(d.memory_bus_width_bits)),
        ];
        let body: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("      \"{k}\": {v}"))
            .collect();
        let _ = write!(out, "    {{\n{}\n    }}", body.join(",\n"));
    }
    out.push_str(if inv.devices.is_empty() {
        "],\n"
    } else {
        "\n  ],\n"
    });
    out.push_str("  \"libraries\": {");
    let libs: Vec<String> = inv
        .libraries
        .iter()
        .map(|l| format!("\n    {}: {}", json_string(l.key), l.loadable))
        .collect();
    out.push_str(&libs.join(","));
    out.push_str(if libs.is_empty() { "}\n" } else { "\n  }\n" });
    out.push_str("}\n");
    out
}

/// A JSON string literal for `s`.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// What to print to stderr when probing failed, one line per entry. A machine with nothing to
/// measure gets the reason, then the names of the GPUs whose datasheet figures the simulator uses.
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
    let names: Vec<&str> = clustersim::hw::gpu::catalog()
        .iter()
        .map(|g| g.name)
        .collect();
    vec![
        format!("{PROG}: {reason}"),
        format!(
            "{PROG}: the simulator uses the datasheet figures of its GPU catalog: {}.",
            names.join(", ")
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
    fn json_is_complete_and_escaped() {
        let json = devices_json(&inventory());
        for needle in [
            "\"driver_version\": \"12.8\"",
            "\"driver_version_raw\": 12080",
            "\"name\": \"Test GPU \\\"A\\\"\"",
            "\"compute_capability\": \"9.0\"",
            "\"sm_count\": 132",
            "\"memory_bytes\": 85899345920",
            "\"max_sm_clock_khz\": 1980000",
            "\"max_sm_clock_khz\": null",
            "\"memory_bus_width_bits\": null",
            "\"cublas\": true",
            "\"nccl\": false",
        ] {
            assert!(json.contains(needle), "missing {needle:?} in\n{json}");
        }
        assert!(json.starts_with('{') && json.ends_with("}\n"));
        // Brackets balance outside strings (a cheap structural check without a JSON parser).
        let (mut depth, mut in_str, mut escaped) = (0i32, false, false);
        for c in json.chars() {
            match (in_str, escaped, c) {
                (true, true, _) => escaped = false,
                (true, false, '\\') => escaped = true,
                (_, false, '"') => in_str = !in_str,
                (false, _, '{' | '[') => depth += 1,
                (false, _, '}' | ']') => depth -= 1,
                _ => {}
            }
            assert!(depth >= 0);
        }
        assert_eq!((depth, in_str), (0, false));
        assert!(!json.contains(",\n  ]") && !json.contains(",\n    }"));
    }

    #[test]
    fn json_string_escapes_controls() {
        assert_eq!(json_string("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
        assert_eq!(json_string("H100 80GB HBM3"), "\"H100 80GB HBM3\"");
    }

    #[test]
    fn no_driver_message_names_the_catalog() {
        let lines = failure_lines(&ProbeError::NoDriver);
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0],
            "clustersim-calibrate: no CUDA driver found (libcuda.so could not be loaded); \
             nothing to measure on this machine."
        );
        assert!(lines[1].contains("datasheet figures"));
        for gpu in clustersim::hw::gpu::catalog() {
            assert!(lines[1].contains(gpu.name), "{} missing", gpu.name);
        }
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
