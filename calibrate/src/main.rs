//! clustersim-calibrate: the command line of the tool that measures a real GPU machine for
//! clustersim and writes calibration profiles.
//!
//! Subcommands: `devices` (what the CUDA driver sees), `profiles` (the profiles compiled into
//! clustersim), `import-vidur` (Vidur's published tables into a profile file, checked by reading
//! it back) and `measure` (micro-benchmarks of this machine's GPU into a profile file, the raw
//! numbers and a summary). docs/CALIBRATION.md describes them.
//!
//! This file only parses arguments, dispatches, prints and chooses the exit status: discovery
//! lives in `probe`, formatting in `report` and `profiles`, the Vidur import in `vidur`, the
//! measurements in `measure`. Exit status: 0 on success; 1 when a driver call failed part-way, a
//! file could not be read or written, a check failed or a measurement run did not finish; 2 when
//! there is nothing to measure (no CUDA driver, an unusable driver, no GPU) and, as clap does,
//! for usage errors.
//!
//! Deliberately ignored: configuration files, environment variables of its own, and selecting
//! devices (the driver's `CUDA_VISIBLE_DEVICES` already does that; `measure` uses the first
//! device it leaves visible).

mod measure;
mod probe;
mod profiles;
mod report;
mod table;
mod torch;
mod torch_kernels;
mod validate;
mod vidur;

use clap::{Parser, Subcommand};
use measure::machine::{self, RunInfo};
use measure::output;
use measure::plan::Plan;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "clustersim-calibrate",
    version,
    about = "Measures the GPUs of this machine and writes clustersim calibration profiles",
    after_help = "Exit status: 0 on success, 1 when a driver call, a file or a check fails or a \
                  measurement run does not finish, 2 when there is nothing to measure (no CUDA \
                  driver or no GPU) or on a usage error.",
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The GPU directories of Vidur's tables this tool knows (checked against the library's list
/// by a unit test).
const VIDUR_GPUS: [&str; 2] = ["a100", "h100"];

#[derive(Debug, Subcommand)]
enum Command {
    /// List the GPUs the CUDA driver sees and whether cuBLAS, NCCL and NVRTC can be loaded
    Devices {
        /// Print one JSON object instead of a table
        #[arg(long)]
        json: bool,
    },
    /// List the calibration profiles compiled into clustersim
    Profiles,
    /// Turn Vidur's compute tables (GPU/ORG/MODEL/mlp.csv) into a profile file and check that it
    /// reproduces them when read back
    ImportVidur {
        /// The GPU directory of Vidur's tables (e.g. data/vidur-profiles/compute/h100), or a
        /// directory above it together with --gpu
        dir: PathBuf,
        /// Which GPU's tables (default: the name of DIR)
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(VIDUR_GPUS), ignore_case = true)]
        gpu: Option<String>,
        /// Profile file to write (default: the shipped profile's name, e.g.
        /// h100-sxm5-80gb-vidur.toml, in the current directory)
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Measure this machine's first visible GPU: write profile.toml, raw.csv and run.json into
    /// a directory
    Measure {
        /// Directory for the files (created if needed)
        #[arg(long)]
        out: PathBuf,
        /// The short plan (under 3 minutes on one GPU) instead of the full one (under 6)
        #[arg(long)]
        quick: bool,
        /// Catalog name of the GPU for the profile, when the driver's device name does not say
        /// it (`clustersim list gpus`)
        #[arg(long)]
        gpu: Option<String>,
        /// Do not run PyTorch's attention and elementwise kernels (calibrate/python/
        /// torch_bench.py) after the plan; without them, or without PyTorch, the profile has no
        /// [[attention]] or [elementwise] tables
        #[arg(long)]
        no_torch: bool,
    },
    /// Add the attention and elementwise tables of PyTorch's kernel timings (torch_bench.py
    /// kernels, e.g. DIR/torch-kernels.json of the device check) to a profile file
    ImportTorch {
        /// The kernel timings
        kernels: PathBuf,
        /// The profile to add them to (a file)
        #[arg(long)]
        profile: PathBuf,
        /// Profile file to write (default: overwrite --profile)
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Time one transformer layer forward and backward with PyTorch on this GPU (or read such
    /// timings from a file) and compare them with the simulator's prediction from a profile
    Validate {
        /// The profile to predict with: a file (e.g. DIR/profile.toml of `measure`) or a
        /// shipped profile's name
        #[arg(long)]
        profile: String,
        /// Read the measured layers from this file (torch_bench.py's `layers` output, e.g.
        /// DIR/torch-layers.json of the device check) instead of measuring them now
        #[arg(long, conflicts_with = "shape")]
        reference: Option<PathBuf>,
        /// A layer shape to measure instead of the default eight, e.g.
        /// h=4096,heads=32,ffn=14336,seq=8192,batch=1,mlp=swiglu (repeat for several)
        #[arg(long, value_name = "SPEC")]
        shape: Vec<String>,
        /// Directory for torch-layers.json (when measuring) and validation.json (default: the
        /// current directory)
        #[arg(long, default_value = ".")]
        out: PathBuf,
    },
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Devices { json } => devices(json),
        Command::Profiles => print(&profiles::listing_text(&profiles::shipped())),
        Command::ImportVidur { dir, gpu, out } => import_vidur(&dir, gpu.as_deref(), out),
        Command::Measure {
            out,
            quick,
            gpu,
            no_torch,
        } => measure(&out, quick, gpu.as_deref(), !no_torch),
        Command::ImportTorch {
            kernels,
            profile,
            out,
        } => import_torch(&kernels, &profile, out.as_deref()),
        Command::Validate {
            profile,
            reference,
            shape,
            out,
        } => validate_layers(&profile, reference.as_deref(), &shape, &out),
    }
}

