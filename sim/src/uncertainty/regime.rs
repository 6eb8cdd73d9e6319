//! The regime of a run: the few traits of its resolved set-up that drive its prediction error.
//! A regime is a path, leaf last (`training/multi-server/fp8`); each prefix is its parent.
//!
//! - training: `moe` for a mixture of experts (`model.active_params` below `model.params`), else
//!   `one-server` or `multi-server` (`cluster.nodes`), then `fp8` or `16-bit` (`model.dtype`);
//! - serving: `small-batch` when at most [`SMALL_BATCH`] requests run per replica on average
//!   over the run (`over_time.fleet.running` over `cluster.replicas`), else `large-batch`;
//! - diffusion: `long-video` from [`LONG_VIDEO_TOKENS`] latent tokens a video (`video.tokens`),
//!   else `short-video`;
//! - collective: `one-server`, or `multi-server` then `latency` below [`LATENCY_BYTES`] a rank
//!   (`size_bytes`), else `bandwidth`.
//!
//! Read from the typed reports (`report::typed`); other kinds (cluster, federated, kernels) have
//! no regime. docs/UNCERTAINTY.md says why these.

use crate::report::any::Report;
use serde_json::Value;

/// Requests running per replica at or below which serving is in the small-batch regime, where
/// the engine's work outside the kernels weighs most.
pub const SMALL_BATCH: f64 = 16.0;

/// Latent tokens a video from which diffusion is in the long-video regime (attention-bound).
pub const LONG_VIDEO_TOKENS: f64 = 50_000.0;

/// Bytes a rank below which a collective between servers is latency-bound.
pub const LATENCY_BYTES: f64 = (64u64 << 20) as f64;

/// The regime of a report, or None for a kind without one (or JSON that is not its kind's
/// report).
pub fn of_report(report: &Value) -> Option<String> {
    match Report::from_value(report).ok()? {
        Report::Training(t) if t.model.active_params < t.model.params => Some(training_moe()),
        Report::Training(t) => Some(training(t.cluster.nodes, t.model.dtype == "fp8")),
        Report::Serving(s) => {
            let running = s
                .over_time
                .as_ref()
                .and_then(|o| o["fleet"]["running"].as_array())
                .filter(|r| !r.is_empty());
            let per_replica = match running {
                Some(r) => r.iter().filter_map(Value::as_f64).sum::<f64>() / r.len() as f64,
                // No samples (a placed fleet): the batch limit bounds what runs.
                None => s.serving.max_batch_size as f64,
            } / s.cluster.replicas.max(1) as f64;
            Some(serving(per_replica))
        }
        Report::Diffusion(d) => Some(diffusion(d.video.tokens as f64)),
        Report::Collective(c) => Some(collective(c.cluster.nodes as f64, c.size_bytes as f64)),
        Report::Kernels(_) | Report::Federated(_) | Report::Cluster(_) => None,
    }
}

/// The regime of training on `servers` servers, in fp8 or not.
pub fn training(servers: u32, fp8: bool) -> String {
    format!(
        "training/{}/{}",
        scale(servers as f64),
        if fp8 { "fp8" } else { "16-bit" }
    )
}

/// The regime of training a mixture of experts, whose routing, token exchange and small expert
/// GEMMs drive its error more than its scale or format.
pub fn training_moe() -> String {
    "training/moe".into()
}

/// The regime of a fleet running `per_replica` requests a replica on average.
pub fn serving(per_replica: f64) -> String {
    format!(
        "serving/{}",
        if per_replica <= SMALL_BATCH {
            "small-batch"
        } else {
            "large-batch"
        }
    )
}

/// The regime of a video of `tokens` latent tokens.
pub fn diffusion(tokens: f64) -> String {
    format!(
        "diffusion/{}",
        if tokens >= LONG_VIDEO_TOKENS {
            "long-video"
        } else {
            "short-video"
        }
    )
}

/// The regime of a collective over `servers` servers of `bytes` a rank.
pub fn collective(servers: f64, bytes: f64) -> String {
    if servers <= 1.0 {
        "collective/one-server".into()
    } else if bytes < LATENCY_BYTES {
        "collective/multi-server/latency".into()
    } else {
        "collective/multi-server/bandwidth".into()
    }
}

fn scale(servers: f64) -> &'static str {
    if servers <= 1.0 {
        "one-server"
    } else {
        "multi-server"
    }
}

/// A regime and its parents, leaf first: `a/b/c`, `a/b`, `a`.
pub fn lineage(regime: &str) -> impl Iterator<Item = &str> {
    let cuts: Vec<usize> = regime
        .match_indices('/')
        .map(|(i, _)| i)
        .chain([regime.len()])
        .collect();
    cuts.into_iter().rev().map(move |i| &regime[..i])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lineage_runs_from_the_leaf_to_the_kind() {
        let l: Vec<&str> = lineage("training/multi-server/fp8").collect();
        assert_eq!(
            l,
            [
                "training/multi-server/fp8",
                "training/multi-server",
                "training"
            ]
        );
        assert_eq!(lineage("serving").collect::<Vec<_>>(), ["serving"]);
    }

    #[test]
    fn each_kind_maps_from_its_figures() {
        assert_eq!(training(16, true), "training/multi-server/fp8");
        assert_eq!(training(1, false), "training/one-server/16-bit");
        assert_eq!(training_moe(), "training/moe");
        assert_eq!(serving(16.0), "serving/small-batch");
        assert_eq!(serving(35.0), "serving/large-batch");
        assert_eq!(diffusion(118_800.0), "diffusion/long-video");
        assert_eq!(diffusion(32_760.0), "diffusion/short-video");
        assert_eq!(collective(2.0, 8.0), "collective/multi-server/latency");
        assert_eq!(collective(1.0, 1e9), "collective/one-server");
        assert_eq!(collective(4.0, 1e9), "collective/multi-server/bandwidth");
    }

    #[test]
    fn kinds_without_a_regime_and_partial_reports_have_none() {
        assert_eq!(of_report(&json!({"kind": "kernels"})), None);
        assert_eq!(of_report(&json!({"kind": "training"})), None);
        let partial =
            json!({"kind": "training", "cluster": {"nodes": 16}, "model": {"dtype": "fp8"}});
        assert_eq!(of_report(&partial), None);
    }
}
