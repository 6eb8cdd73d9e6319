//! The residual table: one line per validated case, with its source (the case id's group: the
//! publisher, "mpt", "dgxc"), the file it came from, its regime and x = ln(predicted time /
//! measured time), a rate's ratio inverted. `clustersim validate --residuals` writes it from the
//! shared published.json and every validation/*.json; the repository keeps the result in
//! validation/residuals.json, which a test regenerates and compares, and the simulator embeds.

use super::estimate::{Band, band};
use super::regime::lineage;
use serde_json::Value;
use std::sync::OnceLock;

/// One validated case.
#[derive(Clone, Debug, PartialEq)]
pub struct Residual {
    pub id: String,
    pub source: String,
    pub file: String,
    pub regime: String,
    /// ln(predicted time / measured time), rounded to 1e-6.
    pub x: f64,
}

/// Every residual, in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub residuals: Vec<Residual>,
}

/// A band and the regime it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub band: Band,
    /// The regime whose residuals made the band: the asked one or a parent.
    pub regime: String,
}

impl Table {
    /// The table shipped in the repository (validation/residuals.json).
    pub fn shipped() -> &'static Table {
        static TABLE: OnceLock<Table> = OnceLock::new();
        TABLE.get_or_init(|| {
            Table::parse(include_str!("../../../validation/residuals.json"))
                .expect("validation/residuals.json is written by `clustersim validate --residuals`")
        })
    }

    /// Reads the JSON that [`Table::to_text`] writes.
    pub fn parse(text: &str) -> Result<Table, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let list = value["residuals"]
            .as_array()
            .ok_or("no `residuals` array")?;
        let residuals = list
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let s = |k: &str| {
                    r[k].as_str()
                        .map(str::to_string)
                        .ok_or_else(|| format!("residual {i} has no string `{k}`"))
                };
                Ok(Residual {
                    id: s("id")?,
                    source: s("source")?,
                    file: s("file")?,
                    regime: s("regime")?,
                    x: r["x"]
                        .as_f64()
                        .ok_or_else(|| format!("residual {i} has no number `x`"))?,
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(Table { residuals })
    }

    /// The JSON text of the table, one residual a line.
    pub fn to_text(&self, command: &str) -> String {
        let q = |s: &str| serde_json::to_string(s).expect("a string serialises");
        let lines: Vec<String> = self
            .residuals
            .iter()
            .map(|r| {
                format!(
                    "  {{\"id\": {}, \"source\": {}, \"file\": {}, \"regime\": {}, \"x\": {}}}",
                    q(&r.id),
                    q(&r.source),
                    q(&r.file),
                    q(&r.regime),
                    serde_json::to_string(&round(r.x)).expect("a number serialises")
                )
            })
            .collect();
        format!(
            "{{\"generated_by\": {},\n\"residuals\": [\n{}\n]}}\n",
            q(command),
            lines.join(",\n")
        )
    }

    /// The band for `regime`: its own residuals, or its nearest ancestor's with enough sources;
    /// the residuals of `leave_out` (a source) never count.
    pub fn band(&self, regime: &str, leave_out: Option<&str>) -> Option<Found> {
        lineage(regime).find_map(|r| {
            let within = |x: &Residual| x.regime == r || x.regime.starts_with(&format!("{r}/"));
            band(
                self.residuals
                    .iter()
                    .filter(|x| within(x) && Some(x.source.as_str()) != leave_out)
                    .map(|x| (x.source.as_str(), x.x)),
            )
            .map(|band| Found {
                band,
                regime: r.to_string(),
            })
        })
    }
}

/// x rounded to 1e-6, so the table is the same on machines whose last bits differ.
pub fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(id: &str, source: &str, regime: &str, x: f64) -> Residual {
        Residual {
            id: id.into(),
            source: source.into(),
            file: "f.json".into(),
            regime: regime.into(),
            x,
        }
    }

    #[test]
    fn text_round_trips() {
        let t = Table {
            residuals: vec![r("a-1", "a", "training/one-server/fp8", -0.1234567)],
        };
        let back = Table::parse(&t.to_text("cmd")).unwrap();
        assert_eq!(back.residuals[0].x, -0.123457);
        assert_eq!(back.residuals[0].regime, "training/one-server/fp8");
        assert!(Table::parse("{}").unwrap_err().contains("residuals"));
    }

    #[test]
    fn a_thin_regime_falls_back_to_its_parent_and_a_source_is_left_out() {
        let t = Table {
            residuals: vec![
                r("a-1", "a", "training/multi-server/fp8", 0.1),
                r("b-1", "b", "training/multi-server/16-bit", 0.0),
                r("c-1", "c", "training/multi-server/16-bit", -0.1),
                r("d-1", "d", "training/one-server/16-bit", 0.0),
            ],
        };
        let f = t.band("training/multi-server/fp8", None).unwrap();
        assert_eq!(f.regime, "training/multi-server");
        assert_eq!(f.band.cases, 3);
        let f = t.band("training/multi-server/fp8", Some("a")).unwrap();
        assert_eq!(f.regime, "training");
        assert_eq!(f.band.sources, 3);
        assert_eq!(t.band("serving/small-batch", None), None);
    }

    #[test]
    fn the_shipped_table_covers_every_kind_with_a_regime() {
        let t = Table::shipped();
        for kind in ["training", "serving", "diffusion", "collective"] {
            assert!(t.band(kind, None).is_some(), "{kind}");
        }
    }
}
