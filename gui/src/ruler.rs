//! The time axis above the timeline: where ticks go and how they are labelled.
//!
//! Ticks fall on round multiples of 1, 2 or 5 times a power of ten seconds, spaced at least a
//! given number of pixels apart, and every label of one ruler uses the same unit (s, ms, µs or ns,
//! whichever suits the step) and the same number of decimals, so neighbouring labels differ in
//! exactly the digits that change. Pure functions: drawing is the timeline's job. Deliberately
//! left out: minor ticks and labels relative to a chosen origin (all times are from the start of
//! the simulated step).

/// One labelled tick.
#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    /// Simulated time in seconds.
    pub t: f64,
    pub label: String,
}

/// The tick spacing in seconds: the smallest 1, 2 or 5 × 10^k that puts ticks at least
/// `min_px` apart when `span` seconds fill `width_px`.
pub fn step(span: f64, width_px: f32, min_px: f32) -> f64 {
    let raw = span * f64::from(min_px) / f64::from(width_px.max(1.0));
    if !raw.is_finite() || raw <= 0.0 {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag)
}

/// The ticks inside `[t0, t1]`.
pub fn ticks(t0: f64, t1: f64, width_px: f32, min_px: f32) -> Vec<Tick> {
    if t1.partial_cmp(&t0) != Some(std::cmp::Ordering::Greater) {
        return Vec::new();
    }
    let step = step(t1 - t0, width_px, min_px);
    let (scale, unit) = unit_for(step);
    // Decimals needed to tell two ticks one step apart, in the chosen unit.
    let decimals = (-((step / scale).log10() + 1e-9).floor()).max(0.0) as usize;
    // Tolerate rounding: 10e-6 / 5e-6 is 2.0000000000000004, and the tick at 10 µs belongs in.
    let first = (t0 / step - 1e-9).ceil() as i64;
    let last = (t1 / step + 1e-9).floor() as i64;
    (first..=last)
        .map(|k| {
            let t = k as f64 * step;
            let v = t / scale;
            // Avoid "-0" at the origin.
            let v = if v.abs() < 1e-12 { 0.0 } else { v };
            Tick {
                t,
                label: format!("{v:.decimals$} {unit}"),
            }
        })
        .collect()
}

/// The largest unit in which `step` is at least 0.1.
fn unit_for(step: f64) -> (f64, &'static str) {
    // A step of 0.1 of a unit still reads well in that unit ("1.2 ms" rather than "1200 µs").
    let at_least = |unit: f64| step >= 0.1 * unit * (1.0 - 1e-9);
    if at_least(1.0) {
        (1.0, "s")
    } else if at_least(1e-3) {
        (1e-3, "ms")
    } else if at_least(1e-6) {
        (1e-6, "µs")
    } else {
        (1e-9, "ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_is_one_two_or_five_times_a_power_of_ten() {
        // 1 s over 1000 px with ticks >= 100 px apart: raw 0.1 s.
        assert!((step(1.0, 1000.0, 100.0) - 0.1).abs() < 1e-15);
        // raw 0.13 s rounds up to 0.2 s.
        assert!((step(1.3, 1000.0, 100.0) - 0.2).abs() < 1e-15);
        // raw 0.3 ms rounds up to 0.5 ms.
        assert!((step(3e-3, 1000.0, 100.0) - 5e-4).abs() < 1e-15);
        // raw 0.6 µs rounds up to 1 µs.
        assert!((step(6e-6, 1000.0, 100.0) - 1e-6).abs() < 1e-18);
    }

    #[test]
    fn ticks_are_spaced_labelled_and_inside_the_range() {
        let t = ticks(0.0, 0.9629, 1200.0, 90.0);
        // raw step 0.0722 s -> 0.1 s, so 0, 0.1, ..., 0.9 s.
        assert_eq!(t.len(), 10);
        assert_eq!(t[0].label, "0.0 s");
        assert_eq!(t[3].label, "0.3 s");
        let t = ticks(1.2e-3, 4.6e-3, 1000.0, 100.0);
        // raw 0.34 ms -> 0.5 ms steps, labelled in ms with one decimal.
        let labels: Vec<_> = t.iter().map(|k| k.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "1.5 ms", "2.0 ms", "2.5 ms", "3.0 ms", "3.5 ms", "4.0 ms", "4.5 ms"
            ]
        );
        let t = ticks(10e-6, 60e-6, 1000.0, 100.0);
        // raw 5 µs -> 5 µs steps: whole microseconds.
        assert_eq!(t[0].label, "10 µs");
        assert_eq!(t[1].label, "15 µs");
        assert_eq!(t.len(), 11);
        assert!(
            t.iter()
                .all(|k| (10e-6 - 1e-15..=60e-6 + 1e-15).contains(&k.t))
        );
    }

    #[test]
    fn empty_or_reversed_ranges_have_no_ticks() {
        assert!(ticks(1.0, 1.0, 800.0, 80.0).is_empty());
        assert!(ticks(2.0, 1.0, 800.0, 80.0).is_empty());
        assert!(ticks(0.0, f64::NAN, 800.0, 80.0).is_empty());
    }
}
