//! `clustersim validate`: published measurements against the simulator's predictions. The work is
//! in `clustersim::validate`; this prints the table, the JSON or the Markdown. The Markdown's
//! prose sections are `validate_conventions.md` and `validate_weaknesses.md` beside this file.

use clap::Args;
use clustersim::validate::{self, DEFAULT_FILE, Row, Stats, Status, Validation};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct ValidateArgs {
    /// The published cases (JSON). Default: ../shared/validation/published.json, relative to the
    /// current directory (the repository root, cloned beside shared/).
    #[arg(value_name = "FILE.json")]
    file: Option<PathBuf>,
    /// Print exactly one JSON object (rows, summary) on stdout.
    #[arg(long)]
    json: bool,
    /// Also write the results as Markdown to this path (e.g. docs/VALIDATION.md).
    #[arg(long, value_name = "PATH")]
    write: Option<PathBuf>,
    /// How often the 80% prediction intervals hold: over FILE's cases (or every *.json of a
    /// folder), or without FILE over the shipped residuals, each case's source left out
    /// (docs/UNCERTAINTY.md).
    #[arg(long, conflicts_with = "json")]
    coverage: bool,
    /// Regenerate the residual table the intervals come from (validation/residuals.json) from
    /// the shared published.json and every validation/*.json; run from the repository root.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["file", "json", "write", "coverage"])]
    residuals: Option<PathBuf>,
}

pub fn run(args: &ValidateArgs) -> ExitCode {
    if let Some(path) = &args.residuals {
        return super::printed(super::coverage::write_residuals(path));
    }
    if args.coverage {
        return super::printed(super::coverage::report(
            args.file.as_ref(),
            args.write.as_ref(),
        ));
    }
    let file = args
        .file
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_FILE));
    let cases = match validate::load(&file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let file_name = file.file_name().map_or("published.json".into(), |n| {
        n.to_string_lossy().into_owned()
    });
    let result = validate::validate(&cases, &file_name);
    if let Some(path) = &args.write {
        let command = format!(
            "clustersim validate {} --write {}",
            file.display(),
            path.display()
        );
        if let Err(e) = std::fs::write(path, markdown(&result, &command)) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&result.to_json(&file)).expect("rows serialise")
        );
    } else {
        print!("{}", table(&result));
        if let Some(path) = &args.write {
            println!("written to {}", path.display());
        }
    }
    ExitCode::SUCCESS
}

/// A value with about four significant digits.
fn value(v: f64) -> String {
    match v.abs() {
        a if a >= 1000.0 => format!("{v:.0}"),
        a if a >= 100.0 => format!("{v:.1}"),
        a if a >= 10.0 => format!("{v:.2}"),
        _ => format!("{v:.3}"),
    }
}

fn percent(e: f64) -> String {
    format!("{:+.1}%", 100.0 * e)
}

fn opt_percent(e: Option<f64>) -> String {
    e.map_or("-".into(), |e| format!("{:.1}%", 100.0 * e))
}

fn worst(s: &Stats) -> String {
    s.worst
        .as_ref()
        .map_or("-".into(), |(id, e)| format!("{id} ({})", percent(*e)))
}

fn summary_line(s: &Stats) -> String {
    format!(
        "{} cases, {} compared, {} not expressible, {} failed; median |error| {} (median error {}), worst {}",
        s.cases,
        s.compared,
        s.not_expressible,
        s.failed,
        opt_percent(s.median_abs_error),
        s.median_error.map_or("-".into(), percent),
        worst(s)
    )
}

