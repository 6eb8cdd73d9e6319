//! `clustersim sweep`: flags in, a progress bar on stderr, rows out (see `clustersim::sweep`).

use clap::Args;
use clustersim::sweep::{Format, Shard, Sweep, SweepError, format};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args)]
pub struct SweepArgs {
    scenario: PathBuf,
    /// A key and its values: --vary parallel.tp=1,2,4 (repeatable: the grid is the product,
    /// the first --vary varying slowest). Commas inside quotes or brackets do not split.
    #[arg(long = "vary", value_name = "KEY=V1,V2,...", required = true)]
    vary: Vec<String>,
    /// Override a key at every point: --set parallel.micro_batch=2 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Write the rows to FILE.csv (CSV) or FILE.jsonl (JSON Lines); CSV on stdout without it.
    #[arg(long, value_name = "FILE.csv|FILE.jsonl")]
    out: Option<PathBuf>,
    /// Run only the points whose number is I modulo N (0-based: 0/4 .. 3/4).
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// A report path to keep, replacing the default metrics (repeatable): --metric mfu.
    #[arg(long = "metric", value_name = "PATH")]
    metrics: Vec<String>,
}

fn fail(e: &SweepError) -> ExitCode {
    eprintln!("{e}");
    ExitCode::from(2)
}

fn cannot_write(path: &std::path::Path, e: &std::io::Error) -> SweepError {
    SweepError::File {
        path: path.to_path_buf(),
        message: format!("cannot write it: {e}"),
    }
}

pub fn run(args: &SweepArgs) -> ExitCode {
    let started = Instant::now();
    let shard = match args.shard.as_deref().map(Shard::parse).transpose() {
        Ok(s) => s.unwrap_or(Shard::WHOLE),
        Err(e) => return fail(&e),
    };
    let sweep = match Sweep::new(&args.scenario, &args.sets, &args.vary, shard, &args.metrics) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    // Check the output before running, so that a bad path fails in a second, not after hours:
    // open it without truncating (creating it if missing), write it once the rows are in.
    let format = match &args.out {
        None => Format::Csv,
        Some(path) => match Format::of_path(path) {
            Ok(f) => f,
            Err(e) => return fail(&e),
        },
    };
    let created = match &args.out {
        Some(path) => {
            let existed = path.exists();
            let opened = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(path);
            if let Err(e) = opened {
                return fail(&cannot_write(path, &e));
            }
            (!existed).then(|| path.clone())
        }
        None => None,
    };
    let bar =
        ProgressBar::with_draw_target(Some(sweep.shard_len() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{wide_bar}] {pos}/{len} points, {per_sec}, ETA {eta}",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    let outcome = match sweep.run(&|| bar.inc(1)) {
        Ok(o) => o,
        Err(e) => {
            bar.finish_and_clear();
            if let Some(path) = created {
                let _ = std::fs::remove_file(path);
            }
            return fail(&e);
        }
    };
    // The summary below says what the finished bar would.
    bar.finish_and_clear();
    let written = match &args.out {
        None => {
            let mut out = std::io::stdout().lock();
            format::write(&outcome.table, format, &mut out).and_then(|()| out.flush())
        }
        Some(path) => std::fs::File::create(path).and_then(|f| {
            let mut out = std::io::BufWriter::new(f);
            format::write(&outcome.table, format, &mut out).and_then(|()| out.flush())
        }),
    };
    if let Err(e) = written {
        let path = args.out.clone().unwrap_or_else(|| "stdout".into());
        return fail(&cannot_write(&path, &e));
    }
    let of = if shard == Shard::WHOLE {
        String::new()
    } else {
        format!(" (shard {shard} of a {}-point grid)", sweep.grid().len())
    };
    let (points, wall) = (outcome.ok + outcome.failed, started.elapsed().as_secs_f64());
    eprintln!(
        "sweep: {points} points{of}, {} ok, {} failed, in {wall:.1} s ({:.0} points/s){}",
        outcome.ok,
        outcome.failed,
        points as f64 / wall.max(1e-9),
        args.out
            .as_ref()
            .map_or(String::new(), |p| format!("; written to {}", p.display()))
    );
    if outcome.absent_metrics.is_empty() {
        ExitCode::SUCCESS
    } else {
        for m in &outcome.absent_metrics {
            eprintln!("error: {m} (its column is empty)");
        }
        ExitCode::from(2)
    }
}
