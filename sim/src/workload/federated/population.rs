//! The device population of federated training: each device's achieved training speed (FLOP/s)
//! and its uplink and downlink (bytes/s), drawn once per run from lognormal laws around a
//! median; which devices are online when a round starts; which selected devices drop out.
//!
//! Draws come from named streams ("device-compute", "device-uplink", "device-downlink",
//! "availability", "cohort", "dropout"), so changing one law never moves another's draws; the
//! logarithm and exponential are the fdlibm ones of `stats::math`, so a seed gives the same
//! population on every machine. Deliberately ignored: correlation between a device's speed and
//! its links, availability that follows the time of day (charging at night), a device's speed
//! varying from round to round, and devices leaving or joining the population.

use crate::engine::RngStreams;
use crate::stats::math::exp;
use crate::stats::variate::{normal, open_unit};
use rand::RngExt;
use rand::rngs::ChaCha8Rng;
use std::collections::BTreeSet;

/// A lognormal law: `median * exp(sigma * N(0, 1))` (sigma 0: every draw is the median).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub sigma: f64,
}

impl Spread {
    fn draw(self, rng: &mut ChaCha8Rng) -> f64 {
        if self.sigma == 0.0 {
            self.median
        } else {
            self.median * exp(self.sigma * normal(rng))
        }
    }
}

/// What the population is made of.
#[derive(Clone, Debug, PartialEq)]
pub struct PopulationSpec {
    pub devices: u32,
    /// FLOP/s achieved by local training.
    pub compute: Spread,
    /// Bytes per second.
    pub uplink: Spread,
    pub downlink: Spread,
    /// Probability that a device is online when a round starts.
    pub availability: f64,
    /// Probability that a selected device drops out before it reports.
    pub dropout: f64,
}

/// Every device's figures, and the streams a run draws selections from.
pub struct Population {
    pub compute: Vec<f64>,
    pub uplink: Vec<f64>,
    pub downlink: Vec<f64>,
    availability: f64,
    dropout: f64,
    online: ChaCha8Rng,
    pick: ChaCha8Rng,
    drop: ChaCha8Rng,
}

impl Population {
    pub fn draw(spec: &PopulationSpec, streams: &RngStreams) -> Population {
        let n = spec.devices as usize;
        let many = |law: Spread, name: &str| {
            let mut rng = streams.stream(name);
            (0..n).map(|_| law.draw(&mut rng)).collect::<Vec<f64>>()
        };
        Population {
            compute: many(spec.compute, "device-compute"),
            uplink: many(spec.uplink, "device-uplink"),
            downlink: many(spec.downlink, "device-downlink"),
            availability: spec.availability,
            dropout: spec.dropout,
            online: streams.stream("availability"),
            pick: streams.stream("cohort"),
            drop: streams.stream("dropout"),
        }
    }

    /// Up to `size` devices chosen uniformly among those online at a round's start, in the
    /// order chosen. Each device's online state is drawn when the selection first looks at it
    /// (independently per round, with probability `availability`), which is the same law as
    /// drawing every device's state and then choosing among the online ones, at the cost of the
    /// devices looked at rather than the whole population. Fewer than `size` come back when
    /// fewer are online.
    pub fn select(&mut self, size: u32) -> Vec<u32> {
        let n = self.compute.len() as u32;
        let mut looked = BTreeSet::new();
        let mut chosen = Vec::with_capacity(size as usize);
        while chosen.len() < size as usize && (looked.len() as u32) < n {
            let d = self.pick.random_range(0..n);
            if !looked.insert(d) {
                continue;
            }
            if self.online.random::<f64>() < self.availability {
                chosen.push(d);
            }
        }
        chosen
    }

    /// For a selected device: `Some(fraction of its work done)` when it drops out, else `None`.
    pub fn drops_out(&mut self) -> Option<f64> {
        let drops = self.drop.random::<f64>() < self.dropout;
        let at = open_unit(&mut self.drop);
        drops.then_some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> PopulationSpec {
        let fixed = |median| Spread { median, sigma: 0.0 };
        PopulationSpec {
            devices: 1000,
            compute: Spread {
                median: 1e10,
                sigma: 0.5,
            },
            uplink: fixed(1e6),
            downlink: fixed(4e6),
            availability: 0.3,
            dropout: 0.1,
        }
    }

    #[test]
    fn lognormal_speeds_have_the_median_asked_for() {
        let p = Population::draw(&spec(), &RngStreams::new(7));
        let mut c = p.compute.clone();
        c.sort_by(f64::total_cmp);
        let median = c[c.len() / 2];
        assert!((median / 1e10 - 1.0).abs() < 0.1, "median {median}");
        assert!(
            c[0] < 0.5e10 && c[999] > 2e10,
            "spread {} .. {}",
            c[0],
            c[999]
        );
        assert!(p.uplink.iter().all(|&u| u == 1e6));
    }

    #[test]
    fn selection_takes_distinct_online_devices_and_stops_when_none_are_left() {
        let mut p = Population::draw(&spec(), &RngStreams::new(7));
        let cohort = p.select(100);
        assert_eq!(cohort.len(), 100);
        let distinct: BTreeSet<u32> = cohort.iter().copied().collect();
        assert_eq!(distinct.len(), 100);
        // About 30% of 1,000 are online: asking for 900 gets them all, not 900.
        let all = p.select(900);
        assert!((240..360).contains(&all.len()), "{} online", all.len());
    }

    #[test]
    fn the_same_seed_draws_the_same_population() {
        let a = Population::draw(&spec(), &RngStreams::new(3));
        let b = Population::draw(&spec(), &RngStreams::new(3));
        let c = Population::draw(&spec(), &RngStreams::new(4));
        assert_eq!(a.compute, b.compute);
        assert_ne!(a.compute, c.compute);
    }
}
