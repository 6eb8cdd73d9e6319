//! The native half of the `clustersim` Python package: a scenario (a path, TOML text, or a
//! table as JSON) run by the library itself, the report handed back as JSON text (the Python
//! half parses it), and a refused scenario raised as `clustersim.ScenarioError` with its file,
//! line, column and help; scenario files checked against their `[expect]`; sweeps, plans,
//! collectives, validation files and request traces, each as the CLI's command computes it. The
//! simulations run with the GIL released. A bad flag (the CLI's exit 2 that is not a scenario's
//! fault) is a `ValueError` with the CLI's message, without its `error: ` prefix.
//!
//! Ignored here: the CLI's text tables, progress bars, wall times and output files (`--out`,
//! `--write`), and `sweep --shard` / `merge` (a script runs the whole grid in one process).

use clustersim::plan::{self, Objective};
use clustersim::scenario::Scenario;
use clustersim::scenario::error::{Location, ScenarioError};
use clustersim::scenario::serving::WorkloadSection;
use clustersim::sweep::{Shard, Sweep, SweepError, format::jsonl_line};
use clustersim::validate;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

create_exception!(_native, NativeScenarioError, PyValueError);

/// The Python exception for `e`: its text as the message, and (file, line, column, help) as
/// the arguments after it, line and column None where the mistake has no place in a file.
fn raise(e: ScenarioError) -> PyErr {
    let (line, column) = match &e.location {
        Location::File { line, column, .. } => (Some(*line), Some(*column)),
        _ => (None, None),
    };
    NativeScenarioError::new_err((
        e.to_string(),
        e.file.display().to_string(),
        line,
        column,
        e.help.clone(),
    ))
}

/// Runs a parsed scenario without the GIL; the report as JSON text.
fn report_of(py: Python<'_>, scenario: Scenario) -> PyResult<String> {
    let report = py
        .detach(|| clustersim::run(&scenario).map(|o| o.report))
        .map_err(raise)?;
    Ok(serde_json::to_string(&report).expect("a report serialises"))
}

/// The report of the scenario file at `path`, with `sets` (`KEY=VALUE`) applied.
#[pyfunction]
fn run_path(py: Python<'_>, path: PathBuf, sets: Vec<String>) -> PyResult<String> {
    let scenario = Scenario::load(&path, &sets).map_err(raise)?;
    report_of(py, scenario)
}

/// The report of scenario `text` (TOML), named `name` in errors; relative paths in it are
/// read from the current directory.
#[pyfunction]
fn run_text(py: Python<'_>, text: String, name: String, sets: Vec<String>) -> PyResult<String> {
    let scenario = Scenario::parse(Path::new(&name), text, &sets).map_err(raise)?;
    report_of(py, scenario)
}

/// Every scenario file under `paths` (folders searched for `*.toml`) run and its `[expect]`
/// judged, as JSON text: a list of {file, expectations: [{path, actual, passed, text}]}. A file
/// the simulator refuses raises, as `clustersim check` exits 2 on it.
#[pyfunction]
fn check(py: Python<'_>, paths: Vec<PathBuf>) -> PyResult<String> {
    let files = clustersim::check::discover(&paths).map_err(raise)?;
    let mut out = Vec::new();
    for file in files {
        let outcomes = py
            .detach(|| clustersim::check::check_file(&file, &[]))
            .map_err(raise)?;
        let expectations: Vec<serde_json::Value> = outcomes
            .iter()
            .map(|o| {
                serde_json::json!({
                    "path": o.path,
                    "actual": o.actual,
                    "passed": o.passed(),
                    "text": o.to_string(),
                })
            })
            .collect();
        out.push(serde_json::json!({
            "file": file.display().to_string(),
            "expectations": expectations,
        }));
    }
    Ok(serde_json::Value::Array(out).to_string())
}

/// TOML text of a table given as JSON text (a Python dict the Python half dumped).
#[pyfunction]
fn toml_of_json(json: &str) -> PyResult<String> {
    let value: toml::Value = serde_json::from_str(json)
        .map_err(|e| PyValueError::new_err(format!("not a scenario table: {e}")))?;
    toml::to_string(&value).map_err(|e| PyValueError::new_err(format!("not a scenario table: {e}")))
}

/// The GPU catalog's names.
#[pyfunction]
fn gpus() -> Vec<String> {
    clustersim::hw::gpu::catalog()
        .iter()
        .map(|g| g.name.to_string())
        .collect()
}

/// The model presets' names.
#[pyfunction]
fn models() -> Vec<String> {
    clustersim::model::preset::names()
        .map(str::to_string)
        .collect()
}

/// A `ValueError` with the CLI's message for a bad flag, without the `error: ` the CLI prints
/// before it.
fn flag_error(message: impl AsRef<str>) -> PyErr {
    let m = message.as_ref();
    PyValueError::new_err(m.strip_prefix("error: ").unwrap_or(m).to_string())
}

