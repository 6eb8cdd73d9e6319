//! `clustersim check`: run scenario files and judge their `[expect]` assertions.

use crate::run::run;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::expect::Outcome;
use std::path::{Path, PathBuf};

/// Scenario files under `paths`: files as given, directories searched recursively for `*.toml`,
/// in sorted order so that runs are reproducible.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ScenarioError> {
    let mut found = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut found)?;
        } else if path.exists() {
            found.push(path.clone());
        } else {
            return Err(ScenarioError::whole(path, "no such file or directory"));
        }
    }
    Ok(found)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), ScenarioError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| ScenarioError::whole(dir, format!("cannot read the directory: {e}")))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            walk(&path, found)?;
        } else if path.extension().is_some_and(|e| e == "toml") {
            found.push(path);
        }
    }
    Ok(())
}

/// Runs one scenario and evaluates its expectations.
pub fn check_file(path: &Path, sets: &[String]) -> Result<Vec<Outcome>, ScenarioError> {
    let scenario = Scenario::load(path, sets)?;
    let output = run(&scenario)?;
    Ok(scenario
        .file
        .expect
        .iter()
        .map(|(key, e)| e.evaluate(key, &output.report))
        .collect())
}
