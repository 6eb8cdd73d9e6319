//! The planner's flags as the CLI and the Python package take them: the checks they get (with
//! the CLI's messages, naming its flags) and the [`Options`] they make for a scenario of a kind,
//! and the quantities with units two of them read.

use super::{Objective, Options};
use crate::scenario::Kind;
use crate::scenario::quantity::{Bytes, Duration};

/// `clustersim plan`'s flags, read.
#[derive(Copy, Clone, Debug)]
pub struct Flags {
    pub top: usize,
    pub simulate: Option<usize>,
    pub objective: Objective,
    pub slo_attainment: Option<f64>,
    pub max_latency_s: Option<f64>,
    pub headroom_bytes: Option<f64>,
}

impl Flags {
    /// The checks that need no scenario.
    pub fn check(&self) -> Result<(), String> {
        if self.top == 0 || self.simulate == Some(0) {
            return Err("--top and --simulate must be at least 1".into());
        }
        Ok(())
    }

    /// The options for a scenario of `kind`: `--simulate` is a training plan's alone.
    pub fn options(&self, kind: Kind) -> Result<Options, String> {
        self.check()?;
        if self.simulate.is_some() && kind != Kind::Training {
            return Err(format!(
                "--simulate caps a training plan's full simulations; a {} plan simulates \
                 every valid candidate (remove --simulate{})",
                kind.name(),
                if kind == Kind::Serving {
                    "; to shorten each run, cap its traffic with --set workload.requests=N"
                } else {
                    ""
                }
            ));
        }
        let defaults = Options::default();
        Ok(Options {
            top: self.top,
            simulate: self.simulate.unwrap_or(defaults.simulate).max(self.top),
            objective: self.objective,
            slo_attainment: self.slo_attainment,
            max_latency_s: self.max_latency_s,
            headroom_bytes: self.headroom_bytes.unwrap_or(0.0),
        })
    }
}

/// `--max-latency`: a duration with its unit ("60 s"), in seconds.
pub fn latency_s(text: &str) -> Result<f64, String> {
    Duration::parse(text)
        .map(Duration::secs)
        .map_err(|e| format!("{e} (e.g. --max-latency \"60 s\")"))
}

/// `--memory-headroom`: a size with its unit ("4 GiB"), in bytes.
pub fn headroom_bytes(text: &str) -> Result<f64, String> {
    Bytes::parse(text)
        .map(|b| b.0 as f64)
        .map_err(|e| format!("{e} (e.g. --memory-headroom \"4 GiB\")"))
}
