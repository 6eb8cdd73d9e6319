//! The AFL++ target (docs/FUZZ.md): AFL's bytes read as a scenario file and run as the CLI runs
//! it. A refusal is fine; a panic aborts, which AFL counts as a crash, and AFL's `-t` finds
//! runs that hang. Files a scenario names resolve against the working directory.

use std::path::Path;

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let Ok(text) = std::str::from_utf8(data) else {
            return;
        };
        let Ok(s) = clustersim::Scenario::parse(Path::new("fuzz.toml"), text.to_string(), &[])
        else {
            return;
        };
        let _ = clustersim::run(&s);
    });
}
