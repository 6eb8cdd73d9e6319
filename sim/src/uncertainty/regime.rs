//! The regime of a run: the few traits of its resolved set-up that drive its prediction error.
//! A regime is a path, leaf last (`training/multi-server/fp8`); each prefix is its parent.
//!
//! - training: `one-server` or `multi-server` (`cluster.nodes`), then `fp8` or `16-bit`
//!   (`model.dtype`);
//! - serving: `small-batch` when at most [`SMALL_BATCH`] requests run per replica on average
//!   over the run (`over_time.fleet.running` over `cluster.replicas`), else `large-batch`;
//! - diffusion: `long-video` from [`LONG_VIDEO_TOKENS`] latent tokens a video (`video.tokens`),
//!   else `short-video`;
//! - collective: `one-server`, or `multi-server` then `latency` below [`LATENCY_BYTES`] a rank
//!   (`size_bytes`), else `bandwidth`.
//!
//! Other kinds (cluster, federated, kernels) have no regime. docs/UNCERTAINTY.md says why these.

use serde_json::Value;

/// Requests running per replica at or below which serving is in the small-batch regime, where
/// the engine's work outside the kernels weighs most.
pub const SMALL_BATCH: f64 = 16.0;

/// Latent tokens a video from which diffusion is in the long-video regime (attention-bound).
pub const LONG_VIDEO_TOKENS: f64 = 50_000.0;

/// Bytes a rank below which a collective between servers is latency-bound.
pub const LATENCY_BYTES: f64 = (64u64 << 20) as f64;

/// The regime of a report, or None for a kind without one.
pub fn of_report(report: &Value) -> Option<String> {
    let num = |v: &Value| v.as_f64();
    match report["kind"].as_str()? {
        "training" => {
            let servers = num(&report["cluster"]["nodes"])?;
            let fp8 = report["model"]["dtype"].as_str() == Some("fp8");
            Some(format!(
                "training/{}/{}",
                scale(servers),
                if fp8 { "fp8" } else { "16-bit" }
            ))
        }
        "serving" => {
            let replicas = num(&report["cluster"]["replicas"])?.max(1.0);
            let running = report["over_time"]["fleet"]["running"]
                .as_array()
                .filter(|r| !r.is_empty());
            let per_replica = match running {
                Some(r) => r.iter().filter_map(Value::as_f64).sum::<f64>() / r.len() as f64,
                // No samples (a placed fleet): the batch limit bounds what runs.
                None => num(&report["serving"]["max_batch_size"])?,
            } / replicas;
            Some(format!(
                "serving/{}",
                if per_replica <= SMALL_BATCH {
                    "small-batch"
                } else {
                    "large-batch"
                }
            ))
        }
        "diffusion" => {
            let tokens = num(&report["video"]["tokens"])?;
            Some(format!(
                "diffusion/{}",
                if tokens >= LONG_VIDEO_TOKENS {
                    "long-video"
                } else {
                    "short-video"
                }
            ))
        }
        "collective" => Some(collective(
            num(&report["cluster"]["nodes"])?,
            num(&report["size_bytes"])?,
        )),
        _ => None,
    }
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
    fn each_kind_maps_from_its_report() {
        let t = json!({"kind": "training", "cluster": {"nodes": 16}, "model": {"dtype": "fp8"}});
        assert_eq!(of_report(&t).as_deref(), Some("training/multi-server/fp8"));
        let t = json!({"kind": "training", "cluster": {"nodes": 1}, "model": {"dtype": "bf16"}});
        assert_eq!(of_report(&t).as_deref(), Some("training/one-server/16-bit"));
        let s = |running: Vec<f64>| {
            json!({"kind": "serving", "cluster": {"replicas": 2},
                   "serving": {"max_batch_size": 256},
                   "over_time": {"fleet": {"running": running}}})
        };
        assert_eq!(
            of_report(&s(vec![2.0, 30.0])).as_deref(),
            Some("serving/small-batch")
        );
        assert_eq!(
            of_report(&s(vec![40.0, 30.0])).as_deref(),
            Some("serving/large-batch")
        );
        assert_eq!(
            of_report(&s(vec![])).as_deref(),
            Some("serving/large-batch")
        );
        let d = json!({"kind": "diffusion", "video": {"tokens": 118800}});
        assert_eq!(of_report(&d).as_deref(), Some("diffusion/long-video"));
        let c = json!({"kind": "collective", "cluster": {"nodes": 2}, "size_bytes": 8});
        assert_eq!(
            of_report(&c).as_deref(),
            Some("collective/multi-server/latency")
        );
        assert_eq!(collective(1.0, 1e9), "collective/one-server");
        assert_eq!(collective(4.0, 1e9), "collective/multi-server/bandwidth");
        assert_eq!(of_report(&json!({"kind": "kernels"})), None);
        assert_eq!(of_report(&json!({"kind": "training"})), None);
    }
}
