//! Statistics of repeated timings and the warm-up/repetition logic that produces them.
//!
//! Pure: the timer is a closure `calls -> seconds` (the GPU layer's CUDA-event timing of `calls`
//! back-to-back invocations), so the logic is tested here with synthetic timers.
//!
//! One measured point is taken in three steps:
//! 1. **Warm-up**: a single call, then batches sized from the running per-call estimate, until at
//!    least `warmup_calls` calls and `warmup_s` of GPU time have run (at most
//!    [`MAX_WARMUP_BATCHES`] batches). Nothing of the warm-up is kept except the estimate.
//! 2. **Batch size**: `calls_per_sample = ceil(target_batch_s / estimate)`, within
//!    `1..=max_batch`, so that a timed batch lasts well past the resolution of CUDA events
//!    (about 0.5 us) for short kernels and is one call for long ones.
//! 3. **Samples**: `reps` timed batches, each giving one per-call time (batch time / calls), fewer
//!    (but at least `min_reps`) when `reps` batches would take longer than `point_budget_s`.
//!
//! The statistic kept in profiles is the median of the samples; the spread reported with it is
//! `(p90 - p10) / median` (quantiles interpolated linearly between order statistics).

/// Warm-up batches at most, whatever the policy asks.
pub const MAX_WARMUP_BATCHES: u32 = 8;

/// Order statistics of a set of per-call times (seconds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub samples: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub p10: f64,
    pub p90: f64,
    pub mean: f64,
}

impl Summary {
    /// `(p90 - p10) / median`: 0 when every sample is equal.
    pub fn spread(&self) -> f64 {
        if self.median > 0.0 {
            (self.p90 - self.p10) / self.median
        } else {
            0.0
        }
    }
}

/// The summary of `values`, or None when there are none or one is not a finite number.
pub fn summarize(values: &[f64]) -> Option<Summary> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(Summary {
        samples: sorted.len(),
        median: quantile(&sorted, 0.5),
        min: sorted[0],
        max: sorted[sorted.len() - 1],
        p10: quantile(&sorted, 0.1),
        p90: quantile(&sorted, 0.9),
        mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
    })
}

/// Quantile `q` of sorted values, interpolating linearly between order statistics (the median
/// of an even count is the mean of the middle two).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// How one point is warmed up and repeated (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RepPolicy {
    pub warmup_calls: u32,
    pub warmup_s: f64,
    pub reps: u32,
    pub min_reps: u32,
    pub target_batch_s: f64,
    pub max_batch: u32,
    pub point_budget_s: f64,
}

impl RepPolicy {
    /// Calls per timed batch for a per-call time of `estimate_s`.
    pub fn batch_for(&self, estimate_s: f64) -> u32 {
        if estimate_s.is_nan() || estimate_s <= 0.0 {
            return self.max_batch.max(1);
        }
        let calls = (self.target_batch_s / estimate_s).ceil();
        (calls.min(f64::from(self.max_batch)) as u32).clamp(1, self.max_batch.max(1))
    }

    /// Timed batches for a per-call time of `estimate_s` and batches of `batch` calls.
    pub fn reps_for(&self, estimate_s: f64, batch: u32) -> u32 {
        let batch_s = estimate_s * f64::from(batch);
        let fit = if batch_s > 0.0 {
            (self.point_budget_s / batch_s).floor()
        } else {
            f64::from(self.reps)
        };
        (fit.min(f64::from(self.reps)) as u32).max(self.min_reps.min(self.reps))
    }
}

/// One measured point: the per-call times of each timed batch, and how they were obtained.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// One per timed batch: batch time / calls, seconds.
    pub per_call_s: Vec<f64>,
    pub summary: Summary,
    pub calls_per_sample: u32,
    pub warmup_calls: u32,
    /// GPU time spent warming up, seconds.
    pub warmup_s: f64,
}

/// Why a point has no measurement.
#[derive(Debug, PartialEq)]
pub enum MeasureError<E> {
    /// The timer failed.
    Timer(E),
    /// The timer returned something that is not a positive time.
    Invalid(String),
}

