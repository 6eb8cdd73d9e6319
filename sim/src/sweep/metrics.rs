//! Which figures of a report a sweep row carries.
//!
//! By default the contract's headline figures of the scenario's kind, the main one with its 80%
//! interval (`uncertainty.*.low`, `.high`); `--metric PATH` (any
//! dotted report path, as `[expect]` takes) replaces them. Values are looked up with
//! `scenario::expect::lookup`, the same lookup `[expect]` uses. Deliberately ignored: the wall
//! time of a run (`sim.wall_s`), which the library never puts in a report, so that the same
//! sweep gives the same bytes.

use crate::scenario::Kind;
use crate::scenario::expect::{Expectation, lookup};
use serde_json::Value;

/// The default metrics of a kind of scenario.
pub fn defaults(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Training => &[
            "iteration_time_s",
            "uncertainty.iteration_time_s.low",
            "uncertainty.iteration_time_s.high",
            "tokens_per_s",
            "tflops_per_gpu",
            "mfu",
            "memory.peak_bytes_per_gpu",
            "memory.fits",
        ],
        Kind::Serving => &[
            "requests_completed",
            "throughput.requests_per_s",
            "throughput.output_tokens_per_s",
            "uncertainty.throughput.output_tokens_per_s.low",
            "uncertainty.throughput.output_tokens_per_s.high",
            "ttft_s.p50",
            "uncertainty.ttft_s.p50.low",
            "uncertainty.ttft_s.p50.high",
            "ttft_s.p99",
            "tpot_s.p50",
            "tpot_s.p99",
            "e2e_s.p50",
            "slo.attainment",
        ],
        Kind::Diffusion => &[
            "latency_s",
            "uncertainty.latency_s.low",
            "uncertainty.latency_s.high",
            "denoise_step_s",
            "videos_per_hour",
            "memory.peak_bytes_per_gpu",
        ],
        Kind::Collective => &[
            "time_s",
            "uncertainty.time_s.low",
            "uncertainty.time_s.high",
            "algbw_GBps",
            "busbw_GBps",
            "algorithm",
        ],
        Kind::Kernels => &[
            "time_s",
            "launches",
            "launch_overhead_share",
            "unconsolidated.time_s",
            "speedup",
        ],
        Kind::Federated => &[
            "round_time_s.p50",
            "round_time_s.p90",
            "rounds_per_hour",
            "upload_bytes_per_device",
            "upload_bytes_per_round",
            "stragglers_dropped",
        ],
        Kind::Cluster => &[
            "slowdown.max",
            "jobs.0.slowdown",
            "jobs.1.slowdown",
            "links.busiest.0.busy",
        ],
    }
}

/// The value at `path` in `report`, or `None` when the report has no such key.
pub fn read(report: &Value, path: &str) -> Option<Value> {
    lookup(report, path).cloned()
}

/// Why `report` has no value at `path`, with the closest path it has (as `[expect]` says it).
pub fn absence(report: &Value, path: &str) -> String {
    Expectation::default()
        .evaluate(path, report)
        .failure
        .unwrap_or_else(|| format!("the report has `{path}`"))
}

/// Refuses a metric that no report can have: the wall time, left out for determinism.
pub fn check(path: &str) -> Result<(), String> {
    if path == "sim.wall_s" {
        return Err(format!(
            "--metric {path}: sweep rows leave out wall-clock time so that the same sweep gives \
             the same bytes; the sweep prints its total time on stderr"
        ));
    }
    if path.is_empty() || path.split('.').any(str::is_empty) {
        return Err(format!(
            "--metric {path}: not a dotted report path (e.g. --metric memory.fits)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn read_and_absence_use_the_expect_lookup() {
        let r = json!({"memory": {"fits": true, "peak_bytes_per_gpu": 5}});
        assert_eq!(read(&r, "memory.fits"), Some(json!(true)));
        assert_eq!(read(&r, "memory.fit"), None);
        let why = absence(&r, "memory.fit");
        assert!(why.contains("did you mean `memory.fits`"), "{why}");
    }

    #[test]
    fn wall_time_is_refused() {
        assert!(check("sim.wall_s").unwrap_err().contains("wall-clock"));
        assert!(check("a..b").is_err());
        assert!(check("mfu").is_ok());
    }
}
