//! Helpers the integration tests share: scenarios built, run and read; the `clustersim` binary
//! run as a user would; the data in `shared/` beside the repository, Vidur's operator tables
//! among it; and the statistics the comparisons with measurements report.
//!
//! Declared once in `main.rs`; each topic's module reaches it as `crate::common`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use clustersim::report::cluster::{ClusterReport, Job};
use clustersim::report::collective::CollectiveReport;
use clustersim::report::diffusion::DiffusionReport;
use clustersim::report::federated::FederatedReport;
use clustersim::report::kernels::KernelsReport;
use clustersim::report::serving::ServingReport;
use clustersim::report::training::TrainingReport;
use clustersim::report::typed::TypedReport;
use clustersim::scenario::error::ScenarioError;
use clustersim::{RunOutput, Scenario};
use serde_json::Value;

// ---- Scenarios ----

/// The text of a training scenario on one node of `gpus_per_node` H100s, with the given lines of
/// `[model]` and `[parallel]` (one `key = value` a line; leading spaces do not matter in TOML).
pub fn h100_training(gpus_per_node: u32, model: &str, parallel: &str) -> String {
    format!(
        r#"
kind = "training"
[cluster]
gpu = "H100"
nodes = 1
gpus_per_node = {gpus_per_node}
[model]
{model}
[parallel]
{parallel}
"#
    )
}

/// Parses a scenario text as if it were the file `name`, with `--set` overrides; bad input panics
/// with the error as the user would see it.
pub fn scenario(name: &str, text: &str, sets: &[&str]) -> Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Scenario::parse(Path::new(name), text.to_string(), &sets).unwrap_or_else(|e| panic!("{e}"))
}

/// Parses and simulates a scenario text; bad input panics with the error's message.
pub fn run(name: &str, text: &str, sets: &[&str]) -> RunOutput {
    clustersim::run(&scenario(name, text, sets)).unwrap_or_else(|e| panic!("{e}"))
}

/// The report of [`run`].
pub fn report(name: &str, text: &str, sets: &[&str]) -> Value {
    run(name, text, sets).report
}

/// The report of [`run`] read as the typed report of its kind; a report of another kind panics.
pub fn typed<R: TypedReport>(name: &str, text: &str, sets: &[&str]) -> R {
    R::of_run(&report(name, text, sets))
}

/// The report of a training scenario's [`run`], typed.
pub fn training(name: &str, text: &str, sets: &[&str]) -> TrainingReport {
    typed(name, text, sets)
}

/// The report of a serving scenario's [`run`], typed.
pub fn serving(name: &str, text: &str, sets: &[&str]) -> ServingReport {
    typed(name, text, sets)
}

/// The report of a diffusion scenario's [`run`], typed.
pub fn diffusion(name: &str, text: &str, sets: &[&str]) -> DiffusionReport {
    typed(name, text, sets)
}

/// The report of a collective scenario's [`run`], typed.
pub fn collective(name: &str, text: &str, sets: &[&str]) -> CollectiveReport {
    typed(name, text, sets)
}

/// The report of a kernels scenario's [`run`], typed.
pub fn kernels(name: &str, text: &str, sets: &[&str]) -> KernelsReport {
    typed(name, text, sets)
}

/// The report of a federated scenario's [`run`], typed.
pub fn federated(name: &str, text: &str, sets: &[&str]) -> FederatedReport {
    typed(name, text, sets)
}

/// The report of a cluster scenario's [`run`], typed.
pub fn cluster(name: &str, text: &str, sets: &[&str]) -> ClusterReport {
    typed(name, text, sets)
}

/// The report of a training run's output, typed.
pub fn training_of(out: &RunOutput) -> TrainingReport {
    TrainingReport::of_run(&out.report)
}

/// [`outcome`] read as the typed report of its kind; a report of another kind panics.
pub fn typed_outcome<R: TypedReport>(name: &str, text: &str) -> Result<R, String> {
    outcome(name, text).map(|r| R::of_run(&r))
}

/// The report of a scenario text named `name`, or its parse or run error as the user reads it.
pub fn outcome(name: &str, text: &str) -> Result<Value, String> {
    let s = Scenario::parse(Path::new(name), text.to_string(), &[]).map_err(|e| e.to_string())?;
    clustersim::run(&s)
        .map(|o| o.report)
        .map_err(|e| e.to_string())
}

/// Checks that scenario `text` (named `name`) is refused with an error that says `message`,
/// gives `hint` and is located in the file.
pub fn refused_saying(name: &str, text: &str, message: &str, hint: &str) {
    let e = match outcome(name, text) {
        Err(e) => e,
        Ok(_) => panic!("ran: {message}"),
    };
    assert!(e.contains(message), "{e}\nwanted: {message}");
    assert!(e.contains(hint), "{e}\nwanted: {hint}");
    assert!(e.contains(&format!("{name}:")), "not located: {e}");
}

/// The entry of a cluster report's `jobs` named `name`.
pub fn job<'a>(r: &'a ClusterReport, name: &str) -> &'a Job {
    r.jobs
        .iter()
        .find(|j| j.name == name)
        .unwrap_or_else(|| panic!("no job {name}"))
}

/// The error simulating a scenario that parses gives; panics with `why` if it runs.
pub fn refused(name: &str, text: &str, why: &str) -> ScenarioError {
    match clustersim::run(&scenario(name, text, &[])) {
        Err(e) => e,
        Ok(_) => panic!("{name}: {why}"),
    }
}