/// Warms up, sizes batches and takes the samples of one point (see the module docs). `timer(c)`
/// runs `c` back-to-back calls and returns their total time in seconds.
pub fn measure<E>(
    policy: &RepPolicy,
    mut timer: impl FnMut(u32) -> Result<f64, E>,
) -> Result<Measurement, MeasureError<E>> {
    let mut time = |calls: u32| -> Result<f64, MeasureError<E>> {
        let t = timer(calls).map_err(MeasureError::Timer)?;
        if !(t.is_finite() && t > 0.0) {
            return Err(MeasureError::Invalid(format!(
                "{calls} calls timed at {t} s; expected a positive time"
            )));
        }
        Ok(t)
    };
    // 1. Warm-up.
    let (mut calls, mut spent, mut batches) = (0u32, 0.0f64, 0u32);
    let mut batch = 1u32;
    let mut estimate;
    loop {
        let t = time(batch)?;
        calls += batch;
        spent += t;
        batches += 1;
        estimate = t / f64::from(batch);
        if (calls >= policy.warmup_calls && spent >= policy.warmup_s)
            || batches >= MAX_WARMUP_BATCHES
        {
            break;
        }
        let by_time = ((policy.warmup_s - spent).max(0.0) / estimate).ceil();
        let by_calls = f64::from(policy.warmup_calls.saturating_sub(calls));
        batch = (by_time.max(by_calls).min(f64::from(policy.max_batch)) as u32).max(1);
    }
    // 2. Batch size, 3. samples.
    let per_sample = policy.batch_for(estimate);
    let reps = policy.reps_for(estimate, per_sample);
    let mut per_call_s = Vec::with_capacity(reps as usize);
    for _ in 0..reps {
        per_call_s.push(time(per_sample)? / f64::from(per_sample));
    }
    let summary = summarize(&per_call_s)
        .ok_or_else(|| MeasureError::Invalid("no samples (the policy asks for none)".into()))?;
    Ok(Measurement {
        per_call_s,
        summary,
        calls_per_sample: per_sample,
        warmup_calls: calls,
        warmup_s: spent,
    })
}

