//! `import-vidur`: Vidur's compute tables (`GPU/ORG/MODEL/mlp.csv`) into a clustersim profile,
//! with a summary of what was read and a read-back check.
//!
//! The profile is built by the library's importer (`clustersim::files::import_vidur_dir`, the
//! code that made the shipped profiles); this module only finds the directory, reads the tables
//! again for the summary and the check, writes the file and reports.
//!
//! Read-back check: the written file is loaded again and every GEMM of the source tables priced
//! by the profile tier (`ComputeModel::with_profile`, fp16 as measured), against
//! - the merged source points (the median of every row with the same (m, n, k), which is what the
//!   profile records): within [`MAX_MERGED_ERROR`], only the importer's 1 ns rounding apart;
//! - each model's own rows: where several models measured one (m, n, k) the profile holds their
//!   median, so a model's figure can differ by the spread between runs. The median error must be
//!   within 3%; the largest is reported, not bounded.
//!
//! Figures on the shared tables: docs/CALIBRATION.md#import-vidur

use crate::table::write_table;
use clustersim::hw::profile::{self, Profile, VIDUR_SHIPPED, VidurGemm};
use clustersim::hw::{ComputeModel, ComputeTier, Dtype, Kernel, gpu};
use clustersim::stats::median;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Largest relative error allowed against the merged source points, and for the median against
/// each model's rows.
pub const MAX_MERGED_ERROR: f64 = 0.03;

/// The GPU directories Vidur publishes and the catalog GPU and shipped-profile name of each.
pub fn known_gpus() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    VIDUR_SHIPPED
        .iter()
        .map(|&(profile_name, dir, gpu_name)| (dir, gpu_name, profile_name))
}

/// Where the tables are and what GPU they are of.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    /// The GPU directory: it holds ORG/MODEL/mlp.csv.
    pub dir: PathBuf,
    /// Vidur's name for the GPU ("h100").
    pub key: &'static str,
    /// Catalog name ("H100-SXM5-80GB").
    pub gpu: &'static str,
    /// The shipped profile imported from the same tables ("h100-sxm5-80gb-vidur").
    pub profile_name: &'static str,
}

/// True when `dir` holds at least one ORG/MODEL/mlp.csv.
fn holds_tables(dir: &Path) -> bool {
    subdirs(dir).unwrap_or_default().iter().any(|org| {
        subdirs(org)
            .unwrap_or_default()
            .iter()
            .any(|m| m.join("mlp.csv").is_file())
    })
}

