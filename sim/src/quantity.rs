//! Quantities with units, as scenario, graph and other input files write them: `"200 Gb/s"`, `"80 GiB"`, `"1.5 us"`,
//! `"5/s"`.
//!
//! Parsing is strict: a number, an optional space, and one of the listed units, case as written
//! (`b` is a bit, `B` a byte; `GB` is 10^9 bytes, `GiB` 2^30). A bare number is a count, never a
//! quantity, so `bandwidth = 300` is refused with an example of what would be valid. Negative and
//! non-finite values are refused.

use crate::engine::SimTime;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// A number of bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

/// Bytes per second.
#[derive(Copy, Clone, Debug, PartialEq, PartialOrd)]
pub struct Bandwidth(pub f64);

/// A span of simulated time.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Duration(pub SimTime);

/// A span of wall-clock time in seconds, for spans beyond the simulated clock's range (a GPU's
/// mean time between failures runs to years): `"50000 h"`, `"2 d"`, `"10 min"`.
#[derive(Copy, Clone, Debug, PartialEq, PartialOrd)]
pub struct Period(pub f64);

/// Events per second.
#[derive(Copy, Clone, Debug, PartialEq, PartialOrd)]
pub struct Rate(pub f64);

/// Arithmetic throughput, operations per second: `"125 TFLOP/s"`, `"24.5 TOP/s"` (integer
/// operations; a multiply-add counts two, as datasheets count).
#[derive(Copy, Clone, Debug, PartialEq, PartialOrd)]
pub struct Throughput(pub f64);

/// Electrical power in watts: `"225 W"`, `"1.2 kW"`.
#[derive(Copy, Clone, Debug, PartialEq, PartialOrd)]
pub struct Power(pub f64);

const BYTE_UNITS: &[(&str, f64)] = &[
    ("B", 1.0),
    ("kB", 1e3),
    ("KB", 1e3),
    ("MB", 1e6),
    ("GB", 1e9),
    ("TB", 1e12),
    ("KiB", 1024.0),
    ("MiB", 1048576.0),
    ("GiB", 1073741824.0),
    ("TiB", 1099511627776.0),
];

const BANDWIDTH_UNITS: &[(&str, f64)] = &[
    ("B/s", 1.0),
    ("kB/s", 1e3),
    ("MB/s", 1e6),
    ("GB/s", 1e9),
    ("TB/s", 1e12),
    ("GiB/s", 1073741824.0),
    ("b/s", 0.125),
    ("kb/s", 125.0),
    ("Mb/s", 1.25e5),
    ("Gb/s", 1.25e8),
    ("Tb/s", 1.25e11),
    ("Mbps", 1.25e5),
    ("Gbps", 1.25e8),
    ("Tbps", 1.25e11),
];

const TIME_UNITS: &[(&str, f64)] = &[
    ("ps", 1e-12),
    ("ns", 1e-9),
    ("us", 1e-6),
    ("µs", 1e-6),
    ("ms", 1e-3),
    ("s", 1.0),
    ("min", 60.0),
    ("h", 3600.0),
];

const PERIOD_UNITS: &[(&str, f64)] = &[
    ("ms", 1e-3),
    ("s", 1.0),
    ("min", 60.0),
    ("h", 3600.0),
    ("d", 86400.0),
];

const RATE_UNITS: &[(&str, f64)] = &[("/s", 1.0), ("/min", 1.0 / 60.0), ("/h", 1.0 / 3600.0)];

const THROUGHPUT_UNITS: &[(&str, f64)] = &[
    ("FLOP/s", 1.0),
    ("GFLOP/s", 1e9),
    ("TFLOP/s", 1e12),
    ("PFLOP/s", 1e15),
    ("OP/s", 1.0),
    ("GOP/s", 1e9),
    ("TOP/s", 1e12),
    ("POP/s", 1e15),
];

const POWER_UNITS: &[(&str, f64)] = &[("W", 1.0), ("kW", 1e3)];

/// What went wrong reading a quantity, phrased for the person who wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantityError(pub String);

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn unit_list(units: &[(&str, f64)]) -> String {
    units
        .iter()
        .map(|(u, _)| *u)
        .filter(|u| *u != "µs")
        .collect::<Vec<_>>()
        .join(", ")
}