/// Wall-clock seconds one point is expected to take for a per-call time of `estimate_s`, with
/// `sync_s` of host overhead per timed batch (launching, waiting, the spin that lets the host get
/// ahead): the time budget of a plan is checked with this.
pub fn expected_point_s(policy: &RepPolicy, estimate_s: f64, sync_s: f64) -> f64 {
    // A single call, then one or two batches sized from the estimate.
    let warm_batches = if policy.warmup_calls <= 1 && estimate_s >= policy.warmup_s {
        1.0
    } else {
        3.0
    };
    let warm_gpu = (f64::from(policy.warmup_calls) * estimate_s).max(policy.warmup_s);
    let batch = policy.batch_for(estimate_s);
    let reps = policy.reps_for(estimate_s, batch);
    let sampled_gpu = f64::from(reps) * f64::from(batch) * estimate_s;
    warm_gpu + sampled_gpu + (warm_batches + f64::from(reps)) * sync_s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RepPolicy {
        RepPolicy {
            warmup_calls: 3,
            warmup_s: 1e-3,
            reps: 5,
            min_reps: 3,
            target_batch_s: 2e-4,
            max_batch: 100,
            point_budget_s: 0.5,
        }
    }

    #[test]
    fn summary_of_known_values() {
        let s = summarize(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!(s.samples, 5);
        assert_eq!((s.min, s.median, s.max, s.mean), (1.0, 3.0, 5.0, 3.0));
        assert!((s.p10 - 1.4).abs() < 1e-12, "{}", s.p10);
        assert!((s.p90 - 4.6).abs() < 1e-12, "{}", s.p90);
        assert!((s.spread() - 3.2 / 3.0).abs() < 1e-12);
        // Even count: the mean of the middle two.
        assert_eq!(summarize(&[4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
        // One sample: everything is that sample, no spread.
        let one = summarize(&[7.0]).unwrap();
        assert_eq!((one.p10, one.p90, one.spread()), (7.0, 7.0, 0.0));
        assert_eq!(summarize(&[]), None);
        assert_eq!(summarize(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn batch_and_reps_follow_the_policy() {
        let p = policy();
        assert_eq!(p.batch_for(5e-6), 40); // 0.2 ms of 5 us calls
        assert_eq!(p.batch_for(1e-9), 100); // capped
        assert_eq!(p.batch_for(1e-3), 1); // long calls: one per batch
        assert_eq!(p.batch_for(0.0), 100);
        assert_eq!(p.reps_for(5e-6, 40), 5);
        assert_eq!(p.reps_for(0.15, 1), 3); // 5 x 150 ms would pass the 0.5 s budget
        assert_eq!(p.reps_for(10.0, 1), 3); // never fewer than min_reps
    }

    /// A GPU-like timer: the first calls are slow (clocks ramping, first-call set-up), then
    /// every call takes `steady` seconds with a small deterministic jitter.
    struct Fake {
        steady: f64,
        calls: u32,
        batches: Vec<u32>,
    }

    impl Fake {
        fn time(&mut self, calls: u32) -> Result<f64, String> {
            self.batches.push(calls);
            let mut total = 0.0;
            for _ in 0..calls {
                self.calls += 1;
                let slow = if self.calls <= 2 { 10.0 } else { 1.0 };
                let jitter = 1.0 + 0.01 * f64::from(self.calls % 3);
                total += self.steady * slow * jitter;
            }
            Ok(total)
        }
    }

    #[test]
    fn short_kernels_are_batched_and_warm_up_is_discarded() {
        let mut fake = Fake {
            steady: 5e-6,
            calls: 0,
            batches: vec![],
        };
        let m = measure(&policy(), |c| fake.time(c)).unwrap();
        // The slow first calls are in the warm-up, not in the samples.
        assert!(m.warmup_calls >= 3 && m.warmup_s >= 1e-3, "{m:?}");
        assert_eq!(m.per_call_s.len(), 5);
        assert!(m.calls_per_sample >= 40, "{m:?}");
        let s = m.summary;
        assert!((s.median - 5.05e-6).abs() < 0.05e-6, "{s:?}");
        assert!(s.spread() < 0.01, "{s:?}");
        // Warm-up: one call, then batches sized from the estimate (not one call at a time).
        assert_eq!(fake.batches[0], 1);
        assert!(fake.batches.len() <= MAX_WARMUP_BATCHES as usize + 5);
    }

    #[test]
    fn long_kernels_run_one_per_sample_and_respect_the_budget() {
        let mut fake = Fake {
            steady: 0.2,
            calls: 0,
            batches: vec![],
        };
        let m = measure(&policy(), |c| fake.time(c)).unwrap();
        assert_eq!(m.calls_per_sample, 1);
        assert_eq!(m.per_call_s.len(), 3); // 5 x 0.2 s would pass the 0.5 s point budget
        assert_eq!(m.warmup_calls, 3);
        assert!((m.summary.median - 0.202).abs() < 0.003, "{m:?}");
    }

    #[test]
    fn timer_errors_and_bad_times_are_reported() {
        let failed = measure(&policy(), |_| Err::<f64, _>("boom"));
        assert_eq!(failed, Err(MeasureError::Timer("boom")));
        let zero = measure(&policy(), |_| Ok::<f64, ()>(0.0));
        assert!(matches!(zero, Err(MeasureError::Invalid(_))), "{zero:?}");
        let mut n = 0;
        let nan_later = measure(&policy(), |c| {
            n += 1;
            Ok::<f64, ()>(if n > 3 { f64::NAN } else { 1e-3 * f64::from(c) })
        });
        assert!(matches!(nan_later, Err(MeasureError::Invalid(_))));
    }

    #[test]
    fn expected_time_grows_with_the_kernel() {
        let p = policy();
        let short = expected_point_s(&p, 5e-6, 1e-3);
        let long = expected_point_s(&p, 0.1, 1e-3);
        assert!(short > 0.0 && short < 0.02, "{short}");
        assert!(long > 0.5 && long < 1.0, "{long}");
    }
}