fn subdirs(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut out = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
            .path();
        if path.is_dir() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// Finds the GPU directory from what the user gave: the GPU directory itself (its name says the
/// GPU unless `--gpu` does), or a directory above it (`compute/` or the root of Vidur's profiles),
/// in which case `--gpu` picks the GPU.
pub fn resolve(dir: &Path, gpu_key: Option<&str>) -> Result<Source, String> {
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let known: Vec<&str> = known_gpus().map(|(k, _, _)| k).collect();
    let lookup = |key: &str| {
        known_gpus()
            .find(|(k, _, _)| k.eq_ignore_ascii_case(key))
            .ok_or_else(|| {
                format!(
                    "no Vidur GPU called \"{key}\" (this tool knows {})",
                    known.join(", ")
                )
            })
    };
    let source = |d: PathBuf, (key, gpu, profile_name)| Source {
        dir: d,
        key,
        gpu,
        profile_name,
    };
    if holds_tables(&dir) {
        let key = match gpu_key {
            Some(k) => k.to_string(),
            None => dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        let found = lookup(&key).map_err(|e| match gpu_key {
            Some(_) => e,
            None => format!(
                "{} holds Vidur tables, but its name does not say which GPU; add --gpu ({})",
                dir.display(),
                known.join(" or ")
            ),
        })?;
        return Ok(source(dir, found));
    }
    let below = |key: &str| {
        [dir.join(key), dir.join("compute").join(key)]
            .into_iter()
            .find(|d| holds_tables(d))
    };
    match gpu_key {
        Some(key) => {
            let found = lookup(key)?;
            let d = below(found.0).ok_or_else(|| {
                format!(
                    "no ORG/MODEL/mlp.csv tables in {}, {}/{} or {}/compute/{}",
                    dir.display(),
                    dir.display(),
                    found.0,
                    dir.display(),
                    found.0
                )
            })?;
            Ok(source(d, found))
        }
        None => {
            let present: Vec<&str> = known
                .iter()
                .copied()
                .filter(|k| below(k).is_some())
                .collect();
            Err(if present.is_empty() {
                format!(
                    "no Vidur tables (ORG/MODEL/mlp.csv) in {} or the GPU directories below it",
                    dir.display()
                )
            } else {
                format!(
                    "{} holds the tables of {}; choose one with --gpu",
                    dir.display(),
                    present.join(" and ")
                )
            })
        }
    }
}

/// One model's table.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelTable {
    /// "meta-llama/Llama-2-7b-hf".
    pub name: String,
    pub gemms: Vec<VidurGemm>,
}

impl ModelTable {
    pub fn rows(&self) -> usize {
        self.gemms.len() / profile::VIDUR_GEMM_OPS.len()
    }
}

/// Reads every ORG/MODEL/mlp.csv under the GPU directory, in the importer's (sorted) order,
/// parsed by the library's `vidur_mlp_gemms`.
pub fn read_tables(dir: &Path) -> Result<Vec<ModelTable>, String> {
    let mut out = Vec::new();
    for org in subdirs(dir)? {
        for model in subdirs(&org)? {
            let csv = model.join("mlp.csv");
            let text = std::fs::read_to_string(&csv)
                .map_err(|e| format!("cannot read {}: {e}", csv.display()))?;
            let gemms =
                profile::vidur_mlp_gemms(&text).map_err(|e| format!("{}: {e}", csv.display()))?;
            let name = |p: &Path| {
                p.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            };
            out.push(ModelTable {
                name: format!("{}/{}", name(&org), name(&model)),
                gemms,
            });
        }
    }
    if out.is_empty() {
        return Err(format!("no ORG/MODEL/mlp.csv tables in {}", dir.display()));
    }
    Ok(out)
}

/// Imports the tables with the library's importer.
pub fn import(source: &Source) -> Result<Profile, String> {
    let parent = source.dir.parent().unwrap_or(Path::new("/"));
    let name = source
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    clustersim::files::import_vidur_dir(parent, &name, source.gpu, &[]).map_err(|e| e.to_string())
}

/// What was read, per model and in all.
pub fn summary_text(source: &Source, tables: &[ModelTable]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Read {} Vidur tables of {} ({}) from {}:",
        tables.len(),
        source.key,
        source.gpu,
        source.dir.display()
    );
    let rows: Vec<[String; 5]> = tables
        .iter()
        .map(|t| {
            let tp: BTreeSet<u64> = t.gemms.iter().map(|g| g.tp).collect();
            let tokens = (
                t.gemms.iter().map(|g| g.tokens).min().unwrap_or(0),
                t.gemms.iter().map(|g| g.tokens).max().unwrap_or(0),
            );
            let shapes: BTreeSet<(u64, u64)> = t.gemms.iter().map(|g| (g.n, g.k)).collect();
            [
                t.name.clone(),
                t.rows().to_string(),
                shapes.len().to_string(),
                tp.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
                format!("{}-{}", tokens.0, tokens.1),
            ]
        })
        .collect();
    let header = ["model", "rows", "weight shapes", "TP", "tokens (m)"];
    write_table(&mut out, "  ", header, &rows);
    let all: Vec<&VidurGemm> = tables.iter().flat_map(|t| &t.gemms).collect();
    let points: BTreeSet<(u64, u64, u64)> = all.iter().map(|g| (g.m, g.n, g.k)).collect();
    let shapes: BTreeSet<(u64, u64)> = all.iter().map(|g| (g.n, g.k)).collect();
    let _ = writeln!(
        out,
        "In all: {} rows, {} GEMMs ({}), {} distinct (m, n, k) over {} weight shapes (n, k).",
        tables.iter().map(ModelTable::rows).sum::<usize>(),
        all.len(),
        profile::VIDUR_GEMM_OPS.join(", "),
        points.len(),
        shapes.len()
    );
    out
}

/// Relative errors of one comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Errors {
    pub count: usize,
    pub median: f64,
    pub max: f64,
    /// Where the largest error is: (model or "merged", m, n, k).
    pub worst: (String, u64, u64, u64),
    /// Cases priced exactly (|error| below 1e-9).
    pub exact: usize,
}

