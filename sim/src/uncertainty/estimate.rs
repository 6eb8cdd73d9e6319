//! An 80% prediction interval for a case from a source not yet seen, from the residuals of a
//! regime: x = ln(predicted time / measured time) of every validation case.
//!
//! Cases of one source share its set-up and its bias, so they are not independent: x is modelled
//! as a source's offset (between-source variance tau^2) plus a case's own scatter (within-source
//! variance s^2), estimated by the method of moments with every source weighted alike. The
//! interval is mu -/+ t * sd, with sd^2 = tau^2 + s^2 + Var(mu) for a new source's case and t
//! Student's 90% quantile with (sources - 1) degrees of freedom, so few sources widen it.
//! Ignored: skew, and any difference between the metrics of a regime.

use crate::stats::math::exp;
use std::collections::BTreeMap;

/// The interval's level.
pub const LEVEL: f64 = 0.8;

/// Sources a regime needs before its residuals make an interval; fewer fall back to its parent.
pub const MIN_SOURCES: usize = 3;

/// Residuals of one regime as an interval on x = ln(predicted time / measured time).
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    /// Lower and upper bounds of x.
    pub low: f64,
    pub high: f64,
    pub cases: usize,
    pub sources: usize,
}

impl Band {
    /// The interval of the true value of a time predicted as `predicted`.
    pub fn time(&self, predicted: f64) -> (f64, f64) {
        (predicted * exp(-self.high), predicted * exp(-self.low))
    }

    /// The interval of the true value of a rate (the inverse of a time) predicted as `predicted`.
    pub fn rate(&self, predicted: f64) -> (f64, f64) {
        (predicted * exp(self.low), predicted * exp(self.high))
    }

    /// Whether a case of residual `x` lies inside.
    pub fn covers(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }

    /// Half the interval's width as a fraction of the prediction, for a time.
    pub fn half_width(&self) -> f64 {
        (exp(-self.low) - exp(-self.high)) / 2.0
    }
}

/// The band of residuals `(source, x)`, or None with fewer than [`MIN_SOURCES`] sources. The
/// result does not depend on the order of `residuals`.
pub fn band<'a>(residuals: impl IntoIterator<Item = (&'a str, f64)>) -> Option<Band> {
    // Sources by name, each one's residuals sorted: sums in one order whatever the input's.
    let mut by_source: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for (source, x) in residuals {
        by_source.entry(source).or_default().push(x);
    }
    let groups: Vec<Vec<f64>> = by_source
        .into_values()
        .map(|mut g| {
            g.sort_by(f64::total_cmp);
            g
        })
        .collect();
    let k = groups.len();
    if k < MIN_SOURCES {
        return None;
    }
    let n: usize = groups.iter().map(Vec::len).sum();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let means: Vec<f64> = groups.iter().map(|g| mean(g)).collect();
    let mu = mean(&means);
    let within_ss: f64 = groups
        .iter()
        .zip(&means)
        .map(|(g, m)| g.iter().map(|x| (x - m) * (x - m)).sum::<f64>())
        .sum();
    let within = if n > k {
        within_ss / (n - k) as f64
    } else {
        0.0
    };
    let between_of_means = means.iter().map(|m| (m - mu) * (m - mu)).sum::<f64>() / (k - 1) as f64;
    let inverse_sizes = groups.iter().map(|g| 1.0 / g.len() as f64).sum::<f64>() / k as f64;
    let tau2 = (between_of_means - within * inverse_sizes).max(0.0);
    let var_mu = (tau2 + within * inverse_sizes) / k as f64;
    let sd = (tau2 + within + var_mu).sqrt();
    let t = t90(k - 1);
    Some(Band {
        low: mu - t * sd,
        high: mu + t * sd,
        cases: n,
        sources: k,
    })
}

/// Student's t distribution's 90% quantile (a two-sided 80% interval) for `dof` degrees of
/// freedom (standard tables); between tabulated values the next smaller dof's, which is wider.
fn t90(dof: usize) -> f64 {
    const TABLE: [(usize, f64); 18] = [
        (1, 3.078),
        (2, 1.886),
        (3, 1.638),
        (4, 1.533),
        (5, 1.476),
        (6, 1.440),
        (7, 1.415),
        (8, 1.397),
        (9, 1.383),
        (10, 1.372),
        (12, 1.356),
        (15, 1.341),
        (20, 1.325),
        (25, 1.316),
        (30, 1.310),
        (40, 1.303),
        (60, 1.296),
        (120, 1.289),
    ];
    TABLE
        .iter()
        .rev()
        .find(|(d, _)| *d <= dof)
        .map_or(TABLE[0].1, |(_, t)| *t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_few_sources_make_no_band() {
        assert_eq!(band([("a", 0.1), ("a", 0.2), ("b", 0.0)]), None);
    }

    #[test]
    fn identical_sources_make_a_point_and_spread_widens_it() {
        let b = band([("a", 0.1), ("b", 0.1), ("c", 0.1)]).expect("three sources");
        assert!((b.low - 0.1).abs() < 1e-12 && (b.high - 0.1).abs() < 1e-12);
        let narrow = band([("a", 0.0), ("b", 0.1), ("c", -0.1)]).expect("band");
        let wide = band([("a", 0.0), ("b", 0.3), ("c", -0.3)]).expect("band");
        assert!(wide.high - wide.low > 2.9 * (narrow.high - narrow.low));
        // Centred on the mean of the sources' means, each source weighted alike.
        let b = band([("a", 0.0), ("a", 0.0), ("a", 0.0), ("b", 0.3), ("c", 0.3)]).unwrap();
        assert!(((b.low + b.high) / 2.0 - 0.2).abs() < 1e-12);
    }

    #[test]
    fn more_sources_of_the_same_spread_narrow_the_band() {
        let few = band([("a", -0.1), ("b", 0.0), ("c", 0.1)]).unwrap();
        let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
        let xs = [-0.1, 0.0, 0.1, -0.1, 0.0, 0.1, -0.1, 0.0, 0.1];
        let many = band(names.iter().copied().zip(xs)).unwrap();
        assert!(many.high - many.low < few.high - few.low);
    }

    #[test]
    fn order_does_not_matter_and_bounds_map_to_times_and_rates() {
        let a = band([("a", -0.2), ("b", 0.05), ("c", 0.1), ("a", 0.0)]).unwrap();
        let b = band([("c", 0.1), ("a", 0.0), ("b", 0.05), ("a", -0.2)]).unwrap();
        assert_eq!(a, b);
        // A prediction too fast (x < 0) means the truth is slower: the time's interval lies above.
        let fast = Band {
            low: -0.3,
            high: -0.1,
            cases: 3,
            sources: 3,
        };
        let (lo, hi) = fast.time(10.0);
        assert!(lo > 10.0 && hi > lo);
        let (lo, hi) = fast.rate(10.0);
        assert!(hi < 10.0 && lo < hi);
        assert!(fast.covers(-0.2) && !fast.covers(0.0));
    }

    #[test]
    fn t_quantiles_fall_towards_the_normal() {
        assert_eq!(t90(2), 1.886);
        assert_eq!(t90(11), 1.372);
        assert_eq!(t90(1000), 1.289);
        assert!(t90(1) > t90(5) && t90(5) > t90(100));
    }
}
