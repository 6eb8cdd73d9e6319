//! Simulated time: an integer count of picoseconds.
//!
//! One type serves both instants and durations. A `u64` of picoseconds spans about 213 days, far
//! beyond a training step, a serving trace or a video render, and a picosecond is below any cost the
//! models produce (one byte over a 900 GB/s link takes about 1.1 ps). Floating-point seconds appear
//! only at the edges (cost models produce them, reports print them); inside the engine time is exact,
//! so the same inputs give the same bytes out on every machine.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// Picoseconds since the start of the simulation (or a duration in picoseconds).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);
    /// How far simulated time reaches, for messages: [`SimTime::MAX`] in whole days.
    pub const SPAN: &'static str = "213 days";
    const PS_PER_S: f64 = 1e12;

    pub const fn from_ps(ps: u64) -> Self {
        SimTime(ps)
    }

    pub const fn from_ns(ns: u64) -> Self {
        SimTime(ns * 1_000)
    }

    pub const fn from_us(us: u64) -> Self {
        SimTime(us * 1_000_000)
    }

    /// Rounds seconds to the nearest picosecond. Negative or NaN inputs are a bug in a cost model:
    /// they panic naming the value. Values beyond the range saturate at [`SimTime::MAX`].
    pub fn from_secs_f64(s: f64) -> Self {
        assert!(
            s >= 0.0,
            "cost model produced an invalid duration of {s} s (must be finite and non-negative)"
        );
        let ps = (s * Self::PS_PER_S).round();
        if ps >= u64::MAX as f64 {
            SimTime::MAX
        } else {
            SimTime(ps as u64)
        }
    }

    pub const fn as_ps(self) -> u64 {
        self.0
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / Self::PS_PER_S
    }

    /// Microseconds as a float: the unit of Chrome trace-event timestamps.
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// `self + other`, or None past [`SimTime::MAX`] (about 213 days).
    pub fn checked_add(self, other: SimTime) -> Option<SimTime> {
        self.0.checked_add(other.0).map(SimTime)
    }

    /// `self + other`, held at [`SimTime::MAX`] past the end of simulated time (a run that gets
    /// there has overrun it: `Timeline::overran`).
    pub fn saturating_add(self, other: SimTime) -> SimTime {
        SimTime(self.0.saturating_add(other.0))
    }

    pub fn saturating_sub(self, other: SimTime) -> SimTime {
        SimTime(self.0.saturating_sub(other.0))
    }
}

impl Add for SimTime {
    type Output = SimTime;
    fn add(self, rhs: SimTime) -> SimTime {
        SimTime(
            self.0
                .checked_add(rhs.0)
                .expect("simulated time overflowed u64 picoseconds (about 213 days)"),
        )
    }
}

impl AddAssign for SimTime {
    fn add_assign(&mut self, rhs: SimTime) {
        *self = *self + rhs;
    }
}

impl Sub for SimTime {
    type Output = SimTime;
    fn sub(self, rhs: SimTime) -> SimTime {
        SimTime(
            self.0
                .checked_sub(rhs.0)
                .unwrap_or_else(|| panic!("time went backwards: {self} - {rhs}")),
        )
    }
}

impl fmt::Display for SimTime {
    /// Human units: `0 s`, `850 ps`, `12.5 ns`, `3.2 us`, `41.0 ms`, `1.234 s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ps = self.0 as f64;
        let (value, unit) = match self.0 {
            0 => return write!(f, "0 s"),
            1..1_000 => return write!(f, "{} ps", self.0),
            1_000..1_000_000 => (ps / 1e3, "ns"),
            1_000_000..1_000_000_000 => (ps / 1e6, "us"),
            1_000_000_000..1_000_000_000_000 => (ps / 1e9, "ms"),
            _ => (ps / 1e12, "s"),
        };
        write!(f, "{value:.3} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_span_named_in_messages_is_the_maximum_in_whole_days() {
        let days = (SimTime::MAX.as_secs_f64() / 86_400.0).floor();
        assert_eq!(SimTime::SPAN, format!("{days} days"));
    }

    #[test]
    fn conversions_round_to_picoseconds() {
        assert_eq!(SimTime::from_secs_f64(1.5e-6), SimTime::from_ns(1500));
        assert_eq!(SimTime::from_secs_f64(0.4e-12), SimTime::ZERO);
        assert_eq!(SimTime::from_us(2).as_secs_f64(), 2e-6);
        assert_eq!(SimTime::from_secs_f64(1e300), SimTime::MAX);
    }

    #[test]
    fn display_picks_a_readable_unit() {
        assert_eq!(SimTime::ZERO.to_string(), "0 s");
        assert_eq!(SimTime::from_ps(850).to_string(), "850 ps");
        assert_eq!(SimTime::from_ns(3200).to_string(), "3.200 us");
        assert_eq!(SimTime::from_secs_f64(1.2345).to_string(), "1.234 s");
    }

    #[test]
    #[should_panic(expected = "time went backwards")]
    fn subtraction_below_zero_is_a_bug() {
        let _ = SimTime::from_ns(1) - SimTime::from_ns(2);
    }

    #[test]
    #[should_panic(expected = "invalid duration")]
    fn negative_durations_are_a_bug() {
        let _ = SimTime::from_secs_f64(-1.0);
    }
}