/// Writes `text` to stdout: 0, or 1 when stdout cannot be written.
fn print(text: &str) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{}: could not write to stdout: {err}", report::PROG);
            ExitCode::from(1)
        }
    }
}

/// Probes the driver; on failure prints why (and the shipped profiles) and gives the exit code.
fn probe_or_exit() -> Result<probe::Inventory, ExitCode> {
    probe::probe().map_err(|err| {
        for line in report::failure_lines(&err) {
            eprintln!("{line}");
        }
        ExitCode::from(if err.nothing_to_measure() { 2 } else { 1 })
    })
}

fn devices(json: bool) -> ExitCode {
    let inventory = match probe_or_exit() {
        Ok(inventory) => inventory,
        Err(code) => return code,
    };
    print(&if json {
        report::devices_json(&inventory)
    } else {
        report::devices_text(&inventory)
    })
}

fn import_vidur(dir: &Path, gpu: Option<&str>, out: Option<PathBuf>) -> ExitCode {
    let prog = report::PROG;
    let fail = |message: String| {
        eprintln!("{prog}: {message}");
        ExitCode::from(1)
    };
    let source = match vidur::resolve(dir, gpu) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let tables = match vidur::read_tables(&source.dir) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let profile = match vidur::import(&source) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let path = out.unwrap_or_else(|| PathBuf::from(format!("{}.toml", source.profile_name)));
    let text = profile.to_toml();
    if let Err(e) = std::fs::write(&path, &text) {
        return fail(format!("cannot write {}: {e}", path.display()));
    }
    let mut report = vidur::summary_text(&source, &tables);
    report.push_str(&format!(
        "Wrote {} ({} bytes): GPU {}, {} GEMM weight shapes, {} points, fp16.\n",
        path.display(),
        text.len(),
        profile.gpu,
        profile.gemm.len(),
        profile.points()
    ));
    if clustersim::hw::profile::shipped_text(source.profile_name) == Some(text.as_str()) {
        report.push_str(&format!(
            "It is identical to the shipped profile {}.\n",
            source.profile_name
        ));
    }
    let reloaded = match clustersim::files::profile(&path) {
        Ok(p) => p,
        Err(e) => return fail(format!("the written profile does not read back: {e}")),
    };
    let check = match vidur::read_back(reloaded, &tables) {
        Ok(c) => c,
        Err(e) => return fail(format!("read-back check: {e}")),
    };
    report.push_str(&vidur::read_back_text(&check));
    let code = print(&report);
    if !check.passes() {
        return fail(format!(
            "read-back check failed: the profile does not reproduce its sources within {:.0}%",
            100.0 * vidur::MAX_MERGED_ERROR
        ));
    }
    code
}

