//! When requests arrive, as a process that draws them: all at once, Poisson, gamma renewal gaps
//! (shape `1/cv^2`) or a Poisson process whose rate steps over time. Gaps in seconds, then
//! `SimTime`; every draw from the named stream the caller hands in.

use super::variate::{exponential, gamma, piecewise_poisson_gap};
use crate::engine::SimTime;
use rand::rngs::ChaCha8Rng;

#[derive(Clone, Debug)]
pub(crate) enum Arrivals {
    Offline,
    /// Exponential gaps with mean `1/rate` seconds.
    Poisson {
        rate: f64,
    },
    /// Gamma gaps: shape `k = 1/cv^2`, scale `(1/rate)/k` seconds.
    Gamma {
        shape: f64,
        scale: f64,
    },
    /// A Poisson process whose rate is `steps[i].1` per second from `steps[i].0` seconds on
    /// (times increasing; the last rate positive).
    Piecewise {
        steps: Vec<(f64, f64)>,
    },
}

impl Arrivals {
    /// When the first request arrives: time 0 (the other processes start with an arrival), or
    /// with a piecewise rate the schedule's first arrival, drawn from time 0.
    pub(crate) fn first(&self, rng: &mut ChaCha8Rng) -> SimTime {
        match self {
            Arrivals::Piecewise { steps } => {
                SimTime::from_secs_f64(piecewise_poisson_gap(steps, 0.0, rng))
            }
            _ => SimTime::ZERO,
        }
    }

    /// Time from `now` to the next arrival.
    pub(crate) fn gap(&self, now: SimTime, rng: &mut ChaCha8Rng) -> SimTime {
        let secs = match self {
            Arrivals::Offline => 0.0,
            Arrivals::Poisson { rate } => exponential(rng) / rate,
            Arrivals::Gamma { shape, scale } => gamma(rng, *shape) * scale,
            Arrivals::Piecewise { steps } => piecewise_poisson_gap(steps, now.as_secs_f64(), rng),
        };
        SimTime::from_secs_f64(secs)
    }
}
