//! Vidur's published operator timings (its MLP profiler's `mlp.csv`) turned into a profile: the
//! four GEMMs of a layer read per row (docs/PROFILES.md says how columns map to shapes), repeated
//! measurements of one shape merged by their median.

use super::{GemmSeries, Profile, ProfileError, Provenance};
use crate::hw::dtype::Dtype;
use crate::hw::gpu;
use crate::stats::median;
use std::collections::BTreeMap;

/// How the shipped Vidur profiles are built: (profile name, Vidur's GPU directory, catalog GPU).
pub const VIDUR_SHIPPED: &[(&str, &str, &str)] = &[
    ("a100-sxm4-80gb-vidur", "a100", "A100-SXM4-80GB"),
    ("h100-sxm5-80gb-vidur", "h100", "H100-SXM5-80GB"),
];

/// The GEMM operators of Vidur's MLP profiler, by their `time_stats.OP` column names.
pub const VIDUR_GEMM_OPS: [&str; 4] = [
    "attn_pre_proj",
    "attn_post_proj",
    "mlp_up_proj",
    "mlp_down_proj",
];

/// One GEMM of one row of a Vidur `mlp.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct VidurGemm {
    /// One of [`VIDUR_GEMM_OPS`].
    pub operator: &'static str,
    pub tokens: u64,
    pub tp: u64,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    /// The row's median time (`time_stats.OP.median`, converted from ms), seconds.
    pub time_s: f64,
}

/// The GEMMs of every row of a Vidur `mlp.csv`, with (m, n, k) of one tensor-parallel shard
/// (Megatron column/row split) from the row's model-shape columns, head_dim = n_embd / n_head:
///
/// | operator       | m      | n                                       | k                    |
/// |----------------|--------|-----------------------------------------|----------------------|
/// | attn_pre_proj  | tokens | (n_head + 2 n_kv_head) / TP x head_dim  | n_embd               |
/// | attn_post_proj | tokens | n_embd                                  | n_embd / TP          |
/// | mlp_up_proj    | tokens | n_expanded_embd x (2 if gated) / TP     | n_embd               |
/// | mlp_down_proj  | tokens | n_embd                                  | n_expanded_embd / TP |
///
/// (the mapping of `sim/tests/it/vidur_compute.rs`). Rows are returned as written, duplicates
/// included. Errors name the line and what is wrong.
pub fn vidur_mlp_gemms(csv: &str) -> Result<Vec<VidurGemm>, String> {
    let mut lines = csv
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or("empty file")?;
    let header: Vec<&str> = header.split(',').map(str::trim).collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| format!("no column `{name}`"))
    };
    let c_tokens = col("num_tokens")?;
    let c_tp = col("num_tensor_parallel_workers")?;
    let c_heads = col("n_head")?;
    let c_kv = col("n_kv_head")?;
    let c_hidden = col("n_embd")?;
    let c_ffn = col("n_expanded_embd")?;
    let c_gated = col("use_gated_mlp")?;
    let op_cols = VIDUR_GEMM_OPS
        .iter()
        .map(|op| Ok((*op, col(&format!("time_stats.{op}.median"))?)))
        .collect::<Result<Vec<_>, String>>()?;
    let mut out = Vec::new();
    for (i, line) in lines {
        let at = |m: String| format!("line {}: {m}", i + 1);
        if line.contains('"') {
            return Err(at("quoted fields are not expected".into()));
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != header.len() {
            return Err(at(format!(
                "{} fields, the header has {}",
                fields.len(),
                header.len()
            )));
        }
        let int = |c: usize| -> Result<u64, String> {
            fields[c]
                .parse::<u64>()
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| {
                    at(format!(
                        "`{}` = {:?} is not a positive integer",
                        header[c], fields[c]
                    ))
                })
        };
        let (tokens, tp) = (int(c_tokens)?, int(c_tp)?);
        let (heads, kv_heads, hidden, ffn) =
            (int(c_heads)?, int(c_kv)?, int(c_hidden)?, int(c_ffn)?);
        let gated = match fields[c_gated] {
            "True" | "true" => true,
            "False" | "false" => false,
            other => {
                return Err(at(format!(
                    "use_gated_mlp = {other:?} is not True or False"
                )));
            }
        };
        let div = |a: u64, b: u64, what: &str| {
            if a.is_multiple_of(b) {
                Ok(a / b)
            } else {
                Err(at(format!("{what} {a} does not split over {b}")))
            }
        };
        let head_dim = div(hidden, heads, "n_embd over n_head:")?;
        let ffn_out = ffn * if gated { 2 } else { 1 };
        for &(op, c) in &op_cols {
            let (n, k) = match op {
                "attn_pre_proj" => {
                    let q = div(heads, tp, "n_head over TP:")?;
                    let kv = div(kv_heads, tp, "n_kv_head over TP:")?;
                    ((q + 2 * kv) * head_dim, hidden)
                }
                "attn_post_proj" => (hidden, div(hidden, tp, "n_embd over TP:")?),
                "mlp_up_proj" => (div(ffn_out, tp, "MLP width over TP:")?, hidden),
                "mlp_down_proj" => (hidden, div(ffn, tp, "n_expanded_embd over TP:")?),
                _ => unreachable!("{op}"),
            };
            let ms: f64 = fields[c]
                .parse()
                .map_err(|_| at(format!("`{}` = {:?} is not a number", header[c], fields[c])))?;
            if !(ms.is_finite() && ms > 0.0) {
                return Err(at(format!("`{}` = {ms} is not a positive time", header[c])));
            }
            out.push(VidurGemm {
                operator: op,
                tokens,
                tp,
                m: tokens,
                n,
                k,
                time_s: ms * 1e-3,
            });
        }
    }
    if out.is_empty() {
        return Err("no rows".into());
    }
    Ok(out)
}