fn validate_layers(
    profile: &str,
    reference: Option<&Path>,
    shapes: &[String],
    out: &Path,
) -> ExitCode {
    let prog = report::PROG;
    let fail = |code: u8, message: String| {
        eprintln!("{prog}: {message}");
        ExitCode::from(code)
    };
    if let Some(e) = shapes.iter().find_map(|s| torch::check_shape(s).err()) {
        return fail(2, e);
    }
    let choice = match validate::ProfileChoice::resolve(profile) {
        Ok(c) => c,
        Err(e) => return fail(1, e),
    };
    if let Err(e) = std::fs::create_dir_all(out) {
        return fail(1, format!("cannot create {}: {e}", out.display()));
    }
    let path = match reference {
        Some(p) => p.to_path_buf(),
        None => match torch::run(torch::What::Layers, out, shapes) {
            Ok(p) => p,
            Err(torch::RunError::Unavailable(why)) => {
                return fail(
                    2,
                    format!(
                        "{why}; nothing to measure here. Give --reference FILE to compare \
                         timings measured elsewhere (calibrate/device-check.sh writes \
                         torch-layers.json)."
                    ),
                );
            }
            Err(torch::RunError::Failed(why)) => return fail(1, why),
        },
    };
    let reference = match torch::read(&path, torch::What::Layers) {
        Ok(r) => r,
        Err(e) => return fail(1, e),
    };
    let rows = match validate::compare(&reference, &choice) {
        Ok(rows) => rows,
        Err(e) => return fail(1, format!("simulating the layers: {e}")),
    };
    let json_path = out.join("validation.json");
    let json = validate::json(&reference, &choice, &rows);
    let written = serde_json::to_string_pretty(&json)
        .map_err(|e| e.to_string())
        .and_then(|t| std::fs::write(&json_path, t + "\n").map_err(|e| e.to_string()));
    if let Err(e) = written {
        return fail(1, format!("cannot write {}: {e}", json_path.display()));
    }
    let mut text = validate::text(&reference, &choice, &rows);
    text.push_str(&format!("Wrote {}.\n", json_path.display()));
    let code = print(&text);
    match validate::median_abs_error(&rows) {
        Some(m) if m <= validate::MAX_MEDIAN_ERROR => code,
        Some(_) => ExitCode::from(1),
        None => fail(1, format!("{}: no layers to compare", path.display())),
    }
}

