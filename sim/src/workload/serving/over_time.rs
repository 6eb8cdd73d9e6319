//! A fleet over time: at the start of every iteration a replica records its queue (requests
//! waiting to be admitted), its running batch (requests admitted) and its KV cache in use
//! (fraction of its blocks). The report bins the run into `BUCKETS` equal spans and gives each
//! span's largest value per replica (up to `MAX_REPLICAS` replicas) and, for the fleet, the sum
//! of those queues and batches and the mean KV use. A replica that starts no iteration in a
//! span was idle: nothing waiting or running, its cache empty. Ignored: placed fleets (their
//! pipelines keep no samples), and the values between iteration starts.

use crate::engine::SimTime;
use serde_json::{Value, json};

/// Spans the run is binned into.
pub const BUCKETS: usize = 120;

/// Replicas reported one by one; a larger fleet gives only its totals.
pub const MAX_REPLICAS: usize = 32;

/// One replica at the start of one iteration.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub replica: u32,
    pub at: SimTime,
    pub waiting: u32,
    pub running: u32,
    /// KV cache in use, parts per million of the replica's blocks.
    pub kv_ppm: u32,
}

/// The report's `over_time` for `replicas` replicas, binned from time zero to `end`.
pub fn report(samples: &[Sample], replicas: usize, end: SimTime) -> Value {
    let span = end.as_secs_f64().max(f64::MIN_POSITIVE);
    let bucket_s = span / BUCKETS as f64;
    let mut queued = vec![vec![0u32; BUCKETS]; replicas];
    let mut running = vec![vec![0u32; BUCKETS]; replicas];
    let mut kv = vec![vec![0u32; BUCKETS]; replicas];
    for s in samples {
        let b = ((s.at.as_secs_f64() / bucket_s) as usize).min(BUCKETS - 1);
        let r = s.replica as usize;
        queued[r][b] = queued[r][b].max(s.waiting);
        running[r][b] = running[r][b].max(s.running);
        kv[r][b] = kv[r][b].max(s.kv_ppm);
    }
    let fraction = |ppm: &[u32]| -> Vec<f64> { ppm.iter().map(|&p| p as f64 * 1e-6).collect() };
    let total = |v: &[Vec<u32>]| -> Vec<u64> {
        (0..BUCKETS)
            .map(|b| v.iter().map(|r| r[b] as u64).sum())
            .collect()
    };
    let mean_kv: Vec<f64> = (0..BUCKETS)
        .map(|b| kv.iter().map(|r| r[b] as f64 * 1e-6).sum::<f64>() / replicas.max(1) as f64)
        .collect();
    let per_replica: Value = if replicas <= MAX_REPLICAS {
        (0..replicas)
            .map(|r| {
                json!({
                    "queued": queued[r],
                    "running": running[r],
                    "kv_use": fraction(&kv[r]),
                })
            })
            .collect()
    } else {
        Value::Null
    };
    json!({
        "bucket_s": bucket_s,
        "fleet": {
            "queued": total(&queued),
            "running": total(&running),
            "kv_use": mean_kv,
        },
        "replicas": per_replica,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: f64) -> SimTime {
        SimTime::from_secs_f64(s)
    }

    #[test]
    fn each_span_keeps_its_largest_value_and_the_fleet_sums_them() {
        let sample = |replica, t, waiting, running, kv_ppm| Sample {
            replica,
            at: at(t),
            waiting,
            running,
            kv_ppm,
        };
        let samples = [
            sample(0, 0.0, 3, 1, 100_000),
            sample(0, 0.01, 1, 4, 500_000),
            sample(1, 0.02, 2, 2, 250_000),
            sample(1, 11.9, 0, 1, 50_000),
        ];
        let r = report(&samples, 2, at(12.0));
        assert_eq!(r["bucket_s"], 0.1);
        let reps = r["replicas"].as_array().unwrap();
        assert_eq!(reps[0]["queued"][0], 3);
        assert_eq!(reps[0]["running"][0], 4);
        assert_eq!(reps[0]["kv_use"][0], 0.5);
        assert_eq!(reps[0]["queued"][1], 0, "idle");
        assert_eq!(reps[1]["running"][BUCKETS - 1], 1);
        assert_eq!(r["fleet"]["queued"][0], 5);
        assert_eq!(r["fleet"]["running"][0], 6);
        assert_eq!(r["fleet"]["kv_use"][0], 0.375);
    }

    #[test]
    fn a_large_fleet_gives_only_its_totals() {
        let r = report(&[], MAX_REPLICAS + 1, at(1.0));
        assert!(r["replicas"].is_null());
        assert_eq!(r["fleet"]["queued"].as_array().unwrap().len(), BUCKETS);
    }
}
