//! A serving run's throughput over time, counted from its trace.
//!
//! The serving trace (`clustersim::workload::serving::trace`) holds every replica iteration on a
//! lane of its replica (or server), with the number of decodes it ran as its `micro_batch`, and
//! every completed request's prefill (admission to first token) and decode (first token to last)
//! on rows of the `requests` group, named `request ID prefill` / `request ID decode`. From those:
//!
//! - **requests completed** in a time bucket: requests whose last span ends in it;
//! - **output tokens** in a bucket: each completed request's first token at the end of its
//!   prefill, plus the decodes of every decode or mixed iteration ending in it, counted on the lanes
//!   that emit tokens: a replica's `iterations` lane, the last `engine K` of a pipeline-parallel
//!   replica, or the servers holding the model's last layers (`layers A-B` with the largest B).
//!   Earlier pipeline stages run the same decodes and are not counted again.
//!
//! Buckets are a round 1, 2 or 5 × 10^k seconds, about [`BUCKETS`] of them from time 0 to the
//! last completion. Deliberately ignored: decodes of requests that had not completed when the run
//! ended (there are none in a run that drains), and prefill chunks (they produce no token).

use crate::ruler;
use clustersim::exec::{Graph, OpKind, Timeline};
use std::collections::HashMap;

/// About how many buckets the run is cut into.
pub const BUCKETS: f32 = 80.0;

/// Tokens and completions per time bucket.
#[derive(Clone, Debug, PartialEq)]
pub struct Throughput {
    /// Width of a bucket, seconds; bucket `i` covers `[i × bucket_s, (i + 1) × bucket_s)`.
    pub bucket_s: f64,
    /// Output tokens produced in each bucket.
    pub tokens: Vec<u64>,
    /// Requests completed in each bucket.
    pub requests: Vec<u64>,
}

impl Throughput {
    pub fn total_tokens(&self) -> u64 {
        self.tokens.iter().sum()
    }

    pub fn total_requests(&self) -> u64 {
        self.requests.iter().sum()
    }

    /// `(bucket start s, tokens/s)` of each bucket.
    pub fn tokens_per_s(&self) -> Vec<(f64, f64)> {
        self.per_s(&self.tokens)
    }

    /// `(bucket start s, requests/s)` of each bucket.
    pub fn requests_per_s(&self) -> Vec<(f64, f64)> {
        self.per_s(&self.requests)
    }

    fn per_s(&self, counts: &[u64]) -> Vec<(f64, f64)> {
        counts
            .iter()
            .enumerate()
            .map(|(i, &n)| (i as f64 * self.bucket_s, n as f64 / self.bucket_s))
            .collect()
    }
}

/// Whether lane `name` of a serving replica emits tokens, given the largest engine index of its
/// group and the largest last layer of all `layers` lanes.
fn emits(name: &str, last_engine: Option<u32>, last_layer: Option<u32>) -> bool {
    if name == "iterations" {
        return true;
    }
    if let Some(k) = name.strip_prefix("engine ") {
        return k.parse().ok() == Some(last_engine.unwrap_or(0));
    }
    if let Some(r) = name.strip_prefix("layers ") {
        return r.rsplit_once('-').and_then(|(_, b)| b.parse().ok()) == last_layer;
    }
    false
}

