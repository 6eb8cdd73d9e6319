//! How often the stated 80% intervals hold: each residual judged against the band its regime gets
//! without its own source (leave one source out), so no case helps make the interval it is
//! checked against. Reported per family (the regime's kind) and per regime: the fraction inside,
//! the median half-width and the median |error|, both as fractions of a predicted time.

use crate::uncertainty::residual::{Residual, Table};
use std::collections::BTreeMap;

/// The coverage of one family or regime.
#[derive(Clone, Debug, PartialEq)]
pub struct Coverage {
    /// A family ("training") or a regime ("training/multi-server/fp8").
    pub name: String,
    pub cases: usize,
    /// Cases that got an interval (the rest had too few other sources).
    pub judged: usize,
    pub inside: usize,
    pub median_half_width: f64,
    pub median_abs_error: f64,
}

impl Coverage {
    pub fn fraction(&self) -> f64 {
        self.inside as f64 / self.judged.max(1) as f64
    }
}

/// Families first, then regimes, each by name: `cases` judged against `table`.
pub fn coverage(table: &Table, cases: &[Residual]) -> Vec<Coverage> {
    let mut groups: BTreeMap<(bool, String), Vec<&Residual>> = BTreeMap::new();
    for r in cases {
        let family = r.regime.split('/').next().unwrap_or("").to_string();
        groups.entry((false, family)).or_default().push(r);
        if r.regime.contains('/') {
            groups.entry((true, r.regime.clone())).or_default().push(r);
        }
    }
    groups
        .into_iter()
        .map(|((_, name), rs)| {
            let mut half = Vec::new();
            let mut inside = 0;
            for r in &rs {
                if let Some(found) = table.band(&r.regime, Some(&r.source)) {
                    half.push(found.band.half_width());
                    inside += usize::from(found.band.covers(r.x));
                }
            }
            let mut errors: Vec<f64> = rs
                .iter()
                .map(|r| (crate::stats::math::exp(r.x) - 1.0).abs())
                .collect();
            Coverage {
                name,
                cases: rs.len(),
                judged: half.len(),
                inside,
                median_half_width: crate::stats::median(&mut half).unwrap_or(f64::NAN),
                median_abs_error: crate::stats::median(&mut errors).unwrap_or(f64::NAN),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_is_judged_without_its_own_source() {
        let r = |source: &str, x: f64| Residual {
            id: format!("{source}-1"),
            source: source.into(),
            file: "f".into(),
            regime: "diffusion/long-video".into(),
            x,
        };
        let table = Table {
            residuals: vec![r("a", 0.0), r("b", 0.01), r("c", -0.01), r("d", 1.0)],
        };
        let c = coverage(&table, &table.residuals);
        assert_eq!(c[0].name, "diffusion");
        assert_eq!(c[1].name, "diffusion/long-video");
        assert_eq!(c[0].cases, 4);
        assert_eq!(c[0].judged, 4);
        // d's own residual would widen its band; left out, the other three cannot reach 1.0.
        assert!(c[0].inside < 4);
        assert!(c[0].median_half_width > 0.0);
    }
}