/// The Python exception for a sweep's refusal: a scenario error as `raise` makes it (the note
/// of `EveryPoint` added to its message), anything else a `ValueError`.
fn raise_sweep(e: SweepError) -> PyErr {
    match e {
        SweepError::Scenario(s) => raise(s),
        SweepError::EveryPoint(ref s) => {
            let (line, column) = match &s.location {
                Location::File { line, column, .. } => (Some(*line), Some(*column)),
                _ => (None, None),
            };
            NativeScenarioError::new_err((
                e.to_string(),
                s.file.display().to_string(),
                line,
                column,
                s.help.clone(),
            ))
        }
        other => flag_error(other.to_string()),
    }
}

/// A scenario given as a path (`is_text` false) or as TOML text named `name` in errors.
fn load(scenario: String, is_text: bool, name: &str, sets: &[String]) -> PyResult<Scenario> {
    if is_text {
        Scenario::parse(Path::new(name), scenario, sets).map_err(raise)
    } else {
        Scenario::load(Path::new(&scenario), sets).map_err(raise)
    }
}

/// `clustersim sweep PATH --set ... --vary ... --metric ...` over the whole grid, its points run
/// in parallel (rayon, all cores) without the GIL: the columns, the rows as JSON Lines (the
/// bytes `--out FILE.jsonl` writes), and one message per metric no row has (the CLI's exit 2).
#[pyfunction]
fn sweep(
    py: Python<'_>,
    path: PathBuf,
    sets: Vec<String>,
    vary: Vec<String>,
    metrics: Vec<String>,
) -> PyResult<(Vec<String>, String, Vec<String>)> {
    let sweep = Sweep::new(&path, &sets, &vary, Shard::WHOLE, &metrics).map_err(raise_sweep)?;
    // Boxed across the closure: a SweepError is large.
    let outcome = py
        .detach(|| sweep.run(&|| {}).map_err(Box::new))
        .map_err(|e| raise_sweep(*e))?;
    let table = &outcome.table;
    let mut lines = String::new();
    for row in &table.rows {
        lines.push_str(&jsonl_line(&table.columns, &row.cells));
        lines.push('\n');
    }
    let absent = outcome
        .absent_metrics
        .iter()
        .map(|m| format!("{m} (its column is empty)"))
        .collect();
    Ok((table.columns.clone(), lines, absent))
}

/// `clustersim plan`'s flags as the Python half hands them over (JSON).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanArgs {
    objective: Option<String>,
    top: usize,
    simulate: Option<usize>,
    slo_attainment: Option<f64>,
    max_latency_s: Option<f64>,
    headroom_bytes: Option<f64>,
}

/// `clustersim plan SCENARIO ... --json` without `sim` (the CLI's wall time), as JSON text; the
/// checks and messages are the CLI's (`sim/src/cli/plan.rs`).
#[pyfunction]
fn plan_json(
    py: Python<'_>,
    scenario: String,
    is_text: bool,
    name: String,
    sets: Vec<String>,
    args: &str,
) -> PyResult<String> {
    let args: PlanArgs = serde_json::from_str(args).map_err(|e| flag_error(e.to_string()))?;
    let objective = match &args.objective {
        None => Objective::Fastest,
        Some(text) => {
            Objective::parse(text).map_err(|e| flag_error(format!("--objective {text}: {e}")))?
        }
    };
    let flags = plan::Flags {
        top: args.top,
        simulate: args.simulate,
        objective,
        slo_attainment: args.slo_attainment,
        max_latency_s: args.max_latency_s,
        headroom_bytes: args.headroom_bytes,
    };
    flags.check().map_err(flag_error)?;
    let scenario = load(scenario, is_text, &name, &sets)?;
    let options = flags.options(scenario.kind).map_err(flag_error)?;
    let result = py
        .detach(|| plan::plan(&scenario, &options))
        .map_err(raise)?;
    Ok(result.to_string())
}

/// `--max-latency`'s reading of a duration with its unit ("60 s"), in seconds.
#[pyfunction]
fn duration_s(text: &str) -> PyResult<f64> {
    plan::flags::latency_s(text).map_err(|e| flag_error(format!("--max-latency {text}: {e}")))
}

/// `--memory-headroom`'s reading of a size with its unit ("4 GiB"), in bytes.
#[pyfunction]
fn size_bytes(text: &str) -> PyResult<f64> {
    plan::flags::headroom_bytes(text)
        .map_err(|e| flag_error(format!("--memory-headroom {text}: {e}")))
}

