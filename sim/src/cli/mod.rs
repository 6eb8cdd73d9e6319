//! Commands of the `clustersim` binary.
//!
//! Exit codes: 0 success, 1 an expectation failed (`check`), 2 bad input (unknown key, missing
//! file, impossible configuration, bad option) with the message on stderr.

mod collective;
mod coverage;
mod list;
mod merge;
mod plan;
mod sweep;
mod validate;

use clap::{Parser, Subcommand, ValueEnum};
use clustersim::check;
use clustersim::scenario::Scenario;
use clustersim::scenario::error::ScenarioError;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "clustersim",
    version,
    about = "Discrete-event simulator of GPU clusters running large-model training, serving and video diffusion",
    after_help = "Scenario files are TOML; see README.md. Exit codes: 0 ok, 1 an expectation failed, 2 bad input."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate one scenario and print its report.
    Run {
        scenario: PathBuf,
        /// Override a key of the scenario: --set parallel.micro_batch=2 (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Print exactly one JSON object (the report) on stdout.
        #[arg(long)]
        json: bool,
        /// Write a Chrome trace-event file (opens in ui.perfetto.dev).
        #[arg(long, value_name = "FILE.json")]
        trace: Option<PathBuf>,
    },
    /// Run scenario files (directories recursively) and evaluate their [expect] assertions.
    Check {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Override a key in every scenario (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
    },
    /// Price a collective (or a sweep of sizes, like nccl-tests) on a cluster.
    Collective(Box<collective::CollectiveArgs>),
    /// List what the simulator knows.
    List { what: ListWhat },
    /// Run published measurements; print measured vs predicted and the errors.
    Validate(validate::ValidateArgs),
    /// Run a scenario over a grid of values (--vary KEY=V1,V2,...), one CSV or JSONL row a point.
    Sweep(Box<sweep::SweepArgs>),
    /// Join the parts of a sharded sweep into the file the unsharded sweep writes.
    Merge(merge::MergeArgs),
    /// Search the parallel configurations of a training, serving or diffusion scenario; best first.
    Plan(plan::PlanArgs),
}

#[derive(Copy, Clone, ValueEnum)]
enum ListWhat {
    Gpus,
    Models,
    Topologies,
}

/// Prints a command's text and succeeds, or prints its error and exits 2.
fn printed<E: std::fmt::Display>(result: Result<String, E>) -> ExitCode {
    match result {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run {
            scenario,
            sets,
            json,
            trace,
        } => run(&scenario, &sets, json, trace.as_deref()),
        Command::Check { paths, sets } => check(&paths, &sets),
        Command::Collective(args) => printed(collective::run(&args)),
        Command::List { what } => {
            let text = match what {
                ListWhat::Gpus => list::gpus(),
                ListWhat::Models => list::models(),
                ListWhat::Topologies => list::topologies(),
            };
            print!("{text}");
            ExitCode::SUCCESS
        }
        Command::Validate(args) => validate::run(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::Merge(args) => merge::run(&args),
        Command::Plan(args) => plan::run(&args),
    }
}

fn bad_input(e: &ScenarioError) -> ExitCode {
    eprintln!("{e}");
    ExitCode::from(2)
}

fn run(
    path: &std::path::Path,
    sets: &[String],
    json: bool,
    trace: Option<&std::path::Path>,
) -> ExitCode {
    let started = Instant::now();
    let scenario = match Scenario::load(path, sets) {
        Ok(s) => s,
        Err(e) => return bad_input(&e),
    };
    let mut output = match clustersim::run(&scenario) {
        Ok(o) => o,
        Err(e) => return bad_input(&e),
    };
    let wall = started.elapsed().as_secs_f64();
    output.report["sim"]["wall_s"] = serde_json::json!(wall);
    if let Some(trace_path) = trace {
        let written = std::fs::File::create(trace_path).and_then(|f| {
            let mut w = std::io::BufWriter::new(f);
            output.write_trace(&mut w)?;
            w.flush()
        });
        if let Err(e) = written {
            eprintln!(
                "error: cannot write the trace to {}: {e}",
                trace_path.display()
            );
            return ExitCode::from(2);
        }
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&output.report).expect("a report serialises")
        );
    } else {
        print!("{}", clustersim::report::summary::render(&output.report));
        if let Some(trace_path) = trace {
            println!(
                "trace written to {} (open it in ui.perfetto.dev)",
                trace_path.display()
            );
        }
    }
    ExitCode::SUCCESS
}

fn check(paths: &[PathBuf], sets: &[String]) -> ExitCode {
    let files = match check::discover(paths) {
        Ok(f) => f,
        Err(e) => return bad_input(&e),
    };
    let (mut failed, mut broken, mut passed) = (0, 0, 0);
    for file in &files {
        match check::check_file(file, sets) {
            Ok(outcomes) => {
                let fails: Vec<_> = outcomes.iter().filter(|o| !o.passed()).collect();
                if fails.is_empty() {
                    passed += 1;
                    println!("ok   {} ({} expectations)", file.display(), outcomes.len());
                } else {
                    failed += 1;
                    println!("FAIL {}", file.display());
                    for o in fails {
                        println!(
                            "     {}",
                            o.failure
                                .as_deref()
                                .map_or(String::new(), |f| format!("{}: {f}", o.path))
                        );
                    }
                }
            }
            Err(e) => {
                broken += 1;
                println!("ERR  {} ({})", file.display(), e.position());
                eprintln!("{e}");
            }
        }
    }
    println!(
        "{} scenarios: {passed} passed, {failed} failed, {broken} with bad input",
        files.len()
    );
    if broken > 0 {
        ExitCode::from(2)
    } else if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
