//! `clustersim validate --residuals` (the residual table the prediction intervals come from) and
//! `--coverage` (how often those intervals hold: over the table itself, leaving each source out,
//! or over a file of cases the table does not hold).

use clustersim::uncertainty::residual::{Residual, Table};
use clustersim::validate::coverage::{Coverage, coverage};
use clustersim::validate::residuals;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A file of cases that cannot be used, said as the other errors are (the printer adds
/// "error: ").
fn load_error(e: clustersim::validate::LoadError) -> String {
    let text = e.to_string();
    text.strip_prefix("error: ").unwrap_or(&text).to_string()
}

/// Regenerates the residual table from the repository's validation files and writes it.
pub fn write_residuals(path: &Path) -> Result<String, String> {
    let files = residuals::table_files(Path::new("."))
        .map_err(|e| format!("cannot list validation/ (run from the repository root): {e}"))?;
    let table = residuals::table(&files).map_err(load_error)?;
    let command = format!("clustersim validate --residuals {}", path.display());
    std::fs::write(path, table.to_text(&command))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(format!(
        "{} residuals from {} files written to {}\n",
        table.residuals.len(),
        files.len(),
        path.display()
    ))
}

/// The coverage of the shipped intervals: over `file`'s cases when given, else over the shipped
/// table, leaving each case's source out. Text, and the Markdown when `write` is given.
pub fn report(file: Option<&PathBuf>, write: Option<&PathBuf>) -> Result<String, String> {
    let table = Table::shipped();
    let (cases, what): (Vec<Residual>, String) = match file {
        Some(path) => {
            let files = if path.is_dir() {
                residuals::json_files(path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?
            } else {
                vec![path.clone()]
            };
            let cases = residuals::table(&files).map_err(load_error)?.residuals;
            (cases, path.display().to_string())
        }
        None => (
            table.residuals.clone(),
            "the shipped residual table (validation/residuals.json)".into(),
        ),
    };
    let lines = coverage(table, &cases);
    if let Some(path) = write {
        let command = match file {
            Some(f) => format!(
                "clustersim validate {} --coverage --write {}",
                f.display(),
                path.display()
            ),
            None => format!("clustersim validate --coverage --write {}", path.display()),
        };
        std::fs::write(path, markdown(&lines, &what, &command))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let mut out = format!(
        "80% intervals judged on {what}, each case's source left out\n{:<36}{:>6}{:>8}{:>8}{:>12}{:>12}\n",
        "family / regime", "cases", "judged", "inside", "half-width", "|error|"
    );
    for c in &lines {
        let _ = writeln!(
            out,
            "{:<36}{:>6}{:>8}{:>7.0}%{:>11.1}%{:>11.1}%",
            c.name,
            c.cases,
            c.judged,
            100.0 * c.fraction(),
            100.0 * c.median_half_width,
            100.0 * c.median_abs_error
        );
    }
    Ok(out)
}

/// The Markdown table of `lines`.
pub fn table_markdown(lines: &[Coverage]) -> String {
    let mut md = String::from(
        "| family / regime | cases | judged | inside the 80% interval | median half-width | median \\|error\\| |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for c in lines {
        let name = if c.name.contains('/') {
            format!("`{}`", c.name)
        } else {
            format!("**{}**", c.name)
        };
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {:.0}% | {:.1}% | {:.1}% |",
            c.cases,
            c.judged,
            100.0 * c.fraction(),
            100.0 * c.median_half_width,
            100.0 * c.median_abs_error
        );
    }
    md
}

/// The section of docs/VALIDATION.md on the prediction intervals: the coverage of the shipped
/// residuals, each case's source left out.
pub fn intervals_section() -> String {
    let table = Table::shipped();
    format!(
        "\n## Prediction intervals\n\nEvery report states an 80% interval on its headline \
         figures, made from the residuals of the validation files (`validation/residuals.json`, \
         {} cases) in the run's regime (docs/UNCERTAINTY.md). Judged on those cases, each \
         against the interval its regime gets without the case's own source (`clustersim \
         validate --coverage`):\n\n{}",
        table.residuals.len(),
        table_markdown(&coverage(table, &table.residuals))
    )
}

fn markdown(lines: &[Coverage], what: &str, command: &str) -> String {
    format!(
        "# Coverage of the prediction intervals\n\nGenerated by `{command}` (run from the \
         repository root); do not edit by hand. Each case of {what} is judged against the 80% \
         interval its regime gets from the shipped residuals without the case's own source. \
         Half-width and error are fractions of a predicted time. The method: \
         docs/UNCERTAINTY.md.\n\n{}",
        table_markdown(lines)
    )
}