/// `clustersim collective ... --json` without `sim`, as JSON text; `args` the flags as a JSON
/// object (the fields of `clustersim::collective_bench::Bench`).
#[pyfunction]
fn collective_json(py: Python<'_>, args: &str) -> PyResult<String> {
    let bench: clustersim::collective_bench::Bench =
        serde_json::from_str(args).map_err(|e| flag_error(e.to_string()))?;
    let report = py.detach(|| bench.run()).map_err(flag_error)?;
    Ok(report.to_string())
}

/// `clustersim validate FILE --json` without its wall times (the file's and each row's), as
/// JSON text; a file that cannot be used raises as a refused scenario does.
#[pyfunction]
fn validate_file(py: Python<'_>, path: PathBuf) -> PyResult<String> {
    let cases = validate::load(&path).map_err(|e| {
        let (line, column) = match &e {
            validate::LoadError::Json { line, column, .. } => (Some(*line), Some(*column)),
            _ => (None, None),
        };
        NativeScenarioError::new_err((
            e.to_string(),
            path.display().to_string(),
            line,
            column,
            None::<String>,
        ))
    })?;
    let file_name = path.file_name().map_or("published.json".into(), |n| {
        n.to_string_lossy().into_owned()
    });
    let result = py.detach(|| validate::validate(&cases, &file_name));
    let mut json = result.to_json(&path);
    if let Value::Object(top) = &mut json {
        top.remove("wall_s");
    }
    if let Some(rows) = json["rows"].as_array_mut() {
        for row in rows {
            if let Value::Object(r) = row {
                r.remove("wall_s");
            }
        }
    }
    Ok(json.to_string())
}

/// The requests a serving scenario replays from the trace at `path` (`arrival = "trace"`), as
/// JSON text: a list of {id, arrival_s, prompt_tokens, output_tokens}. `workload` holds the
/// `[workload]` keys besides (`requests`, `prompt_tokens`, `output_tokens`) as JSON; `seed` is
/// `sim.seed` (lengths the trace lacks are drawn from them). The path is read as given (relative
/// to the current directory), not relative to a scenario.
#[pyfunction]
fn load_trace(py: Python<'_>, path: String, workload: &str, seed: u64) -> PyResult<String> {
    let mut section: serde_json::Map<String, Value> =
        serde_json::from_str(workload).map_err(|e| flag_error(e.to_string()))?;
    section.insert("arrival".into(), Value::from("trace"));
    section.insert("trace".into(), Value::from(path.as_str()));
    let section: WorkloadSection = serde_json::from_value(Value::Object(section))
        .map_err(|e| flag_error(format!("[workload]: {e}")))?;
    let requests = py
        .detach(|| clustersim::scenario::lower::traffic::generate(&section, seed, None))
        .map_err(|e| {
            NativeScenarioError::new_err((
                format!("error: {}: {}", e.path, e.message),
                path.clone(),
                None::<usize>,
                None::<usize>,
                e.help.clone(),
            ))
        })?;
    let rows: Vec<Value> = requests
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.id,
                "arrival_s": r.arrival.as_secs_f64(),
                "prompt_tokens": r.prompt_tokens,
                "output_tokens": r.output_tokens,
            })
        })
        .collect();
    Ok(Value::Array(rows).to_string())
}

/// Whether `text` reads as a TOML value on its own (`8`, `true`, `"x"`, `[1, 2]`): `--set` and
/// `--vary` take such text as that value, and any other text as a string.
#[pyfunction]
fn reads_as_toml(text: &str) -> bool {
    toml::de::DeValue::parse(text.trim()).is_ok()
}

/// A JSON value (a Python list or dict the Python half dumped) as an inline TOML value.
#[pyfunction]
fn toml_value_of_json(json: &str) -> PyResult<String> {
    let value: toml::Value = serde_json::from_str(json)
        .map_err(|e| PyValueError::new_err(format!("not a TOML value: {e}")))?;
    Ok(value.to_string())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add(
        "NativeScenarioError",
        m.py().get_type::<NativeScenarioError>(),
    )?;
    m.add_function(wrap_pyfunction!(run_path, m)?)?;
    m.add_function(wrap_pyfunction!(run_text, m)?)?;
    m.add_function(wrap_pyfunction!(toml_of_json, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(gpus, m)?)?;
    m.add_function(wrap_pyfunction!(models, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(plan_json, m)?)?;
    m.add_function(wrap_pyfunction!(duration_s, m)?)?;
    m.add_function(wrap_pyfunction!(size_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(collective_json, m)?)?;
    m.add_function(wrap_pyfunction!(validate_file, m)?)?;
    m.add_function(wrap_pyfunction!(load_trace, m)?)?;
    m.add_function(wrap_pyfunction!(reads_as_toml, m)?)?;
    m.add_function(wrap_pyfunction!(toml_value_of_json, m)?)?;
    Ok(())
}
