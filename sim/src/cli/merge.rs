//! `clustersim merge`: the parts of a sharded sweep joined into one file (see
//! `clustersim::sweep::merge`).

use clap::Args;
use clustersim::sweep::{Format, Part, SweepError, merge};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct MergeArgs {
    /// The parts written by `sweep --shard I/N --out ...`, in any order.
    #[arg(required = true, value_name = "PART")]
    parts: Vec<PathBuf>,
    /// The merged file: .csv or .jsonl, the format of the parts.
    #[arg(long, value_name = "FILE.csv|FILE.jsonl")]
    out: PathBuf,
}

fn fail(e: &SweepError) -> ExitCode {
    eprintln!("{e}");
    ExitCode::from(2)
}

pub fn run(args: &MergeArgs) -> ExitCode {
    let format = match Format::of_path(&args.out) {
        Ok(f) => f,
        Err(e) => return fail(&e),
    };
    let mut parts = Vec::new();
    for path in &args.parts {
        let file_error = |message: String| SweepError::File {
            path: path.clone(),
            message,
        };
        match Format::of_path(path) {
            Ok(f) if f == format => {}
            Ok(f) => {
                return fail(&file_error(format!(
                    "a {} part cannot merge into {} ({})",
                    f.name(),
                    args.out.display(),
                    format.name()
                )));
            }
            Err(e) => return fail(&e),
        }
        match std::fs::read(path) {
            Ok(bytes) => parts.push(Part {
                path: path.clone(),
                bytes,
            }),
            Err(e) => return fail(&file_error(format!("cannot read it: {e}"))),
        }
    }
    let merged = match merge(&parts, format) {
        Ok(m) => m,
        Err(e) => return fail(&e),
    };
    if let Err(e) = std::fs::write(&args.out, &merged) {
        return fail(&SweepError::File {
            path: args.out.clone(),
            message: format!("cannot write it: {e}"),
        });
    }
    eprintln!("merge: {} parts into {}", parts.len(), args.out.display());
    ExitCode::SUCCESS
}