/// Splits `"1.5 GB/s"` into 1.5 and the factor of `GB/s`.
fn parse_with(
    text: &str,
    what: &str,
    example: &str,
    units: &[(&str, f64)],
) -> Result<f64, QuantityError> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-' | '_')))
        .unwrap_or(trimmed.len());
    // An exponent sign is only part of the number when it follows an `e`; "5/s" must split at '/'.
    let (number, unit) = trimmed.split_at(split);
    let unit = unit.trim();
    let valid = || format!("valid units: {}", unit_list(units));
    if number.is_empty() {
        return Err(QuantityError(format!(
            "`{text}` is not a {what}: expected a number and a unit, e.g. \"{example}\""
        )));
    }
    let value: f64 = number.replace('_', "").parse().map_err(|_| {
        QuantityError(format!(
            "`{text}` is not a {what}: `{number}` is not a number (e.g. \"{example}\")"
        ))
    })?;
    if unit.is_empty() {
        return Err(QuantityError(format!(
            "`{text}` has no unit: write the {what} with its unit, e.g. \"{example}\" ({})",
            valid()
        )));
    }
    let Some(&(_, factor)) = units.iter().find(|(u, _)| *u == unit) else {
        let hint = units
            .iter()
            .find(|(u, _)| u.eq_ignore_ascii_case(unit))
            .map(|(u, _)| format!(" (units are case-sensitive: did you mean `{u}`?)"))
            .unwrap_or_default();
        return Err(QuantityError(format!(
            "`{unit}` is not a unit of {what}{hint}; {}",
            valid()
        )));
    };
    if !value.is_finite() || value < 0.0 {
        return Err(QuantityError(format!(
            "`{text}`: a {what} must be a finite, non-negative number"
        )));
    }
    Ok(value * factor)
}

impl Bytes {
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let v = parse_with(text, "size", "80 GiB", BYTE_UNITS)?;
        if v.fract() != 0.0 || v > u64::MAX as f64 {
            return Err(QuantityError(format!(
                "`{text}` is not a whole number of bytes"
            )));
        }
        Ok(Bytes(v as u64))
    }
}

impl Bandwidth {
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let v = parse_with(text, "bandwidth", "200 Gb/s", BANDWIDTH_UNITS)?;
        if v == 0.0 {
            return Err(QuantityError(format!(
                "`{text}`: a bandwidth must be positive"
            )));
        }
        Ok(Bandwidth(v))
    }
}

impl Duration {
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let v = parse_with(text, "duration", "1.5 us", TIME_UNITS)?;
        if v > SimTime::MAX.as_secs_f64() {
            return Err(QuantityError(format!(
                "`{text}` is longer than the simulated clock spans ({:.0} days)",
                SimTime::MAX.as_secs_f64() / 86400.0
            )));
        }
        Ok(Duration(SimTime::from_secs_f64(v)))
    }

    pub fn secs(self) -> f64 {
        self.0.as_secs_f64()
    }
}

impl Period {
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        Ok(Period(parse_with(text, "period", "50000 h", PERIOD_UNITS)?))
    }
}

impl Rate {
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        // Rates read "5/s": the number runs up to the slash.
        let v = parse_with(&text.replacen('/', " /", 1), "rate", "5/s", RATE_UNITS)
            .map_err(|e| QuantityError(e.0.replace(&text.replacen('/', " /", 1), text)))?;
        Ok(Rate(v))
    }
}

impl Throughput {
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let v = parse_with(text, "throughput", "125 TFLOP/s", THROUGHPUT_UNITS)?;
        if v == 0.0 {
            return Err(QuantityError(format!(
                "`{text}`: a throughput must be positive"
            )));
        }
        Ok(Throughput(v))
    }
}

impl Power {
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        Ok(Power(parse_with(text, "power", "225 W", POWER_UNITS)?))
    }
}

macro_rules! quantity_serde {
    ($ty:ident, $what:literal, $example:literal, $show:expr) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "a {} with its unit as a string, e.g. \"{}\"", $what, $example)
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$ty, E> {
                        $ty::parse(s).map_err(|e| E::custom(e.0))
                    }
                    fn visit_i64<E: de::Error>(self, n: i64) -> Result<$ty, E> {
                        Err(E::custom(format!(
                            "a bare number ({n}) is a count, not a {}: write it with its unit, e.g. \"{}\"",
                            $what, $example
                        )))
                    }
                    fn visit_u64<E: de::Error>(self, n: u64) -> Result<$ty, E> {
                        self.visit_i64(n as i64)
                    }
                    fn visit_f64<E: de::Error>(self, n: f64) -> Result<$ty, E> {
                        Err(E::custom(format!(
                            "a bare number ({n}) is not a {}: write it with its unit, e.g. \"{}\"",
                            $what, $example
                        )))
                    }
                }
                d.deserialize_any(V)
            }
        }

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let show: fn(&$ty) -> String = $show;
                s.serialize_str(&show(self))
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let show: fn(&$ty) -> String = $show;
                f.write_str(&show(self))
            }
        }
    };
}

