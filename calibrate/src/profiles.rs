//! The calibration profiles compiled into clustersim (`clustersim::hw::profile::shipped`), as
//! `profiles` lists them and as the no-GPU message names them.

use crate::table::write_table;
use clustersim::hw::profile;
use std::fmt::Write as _;

/// One shipped profile, summarised.
#[derive(Clone, Debug, PartialEq)]
pub struct Shipped {
    pub name: &'static str,
    pub gpu: &'static str,
    pub gemm_shapes: usize,
    pub points: usize,
    /// `provenance.source`, in full.
    pub source: String,
    /// `provenance.date`.
    pub date: String,
}

/// Every shipped profile, in the library's order.
pub fn shipped() -> Vec<Shipped> {
    profile::shipped()
        .into_iter()
        .map(|(name, p)| Shipped {
            name,
            gpu: p.gpu,
            gemm_shapes: p.gemm.len(),
            points: p.points(),
            source: p.provenance.source,
            date: p.provenance.date,
        })
        .collect()
}

/// Where a profile's numbers come from, in a few words: "measured 2026-11-30" for profiles this
/// tool measured (their source starts with "measured by"), else the origin named at the start of
/// the source ("Vidur" for the Vidur imports).
pub fn origin(p: &Shipped) -> String {
    if p.source.starts_with("measured by") {
        format!("measured {}", p.date.get(..10).unwrap_or(&p.date))
    } else {
        format!("from {}", short_source(&p.source))
    }
}

/// The origin named at the start of a provenance source: the text before the first '(', ',' or
/// ';', at most 40 characters.
pub fn short_source(source: &str) -> String {
    let end = source.find(['(', ',', ';']).unwrap_or(source.len());
    let short = source[..end].trim();
    if short.chars().count() > 40 {
        let cut: String = short.chars().take(39).collect();
        format!("{cut}…")
    } else {
        short.to_string()
    }
}

/// The `profiles` listing: a table, then each profile's full source.
pub fn listing_text(profiles: &[Shipped]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Calibration profiles compiled into clustersim (a scenario names one in cluster.profile):"
    );
    let header = ["name", "GPU", "GEMM shapes", "points", "source"];
    let rows: Vec<[String; 5]> = profiles
        .iter()
        .map(|p| {
            [
                p.name.to_string(),
                p.gpu.to_string(),
                p.gemm_shapes.to_string(),
                p.points.to_string(),
                origin(p),
            ]
        })
        .collect();
    write_table(&mut out, "  ", header, &rows);
    for p in profiles {
        let _ = writeln!(out, "{}: {}", p.name, p.source);
    }
    out
}

/// One line naming every shipped profile, for the message of a machine with nothing to measure.
pub fn one_line(profiles: &[Shipped]) -> String {
    let listed: Vec<String> = profiles
        .iter()
        .map(|p| format!("{} ({}, {} points {})", p.name, p.gpu, p.points, origin(p)))
        .collect();
    format!(
        "without measurements clustersim has its shipped profiles: {}; other GPUs are priced by \
         the roofline from datasheet figures (`clustersim-calibrate profiles` lists the profiles).",
        listed.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_profiles_are_the_librarys() {
        let list = shipped();
        let names: Vec<&str> = list.iter().map(|p| p.name).collect();
        assert_eq!(names, profile::shipped_names());
        for p in &list {
            assert!(p.points > 0 && p.gemm_shapes > 0, "{p:?}");
            let expected = if p.name.ends_with("-vidur") {
                "from Vidur".to_string()
            } else {
                format!("measured {}", &p.date[..10])
            };
            assert_eq!(origin(p), expected, "{}", p.source);
        }
    }

    #[test]
    fn short_sources() {
        assert_eq!(short_source("Vidur (microsoft/vidur, MIT)"), "Vidur");
        assert_eq!(short_source("measured by x; more"), "measured by x");
        assert_eq!(short_source("plain"), "plain");
        let long = "a".repeat(60);
        assert_eq!(short_source(&long).chars().count(), 40);
    }

    #[test]
    fn listing_and_line_name_every_profile() {
        let list = shipped();
        let text = listing_text(&list);
        let line = one_line(&list);
        assert!(!line.contains('\n'));
        for p in &list {
            assert!(text.contains(p.name) && text.contains(p.gpu), "{text}");
            assert!(text.contains(&p.points.to_string()), "{text}");
            assert!(text.contains(&p.source), "{text}");
            assert!(line.contains(&format!(
                "{} ({}, {} points {})",
                p.name,
                p.gpu,
                p.points,
                origin(p)
            )));
        }
        // Columns line up under the header.
        let lines: Vec<&str> = text.lines().collect();
        let at = lines[1].find("points").unwrap();
        assert!(
            lines[2][at..].starts_with(|c: char| c.is_ascii_digit()),
            "{text}"
        );
    }
}
