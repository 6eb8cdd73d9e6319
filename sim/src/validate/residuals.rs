//! Validated rows as residuals (`uncertainty::residual`): every compared headline row whose run
//! has a regime and whose metric is a time or a rate (memory rows are left out). The shipped
//! table comes from the shared published.json and every validation/*.json (not holdout/); a
//! case id met twice keeps its first file's row.

use super::{Case, LoadError, Row, load, validate};
use crate::uncertainty::Reading;
use crate::uncertainty::residual::{Residual, Table, round};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// How a unit reads: a time ("s", "ms", "us", "min", "s/step"), a rate (anything per second,
/// and MFU in %, with or without words after the sign), or neither (memory).
pub fn reading(unit: &str) -> Option<Reading> {
    let u = unit.trim().to_lowercase();
    if ["s", "ms", "us", "min", "h", "s/step"].contains(&u.as_str()) {
        Some(Reading::Time)
    } else if u.contains("/s") || u == "%" || u.starts_with("% ") {
        Some(Reading::Rate)
    } else {
        None
    }
}

/// The residuals of one file's rows.
pub fn residuals(file: &str, rows: &[Row]) -> Vec<Residual> {
    rows.iter()
        .filter(|r| r.primary && r.compared())
        .filter_map(|r| {
            let regime = r.regime.clone()?;
            let predicted = r.predicted?;
            let ratio = match reading(&r.unit)? {
                Reading::Time => predicted / r.measured,
                Reading::Rate | Reading::Throughput => r.measured / predicted,
            };
            (ratio.is_finite() && ratio > 0.0).then(|| Residual {
                id: r.id.clone(),
                source: r.group.clone(),
                file: file.to_string(),
                regime,
                x: round(crate::stats::math::ln(ratio)),
            })
        })
        .collect()
}

/// The files the shipped table is made from, relative to `root` (the repository root): the
/// shared published.json, then validation/*.json by name.
pub fn table_files(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = vec![root.join(super::DEFAULT_FILE)];
    files.extend(
        json_files(&root.join("validation"))?
            .into_iter()
            .filter(|p| p.file_name().is_some_and(|n| n != "residuals.json")),
    );
    Ok(files)
}

/// The `*.json` files of a folder, by name.
pub fn json_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// Validates `files` and gathers their residuals, each case id once.
pub fn table(files: &[PathBuf]) -> Result<Table, LoadError> {
    let mut seen = BTreeSet::new();
    let mut residuals = Vec::new();
    for path in files {
        let cases: Vec<Case> = load(path)?;
        let name = path
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into_owned());
        let rows = validate(&cases, &name).rows;
        residuals.extend(
            self::residuals(&name, &rows)
                .into_iter()
                .filter(|r| seen.insert(r.id.clone())),
        );
    }
    Ok(Table { residuals })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_as_times_rates_or_neither() {
        assert_eq!(reading("s/step"), Some(Reading::Time));
        assert_eq!(reading("us"), Some(Reading::Time));
        assert_eq!(reading("GB/s"), Some(Reading::Rate));
        assert_eq!(reading("tokens/s/GPU"), Some(Reading::Rate));
        assert_eq!(reading("%"), Some(Reading::Rate));
        assert_eq!(reading("% MFU (a convention)"), Some(Reading::Rate));
        assert_eq!(reading("%s"), None);
        assert_eq!(reading("GiB"), None);
    }
}