/// Builds a profile of `gpu` (catalog name) from Vidur `mlp.csv` tables, given as (model name,
/// CSV text). Every row's GEMMs become points (m, n, k) in fp16; points with identical (m, n, k),
/// from duplicate rows or from several models, are merged by the median of their medians; times
/// are rounded to 1 ns (the tables resolve 1 us, so this only removes floating-point noise of the
/// ms-to-s conversion). Nothing is subsampled.
pub fn from_vidur_mlp_csv(
    gpu_name: &str,
    tables: &[(&str, &str)],
) -> Result<Profile, ProfileError> {
    let spec = gpu::find(gpu_name)
        .map_err(|_| ProfileError::new("Vidur import", format!("unknown GPU \"{gpu_name}\"")))?;
    let mut points: BTreeMap<(u64, u64), BTreeMap<u64, Vec<f64>>> = BTreeMap::new();
    let mut rows = 0;
    for (model, csv) in tables {
        let gemms = vidur_mlp_gemms(csv).map_err(|m| ProfileError::new(model, m))?;
        rows += gemms.len() / VIDUR_GEMM_OPS.len();
        for g in gemms {
            points
                .entry((g.n, g.k))
                .or_default()
                .entry(g.m)
                .or_default()
                .push(g.time_s);
        }
    }
    let gemm: Vec<GemmSeries> = points
        .into_iter()
        .map(|((n, k), by_m)| {
            let (m, time_s) = by_m
                .into_iter()
                .filter_map(|(m, mut times)| Some((m, (median(&mut times)? * 1e9).round() / 1e9)))
                .unzip();
            GemmSeries {
                dtype: Dtype::Fp16,
                n,
                k,
                m,
                time_s,
            }
        })
        .collect();
    let models: Vec<&str> = tables.iter().map(|(model, _)| *model).collect();
    let profile = Profile {
        gpu: &spec.name,
        provenance: Provenance {
            device: format!(
                "{} (as Vidur labels its profiles; the device string was not recorded)",
                spec.name
            ),
            driver: "not recorded by Vidur".into(),
            cuda: "not recorded by Vidur (PyTorch with cuBLAS, fp16)".into(),
            clocks: "not recorded by Vidur".into(),
            date: "not recorded by Vidur (tables as published in microsoft/vidur)".into(),
            tool:
                "measured by Vidur's MLP profiler (vidur/profiling/mlp, sarathi layers); imported \
                   by clustersim::files::import_vidur_dir"
                    .into(),
            method: format!(
                "one transformer layer per model run in fp16 at tensor-parallel degrees 1-8, timed \
                 with CUDA events; per operator the median of the repetitions \
                 (time_stats.OP.median, ms). GEMM operators {} become (m = tokens, n, k) of one \
                 tensor-parallel shard; identical (m, n, k) from duplicate rows or several models \
                 merged by the median of their medians; times rounded to 1 ns (the tables resolve \
                 1 us). {rows} rows imported, nothing subsampled, elementwise operators not \
                 imported.",
                VIDUR_GEMM_OPS.join(", ")
            ),
            source: format!(
                "Vidur (microsoft/vidur, MIT license) mlp.csv tables, fp16, CUDA events; imported by \
                 clustersim. GPU: {}. Models: {}.",
                spec.name,
                models.join(", ")
            ),
        },
        gemm,
        memory: None,
        attention: Vec::new(),
        elementwise: Vec::new(),
    };
    profile
        .check()
        .map_err(|m| ProfileError::new("Vidur import", m))?;
    Ok(profile)
}
