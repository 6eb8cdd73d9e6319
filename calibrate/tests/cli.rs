//! End-to-end checks of the `clustersim-calibrate` binary: help, usage errors, `devices` and
//! `measure` on whatever machine runs the tests, `profiles`, and `import-vidur` on the shared copy
//! of Vidur's tables. The expected outcome of the GPU subcommands is worked out here from the
//! driver itself (through cudarc, checking for libcuda first), so the same tests pass on a machine
//! without CUDA (exit 2, the no-driver message and the shipped profiles) and on a GPU machine
//! (`devices` lists what the driver reports; `measure`, which takes minutes there, is left to the
//! device check, calibrate/device-check.sh). They do not check clock or memory figures, which
//! only the driver knows.

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

/// The second line of the no-GPU message: the shipped profiles, every one by name.
const PROFILES_LINE: &str =
    "clustersim-calibrate: without measurements clustersim has its shipped profiles: ";

/// On a machine with nothing to measure: exit 2, nothing on stdout, the reason and one line
/// naming every shipped profile on stderr (exactly those two lines without a driver).
fn check_nothing_to_measure(out: &Output, no_driver: bool) {
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "stderr:\n{stderr}");
    assert!(stdout.is_empty(), "stdout:\n{stdout}");
    let lines: Vec<&str> = stderr.lines().collect();
    if no_driver {
        assert_eq!(lines.len(), 2, "stderr:\n{stderr}");
        assert_eq!(
            lines[0],
            "clustersim-calibrate: no CUDA driver found (libcuda.so could not be loaded); \
             nothing to measure on this machine."
        );
    } else {
        assert!(
            stderr.contains("nothing to measure on this machine."),
            "{stderr}"
        );
    }
    let profiles = lines
        .iter()
        .find(|l| l.starts_with(PROFILES_LINE))
        .unwrap_or_else(|| panic!("no profile line:\n{stderr}"));
    for (name, profile) in clustersim::hw::profile::shipped() {
        let origin = if name.ends_with("-vidur") {
            "from Vidur".to_string()
        } else {
            format!("measured {}", &profile.provenance.date[..10])
        };
        let entry = format!(
            "{name} ({}, {} points {origin})",
            profile.gpu,
            profile.points()
        );
        assert!(profiles.contains(&entry), "{entry} missing:\n{stderr}");
    }
}

fn check_devices(json: bool) {
    let args: &[&str] = if json {
        &["devices", "--json"]
    } else {
        &["devices"]
    };
    let out = run(args);
    assert_no_panic(&out);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    match machine() {
        Machine::NoDriver => check_nothing_to_measure(&out, true),
        Machine::NoUsableGpu => check_nothing_to_measure(&out, false),
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

#[test]
fn help_lists_every_subcommand() {
    let out = run(&["--help"]);
    let stdout = text(&out.stdout);
    for sub in ["devices", "profiles", "import-vidur", "measure"] {
        assert!(stdout.contains(sub), "{sub} missing:\n{stdout}");
    }
    let out = run(&["measure", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("--out") && stdout.contains("--quick") && stdout.contains("--gpu"));
}

/// A fresh path under the temporary directory for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("calibrate-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn measure_without_a_gpu_says_so_and_writes_nothing() {
    let dir = scratch("measure");
    let out_dir = dir.join("out");
    let out_arg = out_dir.to_string_lossy().into_owned();
    match machine() {
        Machine::Gpus(names) => {
            println!(
                "{} GPU(s) here ({names:?}): `measure` is left to calibrate/device-check.sh",
                names.len()
            );
        }
        no_gpu => {
            for quick in [true, false] {
                let mut args = vec!["measure", "--out", out_arg.as_str()];
                if quick {
                    args.push("--quick");
                }
                let out = run(&args);
                assert_no_panic(&out);
                check_nothing_to_measure(&out, matches!(no_gpu, Machine::NoDriver));
                assert!(!out_dir.exists(), "measure created {}", out_dir.display());
            }
        }
    }
    // A --gpu that is not in the catalog is a usage error, on any machine.
    let out = run(&["measure", "--out", out_arg.as_str(), "--gpu", "H1OO-SXM"]);
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("unknown GPU \"H1OO-SXM\"") && stderr.contains("H100"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn profiles_lists_the_shipped_profiles() {
    let out = run(&["profiles"]);
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("Calibration profiles compiled into clustersim"),
        "{stdout}"
    );
    for (name, profile) in clustersim::hw::profile::shipped() {
        let row = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing:\n{stdout}"));
        assert!(row.contains(profile.gpu), "{row}");
        assert!(row.contains(&profile.points().to_string()), "{row}");
        assert!(row.contains(&profile.gemm.len().to_string()), "{row}");
        let origin = if name.ends_with("-vidur") {
            "from Vidur".to_string()
        } else {
            format!("measured {}", &profile.provenance.date[..10])
        };
        assert!(row.trim_end().ends_with(&origin), "{row}");
        assert!(stdout.contains(&format!("{name}: {}", profile.provenance.source)));
    }
}

/// The shared copy of Vidur's profiles (the repository sits next to `shared/`).
const VIDUR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/data/vidur-profiles"
);

fn vidur() -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(VIDUR);
    assert!(
        dir.join("compute").is_dir(),
        "Vidur profiles not found at {} (the repository must sit next to a copy of `shared/`); \
         this check must not be skipped",
        dir.display()
    );
    dir
}

/// The percentage after `label` in the read-back report ("max |error| 0.000%").
fn percent_after(stdout: &str, line_start: &str, label: &str) -> f64 {
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(line_start))
        .unwrap_or_else(|| panic!("no line starting {line_start:?}:\n{stdout}"));
    let at = line
        .find(label)
        .unwrap_or_else(|| panic!("{label:?} missing: {line}"))
        + label.len();
    let rest = line[at..].trim_start();
    let end = rest
        .find('%')
        .unwrap_or_else(|| panic!("no % after {label:?}: {line}"));
    rest[..end]
        .parse()
        .unwrap_or_else(|e| panic!("{e}: {line}"))
}

