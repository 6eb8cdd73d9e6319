//! clustersim-calibrate: the command line of the tool that measures a real GPU machine for
//! clustersim. So far it has one subcommand, `devices`, which lists the GPUs the CUDA driver sees
//! and which CUDA libraries can be loaded; the micro-benchmarks and profile files come later.
//!
//! This file only parses arguments, dispatches, prints and chooses the exit status: discovery
//! lives in `probe`, formatting in `report`. Exit status: 0 when the listing was printed, 1 when a
//! driver call failed part-way or stdout could not be written, 2 when there is nothing to measure
//! (no CUDA driver, an unusable driver, no GPU) and, as clap does, for usage errors.
//!
//! Deliberately ignored: configuration files, environment variables of its own, and selecting
//! devices (the driver's `CUDA_VISIBLE_DEVICES` already does that).

mod probe;
mod report;

use clap::{Parser, Subcommand};
use std::io::Write as _;
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "clustersim-calibrate",
    version,
    about = "Discovers the GPUs of this machine for clustersim calibration",
    after_help = "Exit status: 0 on success, 1 when a driver call fails, \
                  2 when there is nothing to measure (no CUDA driver or no GPU) or on a usage error.",
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the GPUs the CUDA driver sees and whether cuBLAS, NCCL and NVRTC can be loaded
    Devices {
        /// Print one JSON object instead of a table
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Devices { json } => devices(json),
    }
}

fn devices(json: bool) -> ExitCode {
    let inventory = match probe::probe() {
        Ok(inventory) => inventory,
        Err(err) => {
            for line in report::failure_lines(&err) {
                eprintln!("{line}");
            }
            return ExitCode::from(if err.nothing_to_measure() { 2 } else { 1 });
        }
    };
    let text = if json {
        report::devices_json(&inventory)
    } else {
        report::devices_text(&inventory)
    };
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{}: could not write the listing: {err}", report::PROG);
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_devices_and_json() {
        let cli = Cli::try_parse_from(["clustersim-calibrate", "devices", "--json"]).unwrap();
        assert!(matches!(cli.command, Command::Devices { json: true }));
        let cli = Cli::try_parse_from(["clustersim-calibrate", "devices"]).unwrap();
        assert!(matches!(cli.command, Command::Devices { json: false }));
    }

    #[test]
    fn no_subcommand_asks_for_help() {
        let err = Cli::try_parse_from(["clustersim-calibrate"]).unwrap_err();
        assert_eq!(
            err.kind(),
            clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        );
    }
}