/// The read-back check's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadBack {
    /// Against the median of every row with the same (m, n, k).
    pub merged: Errors,
    /// Against each model's own median per (m, n, k).
    pub own_rows: Errors,
    /// Distinct (m, n, k) the profile tier priced (all of them, unless something is wrong).
    pub by_profile: usize,
    /// Distinct (m, n, k) of the sources.
    pub total: usize,
}

impl ReadBack {
    /// True when the written profile reproduces its sources within [`MAX_MERGED_ERROR`].
    pub fn passes(&self) -> bool {
        self.by_profile == self.total
            && self.merged.max <= MAX_MERGED_ERROR
            && self.own_rows.median <= MAX_MERGED_ERROR
    }
}

fn errors(cases: Vec<(String, u64, u64, u64, f64)>) -> Errors {
    let mut abs: Vec<f64> = cases.iter().map(|c| c.4.abs()).collect();
    let worst = cases
        .iter()
        .max_by(|a, b| a.4.abs().total_cmp(&b.4.abs()))
        .map(|c| (c.0.clone(), c.1, c.2, c.3))
        .unwrap_or_default();
    Errors {
        count: cases.len(),
        exact: abs.iter().filter(|e| **e < 1e-9).count(),
        max: abs.iter().copied().fold(0.0, f64::max),
        median: median(&mut abs).unwrap_or(0.0),
        worst,
    }
}

/// Prices every GEMM of `tables` with `profile` (read back from the file) through the
/// simulator's profile tier and compares (see the module docs).
pub fn read_back(profile: Profile, tables: &[ModelTable]) -> Result<ReadBack, String> {
    let spec = gpu::find(profile.gpu).map_err(|_| format!("unknown GPU {}", profile.gpu))?;
    let model = ComputeModel::with_profile(spec, profile).map_err(|e| e.to_string())?;
    let (mut by_profile, mut total) = (0, 0);
    let mut price = |m: u64, n: u64, k: u64| -> Result<f64, String> {
        let cost = model
            .cost(&Kernel::Gemm {
                m,
                n,
                k,
                batch: 1,
                dtype: Dtype::Fp16,
            })
            .ok_or_else(|| format!("the simulator cannot price GEMM {m} x {n} x {k}"))?;
        total += 1;
        if cost.tier == ComputeTier::Profile {
            by_profile += 1;
        }
        Ok(cost.seconds)
    };
    let mut merged: BTreeMap<(u64, u64, u64), Vec<f64>> = BTreeMap::new();
    for g in tables.iter().flat_map(|t| &t.gemms) {
        merged.entry((g.m, g.n, g.k)).or_default().push(g.time_s);
    }
    // Each distinct (m, n, k) is priced once; both comparisons use that price.
    let mut priced = BTreeMap::new();
    let mut merged_cases = Vec::new();
    for (&(m, n, k), times) in &mut merged {
        let Some(measured) = median(times) else {
            continue;
        };
        let predicted = price(m, n, k)?;
        priced.insert((m, n, k), predicted);
        merged_cases.push((
            "merged".to_string(),
            m,
            n,
            k,
            (predicted - measured) / measured,
        ));
    }
    let mut own_cases = Vec::new();
    for t in tables {
        let mut own: BTreeMap<(u64, u64, u64), Vec<f64>> = BTreeMap::new();
        for g in &t.gemms {
            own.entry((g.m, g.n, g.k)).or_default().push(g.time_s);
        }
        for ((m, n, k), mut times) in own {
            let Some(measured) = median(&mut times) else {
                continue;
            };
            let predicted = priced[&(m, n, k)];
            own_cases.push((t.name.clone(), m, n, k, (predicted - measured) / measured));
        }
    }
    Ok(ReadBack {
        merged: errors(merged_cases),
        own_rows: errors(own_cases),
        by_profile,
        total,
    })
}