quantity_serde!(Bytes, "size", "80 GiB", |b| format!("{} B", b.0));
quantity_serde!(Bandwidth, "bandwidth", "200 Gb/s", |b| format!(
    "{} GB/s",
    b.0 / 1e9
));
quantity_serde!(Duration, "duration", "1.5 us", |d| format!(
    "{} s",
    d.secs()
));
quantity_serde!(Rate, "rate", "5/s", |r| format!("{}/s", r.0));
quantity_serde!(Period, "period", "50000 h", |p| format!("{} s", p.0));
quantity_serde!(Throughput, "throughput", "125 TFLOP/s", |t| format!(
    "{} TFLOP/s",
    t.0 / 1e12
));
quantity_serde!(Power, "power", "225 W", |p| format!("{} W", p.0));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(Bytes::parse("80 GiB").unwrap(), Bytes(80 << 30));
        assert_eq!(Bytes::parse("16MB").unwrap(), Bytes(16_000_000));
        assert_eq!(Bytes::parse("1.5 KiB").unwrap(), Bytes(1536));
        assert!(Bytes::parse("1.5 B").is_err());
    }

    #[test]
    fn bandwidths_know_bits_from_bytes() {
        assert_eq!(Bandwidth::parse("200 Gb/s").unwrap(), Bandwidth(25e9));
        assert_eq!(Bandwidth::parse("300 GB/s").unwrap(), Bandwidth(300e9));
        assert_eq!(Bandwidth::parse("400 Gbps").unwrap(), Bandwidth(50e9));
        let e = Bandwidth::parse("300 gb/s").unwrap_err().0;
        assert!(e.contains("case-sensitive"), "{e}");
        assert!(Bandwidth::parse("0 GB/s").is_err());
    }

    #[test]
    fn durations_and_rates() {
        assert_eq!(
            Duration::parse("1.5 us").unwrap(),
            Duration(SimTime::from_ns(1500))
        );
        assert_eq!(Duration::parse("2 s").unwrap().secs(), 2.0);
        assert_eq!(Duration::parse("100 ms").unwrap().secs(), 0.1);
        assert_eq!(Rate::parse("5/s").unwrap(), Rate(5.0));
        assert_eq!(Rate::parse("120/min").unwrap(), Rate(2.0));
        assert!(Rate::parse("5").unwrap_err().0.contains("no unit"));
    }

    #[test]
    fn throughputs_and_powers() {
        assert_eq!(
            Throughput::parse("125 TFLOP/s").unwrap(),
            Throughput(125e12)
        );
        assert_eq!(
            Throughput::parse("24.5 TOP/s").unwrap(),
            Throughput(24.5e12)
        );
        assert!(Throughput::parse("0 TFLOP/s").is_err());
        let e = Throughput::parse("125 tflop/s").unwrap_err().0;
        assert!(e.contains("case-sensitive"), "{e}");
        assert_eq!(Power::parse("225 W").unwrap(), Power(225.0));
        assert_eq!(Power::parse("1.2 kW").unwrap(), Power(1200.0));
        assert!(Power::parse("225").unwrap_err().0.contains("no unit"));
    }

    #[test]
    fn refusals_say_what_would_be_valid() {
        let e = Bytes::parse("80").unwrap_err().0;
        assert!(e.contains("no unit") && e.contains("GiB"), "{e}");
        let e = Duration::parse("fast").unwrap_err().0;
        assert!(e.contains("expected a number and a unit"), "{e}");
        let e = Duration::parse("-1 s").unwrap_err().0;
        assert!(e.contains("non-negative"), "{e}");
        let e = Duration::parse("3 days").unwrap_err().0;
        assert!(e.contains("valid units: ps, ns, us, ms, s, min, h"), "{e}");
    }
}
