//! The native half of the `clustersim` Python package: a scenario (a path, TOML text, or a
//! table as JSON) run by the library itself, the report handed back as JSON text (the Python
//! half parses it), and a refused scenario raised as `clustersim.ScenarioError` with its file,
//! line, column and help; scenario files checked against their `[expect]`. The simulation runs
//! with the GIL released. Ignored here: sweeps, plans and the rest of the CLI (not bound yet).

use clustersim::scenario::Scenario;
use clustersim::scenario::error::{Location, ScenarioError};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
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
    Ok(())
}
