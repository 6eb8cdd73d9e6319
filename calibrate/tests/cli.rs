//! End-to-end checks of the `clustersim-calibrate` binary: help, usage errors, and `devices` on
//! whatever machine runs the tests. The expected outcome of `devices` is worked out here from the
//! driver itself (through cudarc, checking for libcuda first), so the same tests pass on a machine
//! without CUDA (exit 2 and the no-driver message) and on a GPU machine (exit 0 and the names the
//! driver reports). They do not check clock or memory figures, which only the driver knows.

use cudarc::driver::result;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clustersim-calibrate"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What `devices` should find on this machine.
enum Machine {
    /// libcuda cannot be loaded.
    NoDriver,
    /// libcuda loads but initialisation fails or no device is present.
    NoUsableGpu,
    /// The driver reports these device names, in ordinal order.
    Gpus(Vec<String>),
}

fn machine() -> Machine {
    // SAFETY: only tries to dlopen libcuda; nothing below runs unless it loads.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Machine::NoDriver;
    }
    if result::init().is_err() {
        return Machine::NoUsableGpu;
    }
    let count = result::device::get_count().unwrap_or(0);
    if count <= 0 {
        return Machine::NoUsableGpu;
    }
    Machine::Gpus(
        (0..count)
            .map(|i| {
                result::device::get(i)
                    .and_then(result::device::get_name)
                    .expect("the driver names its device")
            })
            .collect(),
    )
}

fn assert_no_panic(out: &Output) {
    let stderr = text(&out.stderr);
    assert!(
        !stderr.contains("panicked"),
        "panic text in stderr:\n{stderr}"
    );
}

fn check_devices(json: bool) {
    let args: &[&str] = if json {
        &["devices", "--json"]
    } else {
        &["devices"]
    };
    let out = run(args);
    assert_no_panic(&out);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    let catalog_line =
        "clustersim-calibrate: the simulator uses the datasheet figures of its GPU catalog: ";
    match machine() {
        Machine::NoDriver => {
            assert_eq!(out.status.code(), Some(2), "stderr:\n{stderr}");
            let lines: Vec<&str> = stderr.lines().collect();
            assert_eq!(lines.len(), 2, "stderr:\n{stderr}");
            assert_eq!(
                lines[0],
                "clustersim-calibrate: no CUDA driver found (libcuda.so could not be loaded); \
                 nothing to measure on this machine."
            );
            assert!(lines[1].starts_with(catalog_line), "{stderr}");
            for gpu in clustersim::hw::gpu::catalog() {
                assert!(
                    lines[1].contains(gpu.name),
                    "{} missing:\n{stderr}",
                    gpu.name
                );
            }
            assert!(stdout.is_empty(), "stdout:\n{stdout}");
        }
        Machine::NoUsableGpu => {
            assert_eq!(out.status.code(), Some(2), "stderr:\n{stderr}");
            assert!(
                stderr.contains("nothing to measure on this machine."),
                "{stderr}"
            );
            assert!(stderr.contains(catalog_line), "{stderr}");
        }
        Machine::Gpus(names) => {
            assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
            if json {
                check_json_devices(&stdout, &names);
            } else {
                for name in &names {
                    assert!(stdout.contains(name), "{name} missing:\n{stdout}");
                }
            }
        }
    }
}

#[test]
fn devices_reports_what_the_driver_sees() {
    check_devices(false);
}

/// The JSON listing parses, and its devices are the driver's, by ordinal and name.
fn check_json_devices(stdout: &str, names: &[String]) {
    assert!(
        stdout.starts_with('{') && stdout.ends_with("}\n"),
        "{stdout}"
    );
    let v: serde_json::Value = serde_json::from_str(stdout).expect("stdout is JSON");
    let devices = v["devices"].as_array().expect("a devices array");
    assert_eq!(devices.len(), names.len(), "{stdout}");
    for (i, (device, name)) in devices.iter().zip(names).enumerate() {
        assert_eq!(device["index"], i, "{stdout}");
        assert_eq!(device["name"], name.as_str(), "{stdout}");
    }
    assert!(v["driver_version"].is_string(), "{stdout}");
    assert!(v["driver_version_raw"].is_i64(), "{stdout}");
    let libraries = v["libraries"].as_object().expect("a libraries object");
    for key in ["cublas", "nccl", "nvrtc"] {
        assert!(
            libraries
                .get(key)
                .is_some_and(serde_json::Value::is_boolean),
            "{key} missing:\n{stdout}"
        );
    }
}

#[test]
fn devices_json_reports_what_the_driver_sees() {
    check_devices(true);
}

#[test]
fn help_exits_zero_and_lists_devices() {
    let out = run(&["--help"]);
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("devices"), "{stdout}");
    assert!(stdout.contains("Exit status"), "{stdout}");
}

#[test]
fn devices_help_mentions_json() {
    let out = run(&["devices", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("--json"));
}

#[test]
fn no_subcommand_prints_help() {
    let out = run(&[]);
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("Usage:") && stderr.contains("devices"),
        "{stderr}"
    );
}

#[test]
fn unknown_subcommand_is_a_usage_error() {
    let out = run(&["frobnicate"]);
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unrecognized subcommand"));
}
