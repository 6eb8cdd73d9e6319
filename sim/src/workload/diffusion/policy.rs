//! Diffusion's policies: which waiting video request a free group of GPUs takes. The video
//! queue (`workload::diffusion::queue`) serves by it; the scenario file's `[diffusion] scheduler`
//! names it.

use serde::Deserialize;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VideoScheduler {
    /// First come, first served.
    Fcfs,
    /// Shortest job first: the waiting video with the least simulated latency.
    Sjf,
}
