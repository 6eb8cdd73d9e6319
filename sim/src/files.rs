//! Reading files at the edge: what a scenario names (Hugging Face configs, calibration profiles,
//! traces, graph files) and the profile tables the calibrator imports, so that the layers below
//! parse text and never open a file.

use crate::hw::profile::{Profile, ProfileError, from_vidur_mlp_csv};
use std::path::Path;

/// The text of the file at `path`, or why it cannot be read ("no such file", or the system's
/// message).
pub fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        _ => e.to_string(),
    })
}

/// The calibration profile in the file at `path`.
pub fn profile(path: &Path) -> Result<Profile, ProfileError> {
    let origin = path.display().to_string();
    let text = read(path)
        .map_err(|why| ProfileError::new(&origin, format!("cannot read the profile: {why}")))?;
    Profile::parse(&text, &origin)
}

fn sorted_subdirs(dir: &Path) -> Result<Vec<std::path::PathBuf>, ProfileError> {
    let origin = dir.display().to_string();
    let entries = std::fs::read_dir(dir)
        .map_err(|e| ProfileError::new(&origin, format!("cannot list the directory: {e}")))?;
    let mut out = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| ProfileError::new(&origin, format!("cannot list the directory: {e}")))?
            .path();
        if path.is_dir() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// Imports every `ORG/MODEL/mlp.csv` under `compute_dir/gpu_dir` (Vidur's layout, e.g.
/// `data/vidur-profiles/compute` and `h100`) into a profile of `gpu`, in sorted order, leaving
/// out the models named in `exclude` (directory names, e.g. "Llama-2-7b-hf").
pub fn import_vidur_dir(
    compute_dir: &Path,
    gpu_dir: &str,
    gpu_name: &str,
    exclude: &[&str],
) -> Result<Profile, ProfileError> {
    let dir = compute_dir.join(gpu_dir);
    let mut tables: Vec<(String, String)> = Vec::new();
    for org in sorted_subdirs(&dir)? {
        for model_dir in sorted_subdirs(&org)? {
            let name = model_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if exclude.contains(&name.as_str()) {
                continue;
            }
            let csv = model_dir.join("mlp.csv");
            let text = std::fs::read_to_string(&csv).map_err(|e| {
                ProfileError::new(&csv.display().to_string(), format!("cannot read: {e}"))
            })?;
            tables.push((name, text));
        }
    }
    if tables.is_empty() {
        return Err(ProfileError::new(
            &dir.display().to_string(),
            "no ORG/MODEL/mlp.csv tables",
        ));
    }
    let refs: Vec<(&str, &str)> = tables
        .iter()
        .map(|(m, t)| (m.as_str(), t.as_str()))
        .collect();
    from_vidur_mlp_csv(gpu_name, &refs)
}