/// The throughput of a serving run's trace; `None` when the trace has no `requests` rows (not a
/// serving run, or no request completed).
pub fn from_trace(graph: &Graph, timeline: &Timeline) -> Option<Throughput> {
    let mut last_engine: HashMap<&str, u32> = HashMap::new();
    let mut last_layer: Option<u32> = None;
    for lane in &graph.lanes {
        if let Some(k) = lane
            .name
            .strip_prefix("engine ")
            .and_then(|k| k.parse().ok())
        {
            let e = last_engine.entry(lane.group.as_str()).or_insert(k);
            *e = (*e).max(k);
        }
        if let Some(b) = lane
            .name
            .strip_prefix("layers ")
            .and_then(|r| r.rsplit_once('-'))
            .and_then(|(_, b)| b.parse::<u32>().ok())
        {
            last_layer = Some(last_layer.map_or(b, |l| l.max(b)));
        }
    }
    let requests_lane: Vec<bool> = graph.lanes.iter().map(|l| l.group == "requests").collect();
    if !requests_lane.contains(&true) {
        return None;
    }
    let emitting: Vec<bool> = graph
        .lanes
        .iter()
        .map(|l| {
            l.group != "requests"
                && emits(
                    &l.name,
                    last_engine.get(l.group.as_str()).copied(),
                    last_layer,
                )
        })
        .collect();
    // Each request's first token (end of its prefill) and completion (its last span's end), s.
    let mut lives: HashMap<&str, (Option<f64>, f64)> = HashMap::new();
    // Decode tokens: (time, count).
    let mut decodes: Vec<(f64, u64)> = Vec::new();
    for (i, op) in graph.ops.iter().enumerate() {
        let lane = op.lane as usize;
        let end = timeline.end[i].as_secs_f64();
        if requests_lane[lane] {
            let Some((id, what)) = op
                .name
                .strip_prefix("request ")
                .and_then(|r| r.rsplit_once(' '))
            else {
                continue;
            };
            // The first token ends the prefill span and starts the decode span (a span of no
            // length is not in the trace, so either may be missing).
            let life = lives.entry(id).or_insert((None, 0.0));
            match what {
                "prefill" => life.0 = Some(end),
                "decode" => life.0 = Some(timeline.start[i].as_secs_f64()),
                _ => {}
            }
            life.1 = life.1.max(end);
        } else if emitting[lane]
            && op.kind == OpKind::Compute
            && matches!(op.name.as_ref(), "decode" | "mixed")
        {
            decodes.push((end, u64::from(op.micro_batch.unwrap_or(0))));
        }
    }
    if lives.is_empty() {
        return None;
    }
    let last = lives.values().map(|l| l.1).fold(0.0, f64::max);
    let bucket_s = ruler::step(last.max(f64::MIN_POSITIVE), BUCKETS, 1.0);
    let n = (last / bucket_s).floor() as usize + 1;
    let bucket = |t: f64| ((t / bucket_s).floor() as usize).min(n - 1);
    let mut out = Throughput {
        bucket_s,
        tokens: vec![0; n],
        requests: vec![0; n],
    };
    for &(first, done) in lives.values() {
        out.requests[bucket(done)] += 1;
        // Neither span: the first token came at admission and the request was done at once.
        out.tokens[bucket(first.unwrap_or(done))] += 1;
    }
    for (t, k) in decodes {
        out.tokens[bucket(t)] += k;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn run(name: &str) -> (serde_json::Value, Option<Throughput>) {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/serving")
            .join(name);
        let scenario = clustersim::Scenario::load(&path, &[]).unwrap();
        let out = clustersim::run(&scenario).unwrap();
        let t = from_trace(&out.graph, &out.timeline);
        (out.report, t)
    }

    /// The buckets add up to the report's own counts: requests completed, and output tokens
    /// (the report's tokens/s times its span, the span being completions over requests/s).
    fn check(name: &str) {
        let (r, t) = run(name);
        let t = t.unwrap_or_else(|| panic!("{name}: a serving trace has throughput"));
        let done = r["requests_completed"].as_u64().unwrap();
        assert_eq!(t.total_requests(), done, "{name}");
        let span = done as f64 / r["throughput"]["requests_per_s"].as_f64().unwrap();
        let tokens = r["throughput"]["output_tokens_per_s"].as_f64().unwrap() * span;
        let got = t.total_tokens() as f64;
        assert!(
            (got - tokens).abs() <= 1e-6 * tokens + 0.5,
            "{name}: {got} tokens in the buckets, {tokens} in the report"
        );
        assert!(
            t.tokens.len() >= 20 && t.tokens.len() <= 201,
            "{}",
            t.tokens.len()
        );
    }

    #[test]
    fn one_replica_offline_adds_up_to_the_report() {
        check("llama-3.1-8b-1xh100-offline.toml");
    }

    #[test]
    fn disaggregated_and_tensor_parallel_runs_add_up_to_the_report() {
        check("llama-3-70b-disaggregated-2p6d.toml");
        check("llama-3-70b-tp4-poisson-slo.toml");
    }

    #[test]
    fn a_placed_fleet_counts_the_last_layers_only() {
        check("llama-3-70b-mixed-max-flow.toml");
    }

    #[test]
    fn lanes_that_emit_tokens() {
        assert!(emits("iterations", None, None));
        assert!(emits("engine 3", Some(3), None));
        assert!(!emits("engine 1", Some(3), None));
        assert!(emits("layers 40-79", None, Some(79)));
        assert!(!emits("layers 0-39", None, Some(79)));
        assert!(!emits("kv transfers", None, None));
    }

    #[test]
    fn a_training_trace_has_no_throughput_over_time() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/training/gpt3-1.3b-8xh100.toml");
        let out = clustersim::run(&clustersim::Scenario::load(&path, &[]).unwrap()).unwrap();
        assert_eq!(from_trace(&out.graph, &out.timeline), None);
    }
}
