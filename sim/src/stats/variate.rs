//! Random variates from uniform draws only: uniform on (0, 1], exponential (mean 1), standard
//! normal, gamma (scale 1), lognormal, and the gaps of a Poisson process with a piecewise-constant
//! rate, on the portable `ln` and `exp` of `math`, so the same seed gives the same values on
//! every machine.

use super::math::{exp, ln};
use rand::RngExt;
use rand::rngs::ChaCha8Rng;

/// Uniform on (0, 1].
pub(crate) fn open_unit(rng: &mut ChaCha8Rng) -> f64 {
    1.0 - rng.random::<f64>()
}

/// Exponential with mean 1, by inversion.
pub(crate) fn exponential(rng: &mut ChaCha8Rng) -> f64 {
    -ln(open_unit(rng))
}

/// Standard normal: Box-Muller in Marsaglia's polar form (no sine or cosine needed).
pub(crate) fn normal(rng: &mut ChaCha8Rng) -> f64 {
    loop {
        let u = 2.0 * rng.random::<f64>() - 1.0;
        let v = 2.0 * rng.random::<f64>() - 1.0;
        let s = u * u + v * v;
        if s > 0.0 && s < 1.0 {
            return u * (-2.0 * ln(s) / s).sqrt();
        }
    }
}

/// Gamma with the given shape and scale 1 (mean `shape`): Marsaglia and Tsang (2000), with
/// `G(k) = G(k + 1) * U^(1/k)` for shapes below 1.
pub(crate) fn gamma(rng: &mut ChaCha8Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        let g = gamma(rng, shape + 1.0);
        let u = open_unit(rng);
        return exp(ln(g) + ln(u) / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let (x, v) = loop {
            let x = normal(rng);
            let v = 1.0 + c * x;
            if v > 0.0 {
                break (x, v * v * v);
            }
        };
        let u = open_unit(rng);
        let x2 = x * x;
        if u < 1.0 - 0.0331 * x2 * x2 || ln(u) < 0.5 * x2 + d * (1.0 - v + ln(v)) {
            return d * v;
        }
    }
}

/// The `mu` of a lognormal of mean `mean` whose logarithm has standard deviation `sigma`.
pub(crate) fn lognormal_mu(mean: f64, sigma: f64) -> f64 {
    ln(mean) - sigma * sigma / 2.0
}

/// `exp(N(mu, sigma))`.
pub(crate) fn lognormal(rng: &mut ChaCha8Rng, mu: f64, sigma: f64) -> f64 {
    exp(mu + sigma * normal(rng))
}

/// Seconds from `now` to the next arrival of a Poisson process whose rate is `steps[i].1` from
/// `steps[i].0` seconds on (the steps sorted by time, the last rate lasting for ever): one
/// unit-rate exponential draw spent against the integrated rate, step by step (the time change
/// of a non-homogeneous Poisson process), so a quiet step (rate 0) is skipped and each arrival
/// costs exactly one draw.
pub(crate) fn piecewise_poisson_gap(steps: &[(f64, f64)], now: f64, rng: &mut ChaCha8Rng) -> f64 {
    let mut left = exponential(rng);
    let mut t = now.max(steps[0].0);
    let mut i = steps.partition_point(|&(at, _)| at <= t).saturating_sub(1);
    loop {
        let rate = steps[i].1;
        match steps.get(i + 1) {
            Some(&(next, _)) => {
                let room = (next - t) * rate;
                if rate > 0.0 && left < room {
                    return t + left / rate - now;
                }
                left -= room;
                t = next;
                i += 1;
            }
            None => return t + left / rate - now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::RngStreams;

    #[test]
    fn samplers_have_their_moments() {
        let mut rng = RngStreams::new(3).stream("moments");
        let n = 200_000;
        let moments = |xs: &[f64]| {
            let mean = xs.iter().sum::<f64>() / xs.len() as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
            (mean, var)
        };
        let (m, v) = moments(&(0..n).map(|_| normal(&mut rng)).collect::<Vec<_>>());
        assert!(m.abs() < 0.01 && (v - 1.0).abs() < 0.01, "normal {m} {v}");
        let (m, v) = moments(&(0..n).map(|_| exponential(&mut rng)).collect::<Vec<_>>());
        assert!(
            (m - 1.0).abs() < 0.01 && (v - 1.0).abs() < 0.03,
            "exponential {m} {v}"
        );
        for shape in [0.1, 0.25, 1.0, 4.0, 30.0] {
            let (m, v) = moments(&(0..n).map(|_| gamma(&mut rng, shape)).collect::<Vec<_>>());
            assert!((m / shape - 1.0).abs() < 0.02, "gamma({shape}) mean {m}");
            assert!(
                (v / shape - 1.0).abs() < 0.06,
                "gamma({shape}) variance {v}"
            );
        }
    }
}
