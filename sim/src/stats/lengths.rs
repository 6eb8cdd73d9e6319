//! How many tokens a request's prompt or output has, as a distribution that draws them: fixed,
//! uniform (inclusive), lognormal (rounded and clamped) or drawn from observed values.

use super::variate::lognormal;
use rand::RngExt;
use rand::rngs::ChaCha8Rng;

#[derive(Clone, Debug)]
pub(crate) enum Lengths {
    Fixed(u32),
    /// Inclusive.
    Uniform {
        min: u32,
        max: u32,
    },
    /// `exp(N(mu, sigma))`, rounded and clamped to `[lo, hi]`.
    Lognormal {
        mu: f64,
        sigma: f64,
        lo: u32,
        hi: u32,
    },
    /// Drawn uniformly from the observed values (already clamped).
    Empirical(Vec<u32>),
}

impl Lengths {
    pub(crate) fn sample(&self, rng: &mut ChaCha8Rng) -> u32 {
        match self {
            Lengths::Fixed(n) => *n,
            Lengths::Uniform { min, max } => rng.random_range(*min..=*max),
            Lengths::Lognormal { mu, sigma, lo, hi } => {
                let v = lognormal(rng, *mu, *sigma).round();
                v.clamp(*lo as f64, *hi as f64) as u32
            }
            Lengths::Empirical(values) => values[rng.random_range(0..values.len() as u64) as usize],
        }
    }
}
