//! Numbers for people: durations, byte counts, FLOPs and rates as short strings.
//!
//! Every card, tooltip and ruler label goes through these so that one quantity reads the same
//! everywhere. Bytes are binary (GiB), because GPU memory capacities are (an "80 GB" H100 holds
//! 80 GiB); FLOPs and token rates are decimal. Deliberately left out: locale-aware digit grouping
//! and user-selectable units.

/// A duration with a unit chosen so the number is at least 1 (down to ps), about four
/// significant digits: `962.9 ms`, `49.14 µs`, `1.234 s`.
pub fn duration(secs: f64) -> String {
    if !secs.is_finite() {
        return "—".into();
    }
    if secs == 0.0 {
        return "0 s".into();
    }
    const UNITS: [(f64, &str); 5] = [
        (1.0, "s"),
        (1e-3, "ms"),
        (1e-6, "µs"),
        (1e-9, "ns"),
        (1e-12, "ps"),
    ];
    let a = secs.abs();
    let (scale, unit) = UNITS
        .iter()
        .copied()
        .find(|&(scale, _)| a >= scale)
        .unwrap_or(UNITS[UNITS.len() - 1]);
    format!("{} {unit}", four_digits(secs / scale))
}

/// A number with a decimal SI prefix and `unit`: `412.3 GFLOP`, `544.5 k`.
pub fn si(value: f64, unit: &str) -> String {
    if !value.is_finite() {
        return "—".into();
    }
    const PREFIXES: [(f64, &str); 6] = [
        (1e18, "E"),
        (1e15, "P"),
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
    ];
    let a = value.abs();
    let (scale, prefix) = PREFIXES
        .iter()
        .copied()
        .find(|&(scale, _)| a >= scale)
        .unwrap_or((1.0, ""));
    let sep = if unit.is_empty() && prefix.is_empty() {
        ""
    } else {
        " "
    };
    format!("{}{sep}{prefix}{unit}", four_digits(value / scale))
}

/// Bytes with a binary prefix: `52.24 GiB`, `256.0 MiB`, `0 B`.
pub fn bytes(value: f64) -> String {
    if !value.is_finite() {
        return "—".into();
    }
    const PREFIXES: [(f64, &str); 5] = [
        (1099511627776.0 * 1024.0, "PiB"),
        (1099511627776.0, "TiB"),
        (1073741824.0, "GiB"),
        (1048576.0, "MiB"),
        (1024.0, "KiB"),
    ];
    let a = value.abs();
    match PREFIXES.iter().find(|&&(scale, _)| a >= scale) {
        Some(&(scale, unit)) => format!("{} {unit}", four_digits(value / scale)),
        None => format!("{value:.0} B"),
    }
}

/// A fraction as a percentage with one decimal: `62.5%`.
pub fn percent(fraction: f64) -> String {
    if !fraction.is_finite() {
        return "—".into();
    }
    format!("{:.1}%", fraction * 100.0)
}

/// About four significant digits, never in exponent form: 962.9, 49.14, 1.234, 0.5.
fn four_digits(v: f64) -> String {
    let a = v.abs();
    let decimals = if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else {
        3
    };
    let s = format!("{v:.decimals$}");
    // 1.500 reads better as 1.5; keep at least one decimal so 100.0 stays visibly rounded.
    if s.contains('.') {
        let t = s.trim_end_matches('0');
        if t.ends_with('.') {
            format!("{t}0")
        } else {
            t.to_string()
        }
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_a_unit_with_a_number_at_least_one() {
        assert_eq!(duration(0.962891148526), "962.9 ms");
        assert_eq!(duration(49.135286e-6), "49.14 µs");
        assert_eq!(duration(1.2345), "1.234 s");
        assert_eq!(duration(2.5e-9), "2.5 ns");
        assert_eq!(duration(0.0), "0 s");
        assert_eq!(duration(f64::NAN), "—");
    }

    #[test]
    fn si_and_bytes() {
        assert_eq!(si(412316860416.0, "FLOP"), "412.3 GFLOP");
        assert_eq!(si(544493.5, ""), "544.5 k");
        assert_eq!(si(12.0, ""), "12.0");
        assert_eq!(bytes(85899345920.0), "80.0 GiB");
        assert_eq!(bytes(268435456.0), "256.0 MiB");
        assert_eq!(bytes(0.0), "0 B");
        assert_eq!(percent(0.6249), "62.5%");
    }
}
