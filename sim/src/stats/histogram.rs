//! Latency histograms on fixed buckets, the same for every run, so that two reports' counts line
//! up and a viewer can draw the distribution rather than three percentiles.
//!
//! Edges are ISO 3's R20 preferred numbers (1, 1.12, 1.25, 1.4, ... 8, 9) times each power of ten
//! from 10 µs to 1,000 s, then 10,000 s: 181 edges, seconds, about 12% apart. Counts
//! have one more entry than edges: `counts[0]` below the first edge, `counts[i]` in
//! `[edges[i - 1], edges[i])`, the last at or above the last edge. Edges are parsed from their
//! decimal text, so they are the same bits on every machine. Ignored: weights and NaN samples
//! (counted above the last edge).

use serde_json::{Value, json};

/// R20's mantissas, as text so that each edge is the correctly rounded decimal.
const R20: [&str; 20] = [
    "1", "1.12", "1.25", "1.4", "1.6", "1.8", "2", "2.24", "2.5", "2.8", "3.15", "3.55", "4",
    "4.5", "5", "5.6", "6.3", "7.1", "8", "9",
];

/// The first and last powers of ten the edges span.
const FIRST_DECADE: i32 = -5;
const LAST_DECADE: i32 = 4;

/// The buckets' edges, seconds, ascending.
pub fn edges() -> Vec<f64> {
    let mut e: Vec<f64> = (FIRST_DECADE..LAST_DECADE)
        .flat_map(|k| R20.iter().map(move |m| format!("{m}e{k}")))
        .map(|t| t.parse().expect("a decimal edge"))
        .collect();
    e.push(format!("1e{LAST_DECADE}").parse().expect("a decimal edge"));
    e
}

/// How many of `values` fall in each bucket of `edges` (one more count than edges).
pub fn counts(edges: &[f64], values: &[f64]) -> Vec<u64> {
    let mut c = vec![0u64; edges.len() + 1];
    for &v in values {
        let i = if v.is_nan() {
            edges.len()
        } else {
            edges.partition_point(|&e| e <= v)
        };
        c[i] += 1;
    }
    c
}

/// A report section: the edges and each named sample's counts.
pub fn report(samples: &[(&str, &[f64])]) -> Value {
    let e = edges();
    let mut out = json!({ "edges_s": e });
    for (name, values) in samples {
        out[*name] = json!(counts(&e, values));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_are_r20_from_ten_microseconds_to_ten_thousand_seconds() {
        let e = edges();
        assert_eq!(e.len(), 181);
        assert_eq!(e[0], 1e-5);
        assert_eq!(e[2], 1.25e-5);
        assert_eq!(e[100], 1.0);
        assert_eq!(e[110], 3.15);
        assert_eq!(e[180], 1e4);
        assert!(
            e.windows(2)
                .all(|w| w[1] / w[0] > 1.1 && w[1] / w[0] < 1.15)
        );
    }

    #[test]
    fn each_value_lands_in_one_bucket_edges_inclusive_below() {
        let e = edges();
        let c = counts(&e, &[1e-6, 1.0, 1.1, 1.25, 2e4, f64::NAN]);
        assert_eq!(c.len(), 182);
        assert_eq!(c.iter().sum::<u64>(), 6);
        assert_eq!(c[0], 1, "below 10 us");
        assert_eq!(c[101], 2, "[1, 1.12) s");
        assert_eq!(c[103], 1, "[1.25, 1.4) s");
        assert_eq!(c[181], 2, "at or above 10,000 s, and NaN");
    }
}