#[test]
fn import_vidur_h100_writes_the_shipped_profile_and_reads_it_back() {
    let dir = scratch("vidur-h100");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("h100.toml");
    let gpu_dir = vidur().join("compute").join("h100");
    let out = run(&[
        "import-vidur",
        gpu_dir.to_str().unwrap(),
        "--out",
        file.to_str().unwrap(),
    ]);
    assert_no_panic(&out);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    println!("{stdout}");
    for needle in [
        "Read 6 Vidur tables of h100 (H100-SXM5-80GB)",
        "meta-llama/Llama-2-7b-hf",
        "Qwen/Qwen-72B",
        "69 weight shapes (n, k)",
        "69 GEMM weight shapes, 17871 points, fp16",
        "It is identical to the shipped profile h100-sxm5-80gb-vidur.",
        "17871 of 17871 distinct (m, n, k) priced from the profile",
    ] {
        assert!(stdout.contains(needle), "{needle:?} missing:\n{stdout}");
    }
    let written = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        Some(written.as_str()),
        clustersim::hw::profile::shipped_text("h100-sxm5-80gb-vidur")
    );
    let merged_max = percent_after(&stdout, "merged source points", "max |error|");
    let merged_median = percent_after(&stdout, "merged source points", "%, median");
    let own_median = percent_after(&stdout, "each model's own rows", "median |error|");
    assert!(
        merged_max <= 3.0 && merged_median <= 3.0 && own_median <= 3.0,
        "{stdout}"
    );
    assert!(stdout.contains("-> pass"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn import_vidur_a100_from_the_root_with_gpu() {
    let dir = scratch("vidur-a100");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("a100.toml");
    let root = vidur();
    let out = run(&[
        "import-vidur",
        root.to_str().unwrap(),
        "--gpu",
        "a100",
        "--out",
        file.to_str().unwrap(),
    ]);
    assert_no_panic(&out);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains("Read 8 Vidur tables of a100 (A100-SXM4-80GB)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("identical to the shipped profile a100-sxm4-80gb-vidur"),
        "{stdout}"
    );
    assert!(percent_after(&stdout, "merged source points", "max |error|") <= 3.0);
    let written = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        Some(written.as_str()),
        clustersim::hw::profile::shipped_text("a100-sxm4-80gb-vidur")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn import_vidur_errors_are_clear() {
    let root = vidur();
    // Two GPUs below: ask which.
    let out = run(&["import-vidur", root.join("compute").to_str().unwrap()]);
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("a100 and h100") && stderr.contains("--gpu"),
        "{stderr}"
    );
    // Nothing there.
    let out = run(&["import-vidur", "/no/such/vidur/dir"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("/no/such/vidur/dir is not a directory"));
    // A GPU this tool does not know: a usage error.
    let out = run(&["import-vidur", root.to_str().unwrap(), "--gpu", "v100"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("a100"), "{}", text(&out.stderr));
    // An unwritable output.
    let out = run(&[
        "import-vidur",
        root.to_str().unwrap(),
        "--gpu",
        "h100",
        "--out",
        "/no/such/dir/x.toml",
    ]);
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("cannot write /no/such/dir/x.toml"),
        "{}",
        text(&out.stderr)
    );
}

/// The device check script: valid bash, and on a machine without a GPU it runs both steps with
/// the binary it is given, logs them and exits with `measure`'s status. (On a GPU machine it
/// would measure for minutes: left to a device session.)
#[test]
fn device_check_script_runs_the_given_binary_and_logs() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/device-check.sh");
    let syntax = Command::new("bash").args(["-n", script]).output().unwrap();
    assert!(syntax.status.success(), "{}", text(&syntax.stderr));
    if let Machine::Gpus(names) = machine() {
        println!("GPUs here ({names:?}): the device check is not run by the test suite");
        return;
    }
    let dir = scratch("device-check");
    let out = Command::new("bash")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_clustersim-calibrate"))
        .env("OUT", &dir)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    let log = std::fs::read_to_string(dir.join("log.txt")).unwrap();
    for needle in [
        "== devices exited with 2",
        "== measure --out",
        "(full plan)",
        "== measure exited with 2",
        "nothing to measure on this machine.",
        PROFILES_LINE,
    ] {
        assert!(log.contains(needle), "{needle:?} missing:\n{log}");
    }
    assert_eq!(log, stdout, "the log holds what was printed");
    // A missing binary: exit 2, said in the log.
    let out = Command::new("bash")
        .arg(script)
        .arg(dir.join("no-such-binary"))
        .env("OUT", &dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let log = std::fs::read_to_string(dir.join("log.txt")).unwrap();
    assert!(log.contains("no executable at"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A layer reference as torch_bench.py writes it: one GPT-style shape.
const LAYERS_JSON: &str = r#"{"tool": "torch_bench.py", "what": "layers", "wall_s": 1.0,
    "environment": {"torch": "2.11.0+cu130", "cuda": "13.0", "device": "NVIDIA H200",
        "date": "2026-11-30T17:47:47Z"},
    "records": [{"kind": "layer", "h": 4096, "heads": 32, "ffn": 16384, "seq": 2048,
        "batch": 2, "mlp": "gelu", "dtype": "bf16",
        "forward": {"median_s": 0.002524, "min_s": 0.0025, "max_s": 0.0026, "reps": 10},
        "backward": {"median_s": 0.00617, "min_s": 0.0061, "max_s": 0.0063, "reps": 10}}]}"#;

/// `validate` against a reference file needs no GPU: the shipped H200 profile predicts the
/// layer, the table and validation.json say by how much, and the exit status follows the 5% bar.
#[test]
fn validate_compares_a_reference_file_with_the_simulator() {
    let dir = scratch("validate");
    std::fs::create_dir_all(&dir).unwrap();
    let reference = dir.join("torch-layers.json");
    std::fs::write(&reference, LAYERS_JSON).unwrap();
    let out = run(&[
        "validate",
        "--profile",
        "h200-sxm-141gb-measured",
        "--reference",
        reference.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("h 4096, 32 heads, ffn 16384, seq 2048 x 2, gelu"),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("validation.json")).unwrap())
            .unwrap();
    let error = json["median_abs_error"].as_f64().unwrap();
    let expected = if error <= 0.05 { 0 } else { 1 };
    assert_eq!(out.status.code(), Some(expected), "{stdout}");
    let row = &json["rows"][0];
    let predicted = row["predicted_forward_s"].as_f64().unwrap();
    assert!((row["forward_error"].as_f64().unwrap() - (predicted / 0.002524 - 1.0)).abs() < 1e-12);
    // A reference of the other kind, and no reference where PyTorch cannot run.
    let kernels = dir.join("k.json");
    std::fs::write(&kernels, LAYERS_JSON.replace("\"layers\"", "\"kernels\"")).unwrap();
    let out = run(&[
        "validate",
        "--profile",
        "h200-sxm-141gb-measured",
        "--reference",
        kernels.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("not `layers`"),
        "{}",
        text(&out.stderr)
    );
    if matches!(machine(), Machine::NoDriver) {
        let out = run(&[
            "validate",
            "--profile",
            "h200-sxm-141gb-measured",
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("--reference FILE"),
            "{}",
            text(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `import-torch` adds PyTorch's tables to a profile file; the result loads and prices attention
/// from them.
#[test]
fn import_torch_adds_attention_and_elementwise_tables() {
    let dir = scratch("import-torch");
    std::fs::create_dir_all(&dir).unwrap();
    let base = dir.join("base.toml");
    std::fs::write(
        &base,
        clustersim::hw::profile::shipped_text("h100-sxm5-80gb-vidur").unwrap(),
    )
    .unwrap();
    let kernels = dir.join("torch-kernels.json");
    std::fs::write(
        &kernels,
        r#"{"what": "kernels", "environment": {"torch": "2.11", "device": "NVIDIA H100"},
        "records": [
          {"kind": "attention", "pass": "forward", "batch": 4, "heads": 32, "q_len": 4096,
           "kv_len": 4096, "head_dim": 128, "causal": true, "dtype": "bf16", "median_s": 0.002},
          {"kind": "elementwise", "op": "layernorm", "pass": "forward", "tokens": 4096,
           "width": 4096, "dtype": "bf16", "bytes": 67108864, "median_s": 4.2e-5}]}"#,
    )
    .unwrap();
    let written = dir.join("with-torch.toml");
    let out = run(&[
        "import-torch",
        kernels.to_str().unwrap(),
        "--profile",
        base.to_str().unwrap(),
        "--out",
        written.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("1 attention tables (1 points)"));
    let p = clustersim::files::profile(&written).unwrap();
    assert_eq!(p.attention.len(), 1);
    assert_eq!(p.elementwise.len(), 1);
    let k = clustersim::hw::Kernel::Attention {
        batch_heads: 128,
        q_len: 4096,
        kv_len: 4096,
        head_dim: 128,
        causal: true,
        backward: false,
        dtype: clustersim::hw::Dtype::Bf16,
    };
    let t = p.seconds(p.gpu_spec(), &k).unwrap();
    assert!((t / 0.002 - 1.0).abs() < 1e-9, "{t}");
    let _ = std::fs::remove_dir_all(&dir);
}