/// The command line as typed, arguments with spaces quoted.
fn command_line() -> String {
    std::env::args()
        .map(|a| {
            if a.is_empty() || a.contains(char::is_whitespace) {
                format!("'{a}'")
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn import_torch(kernels: &Path, profile: &Path, out: Option<&Path>) -> ExitCode {
    let prog = report::PROG;
    let fail = |message: String| {
        eprintln!("{prog}: {message}");
        ExitCode::from(1)
    };
    let records = match torch::read(kernels, torch::What::Kernels) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let base = match clustersim::files::profile(profile) {
        Ok(p) => p,
        Err(e) => return fail(e.to_string()),
    };
    let combined = match torch_kernels::add_to(&base, &records) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let path = out.unwrap_or(profile);
    if let Err(e) = std::fs::write(path, combined.to_toml()) {
        return fail(format!("cannot write {}: {e}", path.display()));
    }
    print(&format!(
        "Wrote {}: {} attention tables ({} points) and {} elementwise tables ({} points) from {} \
         ({}).\n",
        path.display(),
        combined.attention.len(),
        combined.attention.iter().map(|a| a.points()).sum::<usize>(),
        combined.elementwise.len(),
        combined
            .elementwise
            .iter()
            .map(|e| e.bytes.len())
            .sum::<usize>(),
        kernels.display(),
        records.environment.device
    ))
}

fn measure(out: &Path, quick: bool, gpu_name: Option<&str>, with_torch: bool) -> ExitCode {
    let prog = report::PROG;
    // A --gpu that names no catalog GPU is a usage error, whatever the machine.
    let named = match gpu_name.map(clustersim::hw::gpu::find) {
        None => None,
        Some(Ok(spec)) => Some(spec),
        Some(Err(close)) => {
            eprintln!(
                "{prog}: unknown GPU \"{}\" for --gpu (closest catalog names: {})",
                gpu_name.unwrap_or_default(),
                close.join(", ")
            );
            return ExitCode::from(2);
        }
    };
    let inventory = match probe_or_exit() {
        Ok(inventory) => inventory,
        Err(code) => return code,
    };
    let Some(device) = inventory.devices.first() else {
        eprintln!("{prog}: the driver lists no device; nothing to measure on this machine.");
        return ExitCode::from(2);
    };
    let catalog = named.or_else(|| machine::catalog_gpu(&device.name));
    if catalog.is_none() {
        eprintln!(
            "{prog}: \"{}\" is not a GPU of clustersim's catalog by that name; measuring anyway, \
             but no profile can be written without --gpu NAME (`clustersim list gpus`)",
            device.name
        );
    }
    if let Err(e) = std::fs::create_dir_all(out) {
        eprintln!("{prog}: cannot create {}: {e}", out.display());
        return ExitCode::from(1);
    }
    let plan = if quick { Plan::quick() } else { Plan::full() };
    let started = std::time::Instant::now();
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let expected = catalog
        .map(|spec| {
            format!(
                ", about {:.0} s expected on {}",
                plan.estimate_s(spec, 2e-3),
                spec.name
            )
        })
        .unwrap_or_default();
    eprintln!(
        "{prog}: measuring device 0 of {} ({}), {} plan: {} points planned{expected}, no new \
         point started after {:.0} s",
        inventory.devices.len(),
        device.name,
        if quick { "quick" } else { "full" },
        plan.points(),
        plan.budget_s
    );
    let mut gpu = match measure::gpu::Gpu::open(0) {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("{prog}: cannot measure on device 0: {}", e.message);
            return ExitCode::from(1);
        }
    };
    let info = RunInfo {
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        command: command_line(),
        started_unix_s,
        device_index: 0,
        device_count: inventory.devices.len(),
        device_name: device.name.clone(),
        compute_capability: device.compute_capability,
        sm_count: device.sm_count,
        memory_bytes: device.memory_bytes,
        l2_bytes: gpu.l2_bytes(),
        max_sm_clock_khz: device.max_sm_clock_khz,
        memory_clock_khz: device.memory_clock_khz,
        driver_api: inventory.driver_version,
        kernel_module: std::fs::read_to_string("/proc/driver/nvidia/version")
            .ok()
            .and_then(|t| machine::parse_kernel_module_version(&t)),
        cublas: gpu.cublas_version(),
        cublaslt: gpu.cublaslt_version(),
    };
    let outcome = measure::run(
        &plan,
        &mut gpu,
        &|| started.elapsed().as_secs_f64(),
        &mut |line| eprintln!("{prog}: {line}"),
    );
    drop(gpu);
    let kernels = if with_torch && outcome.fatal.is_none() {
        eprintln!("{prog}: PyTorch's attention and elementwise kernels (torch_bench.py kernels)");
        match torch::run(torch::What::Kernels, out, &[])
            .map_err(|e| match e {
                torch::RunError::Unavailable(why) | torch::RunError::Failed(why) => why,
            })
            .and_then(|path| torch::read(&path, torch::What::Kernels))
        {
            Ok(k) => Some(k),
            Err(why) => {
                eprintln!(
                    "{prog}: {why}; the profile will have no [[attention]] or [elementwise] \
                     tables (the roofline prices those kernels)"
                );
                None
            }
        }
    } else {
        None
    };
    finish_measure(
        out,
        &plan,
        &info,
        &outcome,
        catalog.map(|c| &*c.name),
        kernels.as_ref(),
    )
}

/// Writes the files of a measurement run and prints its summary.
fn finish_measure(
    out: &Path,
    plan: &Plan,
    info: &RunInfo,
    outcome: &measure::Outcome,
    catalog: Option<&'static str>,
    kernels: Option<&torch::Output<torch::KernelRecord>>,
) -> ExitCode {
    let prog = report::PROG;
    let source = output::memory_source(&outcome.records);
    let profile = match catalog {
        Some(gpu) => output::build_profile(
            gpu,
            output::provenance(info, plan, outcome, source),
            &outcome.records,
        )
        .and_then(|(p, _)| match kernels {
            Some(k) => torch_kernels::add_to(&p, k),
            None => Ok(p),
        }),
        None => Err("the device is not in clustersim's catalog (use --gpu NAME)".to_string()),
    };
    let profile_text = profile.as_ref().ok().map(|p| p.to_toml());
    let csv = output::raw_csv(&outcome.records, plan);
    let mut names = vec![output::RAW_FILE, output::SUMMARY_FILE];
    if profile_text.is_some() {
        names.insert(0, output::PROFILE_FILE);
    }
    let listed: Vec<String> = names
        .iter()
        .map(|n| out.join(n).display().to_string())
        .collect();
    let json = output::summary_json(
        info,
        plan,
        outcome,
        catalog,
        &listed,
        profile.as_ref().err().map(String::as_str),
    );
    let mut files: Vec<(&str, &str)> =
        vec![(output::RAW_FILE, &csv), (output::SUMMARY_FILE, &json)];
    if let Some(text) = &profile_text {
        files.insert(0, (output::PROFILE_FILE, text));
    }
    if let Err(e) = output::write_all(out, &files) {
        eprintln!("{prog}: {e}");
        return ExitCode::from(1);
    }
    let code = print(&output::summary_text(outcome, &listed));
    let mut ok = true;
    if let Err(e) = &profile {
        eprintln!("{prog}: no profile written: {e}");
        ok = false;
    }
    if let Some(f) = &outcome.fatal {
        eprintln!("{prog}: the run stopped early: {f}");
        ok = false;
    }
    if outcome.out_of_time {
        eprintln!(
            "{prog}: the time budget ({:.0} s) ran out before the plan was done",
            plan.budget_s
        );
        ok = false;
    }
    if ok { code } else { ExitCode::from(1) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_devices_and_json() {
        let cli = Cli::try_parse_from(["clustersim-calibrate", "devices", "--json"]).unwrap();
        assert!(matches!(cli.command, Command::Devices { json: true }));
        let cli = Cli::try_parse_from(["clustersim-calibrate", "devices"]).unwrap();
        assert!(matches!(cli.command, Command::Devices { json: false }));
    }

    #[test]
    fn parses_the_other_subcommands() {
        let cli = Cli::try_parse_from(["clustersim-calibrate", "profiles"]).unwrap();
        assert!(matches!(cli.command, Command::Profiles));
        let cli = Cli::try_parse_from([
            "clustersim-calibrate",
            "import-vidur",
            "some/dir",
            "--gpu",
            "H100",
            "--out",
            "x.toml",
        ])
        .unwrap();
        match cli.command {
            Command::ImportVidur { dir, gpu, out } => {
                assert_eq!(dir, PathBuf::from("some/dir"));
                assert_eq!(
                    gpu.as_deref().map(str::to_lowercase).as_deref(),
                    Some("h100")
                );
                assert_eq!(out, Some(PathBuf::from("x.toml")));
            }
            other => panic!("{other:?}"),
        }
        assert!(
            Cli::try_parse_from(["clustersim-calibrate", "import-vidur", "d", "--gpu", "v100"])
                .is_err()
        );
        let cli = Cli::try_parse_from(["clustersim-calibrate", "measure", "--out", "o", "--quick"])
            .unwrap();
        assert!(matches!(
            cli.command,
            Command::Measure {
                quick: true,
                gpu: None,
                ..
            }
        ));
        assert!(Cli::try_parse_from(["clustersim-calibrate", "measure"]).is_err());
    }

    #[test]
    fn vidur_gpus_are_the_librarys() {
        let known: Vec<&str> = vidur::known_gpus().map(|(k, _, _)| k).collect();
        assert_eq!(known, VIDUR_GPUS);
    }

    /// The files of a (fake) run: a profile that loads, the CSV and the summary; without a
    /// catalog GPU no profile and exit status 1.
    #[test]
    fn finishing_a_run_writes_the_files() {
        let plan = measure::tests::small_plan();
        let mut fake = measure::tests::FakeGpu::new();
        let (outcome, _) = measure::tests::run_fake(&plan, &mut fake);
        let info = RunInfo {
            device_name: "NVIDIA H200".into(),
            command: "clustersim-calibrate measure --out x".into(),
            ..RunInfo::default()
        };
        let dir = std::env::temp_dir().join(format!("calibrate-finish-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let code = finish_measure(&dir, &plan, &info, &outcome, Some("H200-SXM-141GB"), None);
        assert_eq!(code, ExitCode::SUCCESS);
        let profile = clustersim::files::profile(&dir.join(output::PROFILE_FILE)).unwrap();
        assert_eq!(profile.gpu, "H200-SXM-141GB");
        assert!(profile.memory.is_some() && !profile.gemm.is_empty());
        let csv = std::fs::read_to_string(dir.join(output::RAW_FILE)).unwrap();
        assert_eq!(csv.lines().count(), outcome.records.len() + 1);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(output::SUMMARY_FILE)).unwrap())
                .unwrap();
        assert_eq!(json["files"].as_array().unwrap().len(), 3);
        let _ = std::fs::remove_dir_all(&dir);
        let code = finish_measure(&dir, &plan, &info, &outcome, None, None);
        assert_eq!(code, ExitCode::from(1));
        assert!(!dir.join(output::PROFILE_FILE).exists());
        assert!(dir.join(output::RAW_FILE).exists());
        let json = std::fs::read_to_string(dir.join(output::SUMMARY_FILE)).unwrap();
        assert!(json.contains("not in clustersim's catalog"), "{json}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn no_subcommand_asks_for_help() {
        let err = Cli::try_parse_from(["clustersim-calibrate"]).unwrap_err();
        assert_eq!(
            err.kind(),
            clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        );
    }
}