/// The check's report, a few lines.
pub fn read_back_text(r: &ReadBack) -> String {
    let pct = |x: f64| format!("{:.3}%", 100.0 * x);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Read-back check: the written file loaded again and priced by clustersim's profile tier \
         (fp16, as measured); {} of {} distinct (m, n, k) priced from the profile.",
        r.by_profile, r.total
    );
    let _ = writeln!(
        out,
        "  merged source points (median of the rows with the same m, n, k; what the profile \
         records): {} points, max |error| {}, median {} ({} exact) -> {} (required: within {:.0}%)",
        r.merged.count,
        pct(r.merged.max),
        pct(r.merged.median),
        r.merged.exact,
        if r.merged.max <= MAX_MERGED_ERROR {
            "pass"
        } else {
            "FAIL"
        },
        100.0 * MAX_MERGED_ERROR
    );
    let w = &r.own_rows.worst;
    let worst = if r.own_rows.max > 1e-9 {
        format!(
            " ({} m {} n {} k {}: a point several models measured, whose median the profile \
             keeps)",
            w.0, w.1, w.2, w.3
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  each model's own rows (median of its duplicate rows): {} points, median |error| {} ({} \
         exact), max {}{worst}",
        r.own_rows.count,
        pct(r.own_rows.median),
        r.own_rows.exact,
        pct(r.own_rows.max),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared copy of Vidur's profiles (the repository sits next to `shared/`).
    pub(crate) const VIDUR: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/vidur-profiles"
    );

    fn vidur() -> PathBuf {
        let dir = PathBuf::from(VIDUR);
        assert!(
            dir.join("compute").is_dir(),
            "Vidur profiles not found at {} (the repository must sit next to a copy of \
             `shared/`); this check must not be skipped",
            dir.display()
        );
        dir
    }

    #[test]
    fn directories_resolve_from_any_level() {
        let root = vidur();
        let h100 = root.join("compute/h100").canonicalize().unwrap();
        let direct = resolve(&root.join("compute/h100"), None).unwrap();
        assert_eq!(
            (direct.dir.clone(), direct.key, direct.gpu),
            (h100.clone(), "h100", "H100-SXM5-80GB")
        );
        assert_eq!(direct.profile_name, "h100-sxm5-80gb-vidur");
        assert_eq!(resolve(&root, Some("h100")).unwrap(), direct);
        assert_eq!(
            resolve(&root.join("compute"), Some("H100")).unwrap(),
            direct
        );
        assert_eq!(
            resolve(&root.join("compute/h100"), Some("h100")).unwrap(),
            direct
        );
        let a100 = resolve(&root, Some("a100")).unwrap();
        assert_eq!(a100.gpu, "A100-SXM4-80GB");
        // Ambiguous or wrong: say what to do.
        let both = resolve(&root.join("compute"), None).unwrap_err();
        assert!(
            both.contains("a100 and h100") && both.contains("--gpu"),
            "{both}"
        );
        let unknown = resolve(&root, Some("v100")).unwrap_err();
        assert!(
            unknown.contains("\"v100\"") && unknown.contains("a100, h100"),
            "{unknown}"
        );
        let org = resolve(&root.join("compute/h100/meta-llama"), None).unwrap_err();
        assert!(org.contains("no Vidur tables"), "{org}");
        let missing = resolve(Path::new("/no/such/dir"), None).unwrap_err();
        assert!(missing.contains("not a directory"), "{missing}");
    }

    #[test]
    fn h100_import_equals_the_shipped_profile_and_reads_back() {
        let source = resolve(&vidur(), Some("h100")).unwrap();
        let tables = read_tables(&source.dir).unwrap();
        assert_eq!(tables.len(), 6);
        assert!(tables.iter().any(|t| t.name == "meta-llama/Llama-2-7b-hf"));
        let profile = import(&source).unwrap();
        assert_eq!(
            profile.to_toml(),
            profile::shipped_text(source.profile_name).unwrap(),
            "the import differs from the shipped profile"
        );
        let summary = summary_text(&source, &tables);
        assert!(
            summary.contains("Read 6 Vidur tables of h100 (H100-SXM5-80GB)"),
            "{summary}"
        );
        let check = read_back(profile, &tables).unwrap();
        println!("{}", read_back_text(&check));
        assert!(check.passes(), "{check:?}");
        assert_eq!(check.by_profile, check.total);
        assert!(check.merged.max < 1e-3, "{check:?}");
        assert_eq!((check.merged.count, check.total), (17871, 17871));
        assert!(check.own_rows.count > check.merged.count);
    }
}