/// How many operations of the run's graph are called `name`, each kernel of a chain one.
pub fn count_ops(out: &RunOutput, name: &str) -> usize {
    let (kernels, _) = out.graph.expand(&out.timeline);
    kernels.ops.iter().filter(|o| o.name == name).count()
}

/// A section a typed report keeps as JSON (`power`, `reliability`, `local_sgd`, ...), named
/// `name` in the panic when the report lacks it.
pub fn section<'a>(v: &'a Option<Value>, name: &str) -> &'a Value {
    v.as_ref()
        .unwrap_or_else(|| panic!("no `{name}` section in the report"))
}

/// The number at a dotted path of a report or of one of its sections kept as JSON, e.g.
/// `memory.breakdown_bytes.activations`.
pub fn number(report: &Value, path: &str) -> f64 {
    path.split('.')
        .fold(report, |v, key| &v[key])
        .as_f64()
        .unwrap_or_else(|| panic!("no number at `{path}` in the report"))
}

// ---- The binary ----

/// The `clustersim` binary of this build.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_clustersim"))
}

/// The report of the paper-gallery scenario `scenarios/papers/{file}` with `--set` overrides.
pub fn paper(file: &str, sets: &[&str]) -> Value {
    let path = root().join("scenarios/papers").join(file);
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scenario = Scenario::load(&path, &sets).unwrap_or_else(|e| panic!("{e}"));
    clustersim::run(&scenario)
        .unwrap_or_else(|e| panic!("{e}"))
        .report
}

/// [`paper`] read as the typed report of its kind; a report of another kind panics.
pub fn typed_paper<R: TypedReport>(file: &str, sets: &[&str]) -> R {
    R::of_run(&paper(file, sets))
}

/// The repository root (the directory above `sim/`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Runs the binary with `args` in `dir` and waits for it.
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    bin()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs")
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

// ---- Shared data ----

/// `shared/`, beside the repository: in CI the repository is cloned next to a copy of it. The
/// checks that read it must not be skipped, so its absence fails them.
pub fn shared() -> PathBuf {
    let p = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared"));
    assert!(
        p.is_dir(),
        "shared data not found at {} (CI clones the repository beside shared/); the tests that \
         read it must not be skipped",
        p.display()
    );
    p
}

/// Vidur's operator profiles: `shared/data/vidur-profiles/compute/{a100,h100}/ORG/MODEL/mlp.csv`.
pub fn vidur_compute_dir() -> PathBuf {
    let dir = shared().join("data/vidur-profiles/compute");
    assert!(
        dir.is_dir(),
        "Vidur profiles not found at {} (expected the repository to sit next to a copy of \
         `shared/`, i.e. shared/data/vidur-profiles/compute); this validation must not be skipped",
        dir.display()
    );
    dir
}

/// One model's Vidur `mlp.csv`.
pub struct VidurTable {
    /// The model directory's name, e.g. `Llama-2-7b-hf`.
    pub model: String,
    pub path: PathBuf,
    pub csv: String,
}

/// Every model's table of one GPU directory (`a100` or `h100`), in sorted order (the order
/// `files::import_vidur_dir` reads them in).
pub fn vidur_tables(gpu_dir: &str) -> Vec<VidurTable> {
    let dir = vidur_compute_dir().join(gpu_dir);
    assert!(dir.is_dir(), "missing {}", dir.display());
    let mut tables = Vec::new();
    for org in sorted_subdirs(&dir) {
        for model_dir in sorted_subdirs(&org) {
            let path = model_dir.join("mlp.csv");
            assert!(
                path.is_file(),
                "model directory without mlp.csv: {}",
                model_dir.display()
            );
            let csv = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let model = model_dir
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            tables.push(VidurTable { model, path, csv });
        }
    }
    assert!(!tables.is_empty(), "no profiles under {}", dir.display());
    tables
}

fn sorted_subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

// ---- Statistics ----

/// The median (the mean of the middle two of an even count); sorts `values`.
pub fn median(values: &mut [f64]) -> f64 {
    clustersim::stats::median(values).expect("the median of an empty sample")
}

/// Nearest-rank percentile of already sorted values.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

// ---- Plans ----

/// A count in a plan's JSON.
pub fn count(v: &Value) -> u64 {
    v.as_u64().expect("a count")
}

/// Every candidate of a simulated plan (serving, diffusion) is invalid, does not fit, or is
/// ranked; the reasons add up to the totals; every valid candidate was simulated.
pub fn assert_accounted(p: &Value) {
    let c = &p["candidates"];
    let sum = |v: &Value| -> u64 { v.as_object().expect("reasons").values().map(count).sum() };
    let invalid = count(&c["pruned"]["invalid"]);
    let unfit = count(&c["pruned"]["does_not_fit"]);
    let ranked = count(&c["ranked"]);
    assert_eq!(invalid, sum(&c["pruned"]["invalid_by_reason"]), "{c}");
    assert_eq!(unfit, sum(&c["pruned"]["does_not_fit_by_reason"]), "{c}");
    assert_eq!(count(&c["considered"]), invalid + unfit + ranked, "{c}");
    assert_eq!(count(&c["simulated"]), unfit + ranked, "{c}");
}
