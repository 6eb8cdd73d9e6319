//! `[workload]`'s length keys lowered to the distribution that draws them (`stats::lengths`):
//! fixed, uniform (inclusive), lognormal (rounded and clamped) or drawn from a file of observed
//! lengths, one per line, read here.

use super::fields::parse_count;
use super::{Result, TrafficError, resolve};
use crate::scenario::serving::{DistributionKind, LengthDistribution, LengthSpec};
use crate::stats::lengths::Lengths;
use crate::stats::variate::lognormal_mu;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

pub(super) fn required(
    spec: Option<&LengthSpec>,
    key: &str,
    base_dir: Option<&Path>,
    notes: &mut Vec<String>,
) -> Result<Lengths> {
    let path = format!("workload.{key}");
    let Some(spec) = spec else {
        return Err(TrafficError::new(
            path,
            format!("[workload] needs `{key}`: a token count or a distribution"),
        )
        .with_help(format!(
            "e.g. {key} = 512, or {key} = {{ dist = \"lognormal\", mean = 512, sigma = 0.8 }}"
        )));
    };
    from_spec(spec, &path, base_dir, notes)
}

fn from_spec(
    spec: &LengthSpec,
    path: &str,
    base_dir: Option<&Path>,
    notes: &mut Vec<String>,
) -> Result<Lengths> {
    let d = match spec {
        LengthSpec::Fixed(0) => {
            return Err(TrafficError::new(path, "a length must be at least 1 token"));
        }
        LengthSpec::Fixed(n) => return Ok(Lengths::Fixed(*n)),
        LengthSpec::Distribution(d) => d,
    };
    let ignored = |key: &str, given: bool, notes: &mut Vec<String>| {
        if given {
            notes.push(format!(
                "{path}.{key} is ignored by dist = \"{}\"",
                dist_name(d.dist)
            ));
        }
    };
    if let (Some(min), Some(max)) = (d.min, d.max)
        && min > max
    {
        return Err(TrafficError::new(
            format!("{path}.min"),
            format!("min ({min}) is above max ({max})"),
        ));
    }
    if d.max == Some(0) {
        return Err(TrafficError::new(
            format!("{path}.max"),
            "max must be at least 1 token",
        ));
    }
    match d.dist {
        DistributionKind::Uniform => {
            ignored("mean", d.mean.is_some(), notes);
            ignored("sigma", d.sigma.is_some(), notes);
            ignored("file", d.file.is_some(), notes);
            let need = |v: Option<u32>, key: &str| {
                v.ok_or_else(|| {
                    TrafficError::new(
                        format!("{path}.{key}"),
                        format!("dist = \"uniform\" needs `{key}`"),
                    )
                    .with_help("e.g. { dist = \"uniform\", min = 128, max = 1024 } (inclusive)")
                })
            };
            let min = need(d.min, "min")?;
            let max = need(d.max, "max")?;
            if min == 0 {
                return Err(TrafficError::new(
                    format!("{path}.min"),
                    "min must be at least 1 token",
                ));
            }
            Ok(Lengths::Uniform { min, max })
        }
        DistributionKind::Lognormal => {
            ignored("file", d.file.is_some(), notes);
            let mean = d.mean.ok_or_else(|| {
                TrafficError::new(
                    format!("{path}.mean"),
                    "dist = \"lognormal\" needs `mean`: the mean length in tokens",
                )
                .with_help("e.g. { dist = \"lognormal\", mean = 512, sigma = 0.8 }")
            })?;
            if !(mean.is_finite() && mean > 0.0) {
                return Err(TrafficError::new(
                    format!("{path}.mean"),
                    format!("mean must be positive and finite, not {mean}"),
                ));
            }
            let sigma = d.sigma.ok_or_else(|| {
                TrafficError::new(
                    format!("{path}.sigma"),
                    "dist = \"lognormal\" needs `sigma`: the standard deviation of the \
                     length's logarithm",
                )
                .with_help("0.5 to 1.5 is typical of chat traces; 0 gives `mean` every time")
            })?;
            if !(sigma.is_finite() && sigma >= 0.0) {
                return Err(TrafficError::new(
                    format!("{path}.sigma"),
                    format!("sigma must be non-negative and finite, not {sigma}"),
                ));
            }
            let (lo, hi) = clamps(d);
            Ok(Lengths::Lognormal {
                mu: lognormal_mu(mean, sigma),
                sigma,
                lo,
                hi,
            })
        }
        DistributionKind::Empirical => {
            ignored("mean", d.mean.is_some(), notes);
            ignored("sigma", d.sigma.is_some(), notes);
            let file = d.file.as_deref().ok_or_else(|| {
                TrafficError::new(
                    format!("{path}.file"),
                    "dist = \"empirical\" needs `file`: one length per line",
                )
                .with_help("e.g. { dist = \"empirical\", file = \"prompt-lengths.txt\" }")
            })?;
            let values = read_lengths(file, &format!("{path}.file"), base_dir, notes)?;
            let (lo, hi) = clamps(d);
            Ok(Lengths::Empirical(
                values.into_iter().map(|v| v.clamp(lo, hi)).collect(),
            ))
        }
    }
}

fn dist_name(d: DistributionKind) -> &'static str {
    match d {
        DistributionKind::Uniform => "uniform",
        DistributionKind::Lognormal => "lognormal",
        DistributionKind::Empirical => "empirical",
    }
}

/// `[max(1, min), max]` (`max` defaulting to no limit).
fn clamps(d: &LengthDistribution) -> (u32, u32) {
    (d.min.unwrap_or(1).max(1), d.max.unwrap_or(u32::MAX))
}

/// One whole number per line; blank lines and `#` comments skipped; zeros raised to 1 with a note.
fn read_lengths(
    file: &str,
    key: &str,
    base_dir: Option<&Path>,
    notes: &mut Vec<String>,
) -> Result<Vec<u32>> {
    let full = resolve(file, base_dir);
    let reader = File::open(&full)
        .map(BufReader::new)
        .map_err(|e| TrafficError::new(key, format!("cannot read {}: {e}", full.display())))?;
    let mut values = Vec::new();
    let mut zeros = 0u64;
    for (i, line) in reader.lines().enumerate() {
        let lineno = i + 1;
        let line = line.map_err(|e| {
            TrafficError::new(key, format!("cannot read {file} line {lineno}: {e}"))
        })?;
        let text = line.trim().trim_start_matches('\u{feff}');
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let v = parse_count(text).ok_or_else(|| {
            TrafficError::new(
                key,
                format!("{file} line {lineno}: `{text}` is not a token count"),
            )
            .with_help("the file holds one whole number per line, with no header")
        })?;
        if v == 0 {
            zeros += 1;
        }
        values.push(v.max(1));
    }
    if values.is_empty() {
        return Err(
            TrafficError::new(key, format!("{file} has no lengths in it"))
                .with_help("the file holds one whole number per line"),
        );
    }
    if zeros > 0 {
        notes.push(format!("{file}: {zeros} zero length(s) raised to 1 token"));
    }
    Ok(values)
}