fn table(v: &Validation) -> String {
    let mut out = String::new();
    let w = v.rows.iter().map(|r| r.id.len()).max().unwrap_or(0).max(12);
    let _ = writeln!(
        out,
        "{:<w$} {:<17} {:>10} {:>10} {:>8}  status",
        "case", "metric", "measured", "predicted", "error"
    );
    for r in &v.rows {
        let id = if r.primary {
            r.id.clone()
        } else {
            "  + same row".to_string()
        };
        let status = match (&r.status, r.fits) {
            (Status::Compared, Some(false)) => "does not fit in memory".to_string(),
            (Status::Compared, _) => String::new(),
            (other, _) => other.to_string(),
        };
        let _ = writeln!(
            out,
            "{id:<w$} {:<17} {:>10} {:>10} {:>8}  {status}",
            r.short,
            value(r.measured),
            r.predicted.map_or("-".into(), value),
            r.error.map_or("-".into(), percent),
        );
    }
    let s = &v.summary;
    let _ = writeln!(out);
    for (group, g) in &s.groups {
        let _ = writeln!(
            out,
            "  {group:<14} {}/{} compared, median |error| {}, worst {}",
            g.compared,
            g.cases,
            opt_percent(g.median_abs_error),
            worst(g)
        );
    }
    if s.secondary.cases > 0 {
        let _ = writeln!(
            out,
            "  secondary figures (extra_metrics): {}/{} compared, median |error| {}",
            s.secondary.compared,
            s.secondary.cases,
            opt_percent(s.secondary.median_abs_error)
        );
    }
    let _ = writeln!(out, "summary: {}", summary_line(&s.all));
    let _ = writeln!(out, "validated in {:.1} s", v.wall_s);
    out
}

/// [`WEAKNESSES`] with each `{ID}` replaced by that row's error, or `None` when a named row is
/// not among `v`'s compared rows.
fn weaknesses(v: &Validation) -> Option<String> {
    let mut out = String::new();
    let mut rest = WEAKNESSES;
    while let Some(open) = rest.find('{') {
        let close = open + rest[open..].find('}')?;
        let id = &rest[open + 1..close];
        let row = v.rows.iter().find(|r| r.id == id)?;
        out.push_str(&rest[..open]);
        out.push_str(&percent(row.error?));
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Some(rewrap(&out, 100))
}

/// Refills each paragraph and list item of `text` to `width` columns (items' continuation lines
/// indented by two spaces), so that figures put in place of longer names leave no ragged lines.
fn rewrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut block: Vec<&str> = Vec::new();
    let flush = |block: &mut Vec<&str>, out: &mut String| {
        if block.is_empty() {
            return;
        }
        let item = block[0].starts_with("- ");
        let indent = if item { "  " } else { "" };
        let mut line = String::new();
        for word in block.iter().flat_map(|l| l.split_whitespace()) {
            if !line.is_empty() && line.len() + 1 + word.len() > width {
                out.push_str(&line);
                out.push('\n');
                line = indent.to_string();
            } else if !line.is_empty() && line != indent {
                line.push(' ');
            }
            line.push_str(word);
        }
        out.push_str(&line);
        out.push('\n');
        block.clear();
    };
    for l in text.lines() {
        if l.trim().is_empty() || l.starts_with('#') {
            flush(&mut block, &mut out);
            out.push_str(l);
            out.push('\n');
        } else {
            if l.starts_with("- ") {
                flush(&mut block, &mut out);
            }
            block.push(l);
        }
    }
    flush(&mut block, &mut out);
    out
}

