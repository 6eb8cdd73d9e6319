//! The `clustersim` command line. Parsing and printing only: modelling lives in the library.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
