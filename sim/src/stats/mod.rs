//! Summary statistics of measured or simulated samples (seconds, relative errors, ...), shared by
//! the profile builder, the calibrator and the tests; below, portable math, random variates and
//! the samplers built on them (request arrivals, token lengths).
//!
//! Deliberately ignored: weighting, and NaN samples (they sort last by `f64::total_cmp`).

pub(crate) mod arrivals;
pub mod histogram;
pub(crate) mod lengths;
pub(crate) mod math;
pub(crate) mod variate;

/// The median of a sample, the mean of the middle two for an even count; `None` when empty.
/// Sorts `values` in place.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        0.5 * (values[n / 2 - 1] + values[n / 2])
    })
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn odd_even_and_empty() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }
}