/// Escapes the characters that would break a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn markdown(v: &Validation, command: &str) -> String {
    let s = &v.summary;
    let mut md = String::new();
    let _ = writeln!(md, "# Validation against published measurements\n");
    let _ = writeln!(
        md,
        "Generated by `{command}` (run from the repository root); do not edit by hand, run the \
         command again. `clustersim validate --json` prints the same rows with the scenario each \
         case became.\n"
    );
    let _ = writeln!(
        md,
        "Each case of the file is a measurement from a paper, a vendor report or a public \
         benchmark (see `shared/validation/README.md`). It is set up as its source states it and \
         run through the normal scenario pipeline; the predicted value is read in the case's own \
         convention. Nothing is tuned per case: where a source is silent, one documented default \
         applies to every case and is listed under the case's assumptions below. Error is \
         (predicted - measured) / measured.\n"
    );
    let _ = writeln!(md, "## Summary\n");
    let _ = writeln!(md, "- {}", summary_line(&s.all));
    if s.secondary.cases > 0 {
        let _ = writeln!(
            md,
            "- secondary figures of the same rows (`extra_metrics`): {} of {} compared, median \
             |error| {}, worst {}",
            s.secondary.compared,
            s.secondary.cases,
            opt_percent(s.secondary.median_abs_error),
            worst(&s.secondary)
        );
    }
    let _ = writeln!(
        md,
        "\n| group | cases | compared | not expressible | failed | median \\|error\\| | median error | worst |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---|");
    for (group, g) in &s.groups {
        let _ = writeln!(
            md,
            "| {group} | {} | {} | {} | {} | {} | {} | {} |",
            g.cases,
            g.compared,
            g.not_expressible,
            g.failed,
            opt_percent(g.median_abs_error),
            g.median_error.map_or("-".into(), percent),
            cell(&worst(g))
        );
    }
    let _ = writeln!(md, "\n## Results\n");
    let _ = writeln!(
        md,
        "| case | metric | unit | measured | predicted | error | status |"
    );
    let _ = writeln!(md, "|---|---|---|---:|---:|---:|---|");
    for r in &v.rows {
        let id = if r.primary {
            format!("`{}`", r.id)
        } else {
            format!("`{}` (extra)", r.id)
        };
        let status = match &r.status {
            Status::Compared if r.fits == Some(false) => {
                "compared; does not fit in memory".to_string()
            }
            Status::Compared => "compared".to_string(),
            Status::NotExpressible(_) => "not expressible".to_string(),
            Status::Failed(_) => "failed".to_string(),
        };
        let _ = writeln!(
            md,
            "| {id} | {} | {} | {} | {} | {} | {status} |",
            cell(&r.short),
            cell(&r.unit),
            value(r.measured),
            r.predicted.map_or("-".into(), value),
            r.error.map_or("-".into(), percent)
        );
    }
    let not_expressible = v.not_expressible();
    if !not_expressible.is_empty() {
        let _ = writeln!(md, "\n## Not expressible\n");
        let _ = writeln!(
            md,
            "The reason is the simulator's own refusal of the scenario the case became (or of a \
             minimal scenario of its kind), so a case becomes expressible when the feature lands.\n"
        );
        for (why, ids) in &not_expressible {
            let ids: Vec<String> = ids.iter().map(|i| format!("`{i}`")).collect();
            let _ = writeln!(md, "- **{}**: {}", cell(why), ids.join(", "));
        }
    }
    let failed: Vec<&Row> = v
        .rows
        .iter()
        .filter(|r| matches!(r.status, Status::Failed(_)))
        .collect();
    if !failed.is_empty() {
        let _ = writeln!(md, "\n## Failed\n");
        for r in failed {
            let _ = writeln!(md, "- `{}`: {}", r.id, cell(&r.status.to_string()));
        }
    }
    md.push_str(CONVENTIONS);
    match weaknesses(v) {
        Some(weak) => {
            md.push_str(&weak);
            md.push_str(&super::coverage::intervals_section());
        }
        None => md.push_str(
            "\n## Where the model is weak\n\nSee `docs/VALIDATION.md` (the shared file's \
             cases), whose figures it quotes from its own rows.\n",
        ),
    }
    let _ = writeln!(md, "\n## Assumptions per case\n");
    for r in v.rows.iter().filter(|r| r.primary) {
        let _ = writeln!(md, "### `{}`\n", r.id);
        let _ = writeln!(md, "Metric: {} ({}).\n", r.metric, r.unit);
        if r.assumptions.is_empty() {
            let _ = writeln!(md, "- none\n");
        } else {
            for a in &r.assumptions {
                let _ = writeln!(md, "- {a}");
            }
            let _ = writeln!(md);
        }
    }
    // One trailing newline.
    while md.ends_with("\n\n") {
        md.pop();
    }
    md
}

const CONVENTIONS: &str = include_str!("validate_conventions.md");

/// The section on where the model is weak, written for a file whose cases include every
/// `{ID}` it names: each `{ID}` becomes that row's error (`+11.4%`), so the figures follow the
/// model when it moves. Elsewhere a pointer to docs/VALIDATION.md stands in for it.
const WEAKNESSES: &str = include_str!("validate_weaknesses.md");
