//! Calibration profiles: measured kernel times of one GPU model, which price kernels in place of
//! the roofline wherever they have something suitable (the "profile" compute tier).
//!
//! A profile is parsed from TOML text (`Profile::parse`; `files::profile` reads a file) in the
//! format docs/PROFILES.md documents (`schema_version` 1 or 2, [`SCHEMA_VERSION`] the newest,
//! checked by a test against that page): `[[gemm]]` tables per weight shape, an optional
//! `[memory]` series, and with version 2 `[[attention]]` and `[elementwise]` series. A GEMM is
//! interpolated linearly in its rows within its weight shape's table, or scaled by the FLOP ratio
//! from the nearest shape within [`NEAREST_SHAPE_MAX_RATIO`]; a memory-bound kernel by its
//! achieved bandwidth; what the profile has nothing suitable for falls to the roofline, and its
//! `tier` says so. Units: seconds, bytes, rows (tokens).
//!
//! `shipped.rs` holds the profiles compiled into the binary, `vidur.rs` the import of Vidur's
//! published operator timings.

mod shipped;
mod vidur;

pub use shipped::{shipped, shipped_for, shipped_names, shipped_profile, shipped_text};
pub use vidur::{VIDUR_GEMM_OPS, VIDUR_SHIPPED, VidurGemm, from_vidur_mlp_csv, vidur_mlp_gemms};

use super::attention_series::{self, AttentionSeries};
use super::dtype::Dtype;
use super::gpu::{self, GpuSpec};
use super::kernel::{ElementwiseOp, Kernel, Pass};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

/// The newest format version this build reads and writes: 2 adds `[[attention]]` and
/// `[elementwise]` to version 1. Profiles without those tables are written as version 1, which
/// every build reads.
pub const SCHEMA_VERSION: i64 = 2;

/// The oldest format version this build reads.
pub const OLDEST_SCHEMA_VERSION: i64 = 1;

/// How far (as a factor in n and in k) the nearest measured weight shape may be from a GEMM's
/// for its time to be scaled by the FLOP ratio; farther, the roofline prices the GEMM.
///
/// Chosen on held-out data: building the Vidur profiles without one model at a time and
/// predicting that model's GEMMs (all models, both GPUs; docs/PROFILES.md), the pooled median
/// error is nearly flat in this limit (A100 2.9-3.0%, H100 4.0-4.9% for limits 1 to 4), lowest
/// on H100 at 1.25-1.3; scaled from shapes further than 1.5x away, predictions were worse than
/// the roofline's on both GPUs (the FLOP ratio assumes both shapes equally efficient, which at
/// 64-511 tokens they are not).
pub const NEAREST_SHAPE_MAX_RATIO: f64 = 1.25;

/// A calibration profile, checked (see the module docs for the format).
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// Catalog name of the GPU it was measured on.
    pub gpu: &'static str,
    pub provenance: Provenance,
    /// GEMM tables, one per (dtype, n, k).
    pub gemm: Vec<GemmSeries>,
    /// Bandwidth-bound streaming kernels (copies, fused optimizer steps), if measured.
    pub memory: Option<MemorySeries>,
    /// Fused attention tables, one per (dtype, pass, causal, head_dim) (schema 2).
    pub attention: Vec<AttentionSeries>,
    /// A framework's elementwise kernels, one table per kind (norms, activations, residual
    /// adds) (schema 2).
    pub elementwise: Vec<ElementwiseSeries>,
}

/// Where a profile's numbers come from.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    pub device: String,
    pub driver: String,
    pub cuda: String,
    pub clocks: String,
    pub date: String,
    pub tool: String,
    pub method: String,
    pub source: String,
}

impl Provenance {
    fn fields(&self) -> [(&'static str, &str); 8] {
        [
            ("device", &self.device),
            ("driver", &self.driver),
            ("cuda", &self.cuda),
            ("clocks", &self.clocks),
            ("date", &self.date),
            ("tool", &self.tool),
            ("method", &self.method),
            ("source", &self.source),
        ]
    }
}

/// Measured times of GEMMs with one weight shape (n, k) over several m.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GemmSeries {
    pub dtype: Dtype,
    pub n: u64,
    pub k: u64,
    /// Strictly increasing.
    pub m: Vec<u64>,
    /// Seconds, one per `m`.
    pub time_s: Vec<f64>,
}

/// Measured times of bandwidth-bound kernels by bytes moved.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySeries {
    /// Bytes read plus written, strictly increasing.
    pub bytes: Vec<u64>,
    /// Seconds, one per size.
    pub time_s: Vec<f64>,
}

/// Measured times of one kind of framework elementwise kernel by bytes moved.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElementwiseSeries {
    pub op: ElementwiseOp,
    pub pass: Pass,
    /// Bytes read plus written, strictly increasing.
    pub bytes: Vec<u64>,
    /// Seconds, one per size.
    pub time_s: Vec<f64>,
}

/// A profile that cannot be read or used: which file (or source) and what is wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileError {
    /// The file path, or the name of the source (a shipped profile, an imported table).
    pub origin: String,
    pub message: String,
}

impl ProfileError {
    pub(crate) fn new(origin: &str, message: impl Into<String>) -> Self {
        ProfileError {
            origin: origin.to_string(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

impl std::error::Error for ProfileError {}

/// The file as written, before checking.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    #[allow(dead_code)]
    schema_version: i64,
    gpu: String,
    provenance: Provenance,
    #[serde(default)]
    gemm: Vec<GemmSeries>,
    memory: Option<MemorySeries>,
    #[serde(default)]
    attention: Vec<AttentionSeries>,
    #[serde(default)]
    elementwise: Vec<ElementwiseSeries>,
}

/// Only the version, read first so that a file of another version is refused for its version
/// rather than for the first key this build does not know.
#[derive(Deserialize)]
struct VersionOnly {
    schema_version: Option<toml::Value>,
}

impl Profile {
    /// Reads a profile from TOML text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Profile, ProfileError> {
        let toml_error = |e: toml::de::Error| {
            ProfileError::new(
                origin,
                format!("not a valid profile: {}", e.to_string().trim()),
            )
        };
        let version = toml::from_str::<VersionOnly>(text).map_err(toml_error)?;
        match version.schema_version {
            None => {
                return Err(ProfileError::new(
                    origin,
                    format!(
                        "missing `schema_version` (this clustersim reads schema_version = \
                         {OLDEST_SCHEMA_VERSION} to {SCHEMA_VERSION})"
                    ),
                ));
            }
            Some(toml::Value::Integer(v))
                if (OLDEST_SCHEMA_VERSION..=SCHEMA_VERSION).contains(&v) => {}
            Some(other) => {
                return Err(ProfileError::new(
                    origin,
                    format!(
                        "schema_version = {other} is not supported (this clustersim reads \
                         schema_version = {OLDEST_SCHEMA_VERSION} to {SCHEMA_VERSION})"
                    ),
                ));
            }
        }
        let version = match version.schema_version {
            Some(toml::Value::Integer(v)) => v,
            _ => unreachable!("checked above"),
        };
        let file: ProfileFile = toml::from_str(text).map_err(toml_error)?;
        let spec = gpu::find(&file.gpu).map_err(|close| {
            ProfileError::new(
                origin,
                format!(
                    "unknown GPU \"{}\" in `gpu` (closest catalog names: {})",
                    file.gpu,
                    close.join(", ")
                ),
            )
        })?;
        if version < 2 && (!file.attention.is_empty() || !file.elementwise.is_empty()) {
            return Err(ProfileError::new(
                origin,
                "[[attention]] and [elementwise] tables need schema_version = 2",
            ));
        }
        let profile = Profile {
            gpu: &spec.name,
            provenance: file.provenance,
            gemm: file.gemm,
            memory: file.memory,
            attention: file.attention,
            elementwise: file.elementwise,
        };
        profile.check().map_err(|m| ProfileError::new(origin, m))?;
        Ok(profile)
    }

    /// The checks of the format that serde cannot express.
    fn check(&self) -> Result<(), String> {
        for (key, value) in self.provenance.fields() {
            if value.trim().is_empty() {
                return Err(format!(
                    "provenance.{key} is empty: write what is known, or \"not recorded\""
                ));
            }
        }
        if self.gemm.is_empty()
            && self.memory.is_none()
            && self.attention.is_empty()
            && self.elementwise.is_empty()
        {
            return Err(
                "no measurements: add [[gemm]], [[attention]], [memory] or [elementwise] tables"
                    .into(),
            );
        }
        let mut shapes = BTreeMap::new();
        for (i, g) in self.gemm.iter().enumerate() {
            let what = format!(
                "[[gemm]] #{} ({}, n = {}, k = {})",
                i + 1,
                g.dtype,
                g.n,
                g.k
            );
            if g.n == 0 || g.k == 0 {
                return Err(format!("{what}: n and k must be at least 1"));
            }
            if let Some(first) = shapes.insert((g.dtype.name(), g.n, g.k), i + 1) {
                return Err(format!(
                    "{what}: the same dtype and weight shape as [[gemm]] #{first}; merge them"
                ));
            }
            let m: Vec<f64> = g.m.iter().map(|&m| m as f64).collect();
            check_series(&what, "m", &m, &g.time_s)?;
        }
        if let Some(mem) = &self.memory {
            let bytes: Vec<f64> = mem.bytes.iter().map(|&b| b as f64).collect();
            check_series("[memory]", "bytes", &bytes, &mem.time_s)?;
        }
        let mut ops = BTreeMap::new();
        for (i, e) in self.elementwise.iter().enumerate() {
            let what = format!(
                "[[elementwise]] #{} ({}, {})",
                i + 1,
                e.op.name(),
                e.pass.name()
            );
            if let Some(first) = ops.insert((e.op, e.pass), i + 1) {
                return Err(format!(
                    "{what}: the same op and pass as [[elementwise]] #{first}; merge them"
                ));
            }
            let bytes: Vec<f64> = e.bytes.iter().map(|&b| b as f64).collect();
            check_series(&what, "bytes", &bytes, &e.time_s)?;
        }
        let mut kinds = BTreeMap::new();
        for (i, a) in self.attention.iter().enumerate() {
            let what = format!(
                "[[attention]] #{} ({}, {}, {}, head_dim = {})",
                i + 1,
                a.dtype,
                a.pass.name(),
                if a.causal { "causal" } else { "not causal" },
                a.head_dim
            );
            a.check(&what)?;
            if let Some(first) =
                kinds.insert((a.dtype.name(), a.pass.name(), a.causal, a.head_dim), i + 1)
            {
                return Err(format!(
                    "{what}: the same dtype, pass, causality and head_dim as [[attention]] \
                     #{first}; merge them"
                ));
            }
        }
        Ok(())
    }

    /// The catalog entry of the GPU it was measured on.
    pub fn gpu_spec(&self) -> &'static GpuSpec {
        gpu::find(self.gpu).expect("checked when the profile was read")
    }

    /// The measured format whose GEMM tables price `dtype` on `gpu`: `dtype` itself when the
    /// profile has tables of it, else a format of the same element size and the same datasheet
    /// peak on `gpu` (fp16 for bf16 on A100 and H100); None when neither exists.
    pub fn gemm_dtype_for(&self, gpu: &GpuSpec, dtype: Dtype) -> Option<Dtype> {
        stand_in(self.gemm.iter().map(|g| g.dtype), gpu, dtype)
    }

    /// Measured time of a GEMM (batch 1), or None when nothing suitable was measured (see the
    /// module docs for the rules).
    pub fn gemm_seconds(&self, gpu: &GpuSpec, m: u64, n: u64, k: u64, dtype: Dtype) -> Option<f64> {
        let dtype = self.gemm_dtype_for(gpu, dtype)?;
        let tables = self.gemm.iter().filter(|g| g.dtype == dtype);
        if let Some(exact) = tables.clone().find(|g| g.n == n && g.k == k) {
            return Some(gemm_at(exact, m));
        }
        let distance = |g: &GemmSeries| {
            (n as f64 / g.n as f64).ln().abs() + (k as f64 / g.k as f64).ln().abs()
        };
        let nearest = tables.min_by(|a, b| {
            distance(a)
                .total_cmp(&distance(b))
                .then((a.n * a.k).cmp(&(b.n * b.k)))
                .then(a.n.cmp(&b.n))
        })?;
        let within = |x: u64, y: u64| {
            let r = x as f64 / y as f64;
            r.max(1.0 / r) <= NEAREST_SHAPE_MAX_RATIO * (1.0 + 1e-12)
        };
        if !(within(n, nearest.n) && within(k, nearest.k)) {
            return None;
        }
        let flop_ratio = (n as f64 * k as f64) / (nearest.n as f64 * nearest.k as f64);
        Some(gemm_at(nearest, m) * flop_ratio)
    }

    /// Measured time of a bandwidth-bound kernel moving `bytes`, or None without a [memory] table.
    pub fn memory_seconds(&self, bytes: f64) -> Option<f64> {
        Some(self.memory.as_ref()?.seconds(bytes))
    }

    /// Measured time of a framework's elementwise kernel of kind `op` in `pass` moving `bytes`:
    /// the [[elementwise]] table of `op` and `pass`, else of `op` in the other pass, else the
    /// [memory] table, else None.
    pub fn elementwise_seconds(&self, op: ElementwiseOp, pass: Pass, bytes: f64) -> Option<f64> {
        let table = self
            .elementwise
            .iter()
            .find(|e| e.op == op && e.pass == pass)
            .or_else(|| self.elementwise.iter().find(|e| e.op == op));
        match table {
            Some(e) => Some(bandwidth_seconds(&e.bytes, &e.time_s, bytes)),
            None => self.memory_seconds(bytes),
        }
    }

    /// Measured time of a fused attention kernel (see [`attention_series`]), or None.
    pub fn attention_seconds(&self, gpu: &GpuSpec, kernel: &Kernel) -> Option<f64> {
        let Kernel::Attention { dtype, .. } = *kernel else {
            return None;
        };
        let usable = stand_in(self.attention.iter().map(|a| a.dtype), gpu, dtype)?;
        attention_series::seconds(&self.attention, |d| d == usable, kernel)
    }

    /// The time of `kernel` from measurements, or None when the roofline must price it.
    pub fn seconds(&self, gpu: &GpuSpec, kernel: &Kernel) -> Option<f64> {
        match *kernel {
            Kernel::Gemm {
                m,
                n,
                k,
                batch: 1,
                dtype,
            } => self.gemm_seconds(gpu, m, n, k, dtype),
            Kernel::Attention { .. } => self.attention_seconds(gpu, kernel),
            Kernel::Gemm { .. } => None,
            Kernel::Memory { bytes, .. } => self.memory_seconds(bytes),
            Kernel::Elementwise {
                op,
                backward,
                bytes,
                ..
            } => self.elementwise_seconds(op, Pass::of(backward), bytes),
        }
    }

    /// Number of measured points (all tables).
    pub fn points(&self) -> usize {
        self.gemm.iter().map(|g| g.m.len()).sum::<usize>()
            + self.memory.as_ref().map_or(0, |m| m.bytes.len())
            + self
                .attention
                .iter()
                .map(AttentionSeries::points)
                .sum::<usize>()
            + self
                .elementwise
                .iter()
                .map(|e| e.bytes.len())
                .sum::<usize>()
    }

    /// The schema version [`Profile::to_toml`] writes: 1 unless a version-2 table is present.
    pub fn schema_version(&self) -> i64 {
        if self.attention.is_empty() && self.elementwise.is_empty() {
            OLDEST_SCHEMA_VERSION
        } else {
            SCHEMA_VERSION
        }
    }

    /// The profile as TOML, in the layout of the shipped files (parsing it gives the profile back).
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "# clustersim calibration profile: measured kernel times of one GPU model.\n\
             # Format and field meanings: docs/PROFILES.md and sim/src/hw/profile.rs.\n",
        );
        let _ = writeln!(out, "schema_version = {}", self.schema_version());
        let _ = writeln!(out, "gpu = {}", toml_string(self.gpu));
        out.push_str("\n[provenance]\n");
        for (key, value) in self.provenance.fields() {
            let _ = writeln!(out, "{key} = {}", toml_string(value));
        }
        if !self.gemm.is_empty() {
            out.push_str(
                "\n# GEMMs C (m x n) = A (m x k) B (k x n): one table per weight shape (dtype, n, \
                 k); time_s[i] is the time at m[i].\n",
            );
        }
        for g in &self.gemm {
            let _ = writeln!(
                out,
                "\n[[gemm]]\ndtype = \"{}\"\nn = {}\nk = {}",
                g.dtype, g.n, g.k
            );
            write_array(&mut out, "m", g.m.iter().map(|m| m.to_string()));
            write_array(
                &mut out,
                "time_s",
                g.time_s.iter().map(|t| format!("{t:e}")),
            );
        }
        if let Some(mem) = &self.memory {
            out.push_str("\n[memory]\n");
            write_array(&mut out, "bytes", mem.bytes.iter().map(|b| b.to_string()));
            write_array(
                &mut out,
                "time_s",
                mem.time_s.iter().map(|t| format!("{t:e}")),
            );
        }
        for e in &self.elementwise {
            let _ = writeln!(
                out,
                "\n[[elementwise]]\nop = \"{}\"\npass = \"{}\"",
                e.op.name(),
                e.pass.name()
            );
            write_array(&mut out, "bytes", e.bytes.iter().map(|b| b.to_string()));
            write_array(
                &mut out,
                "time_s",
                e.time_s.iter().map(|t| format!("{t:e}")),
            );
        }
        if !self.attention.is_empty() {
            out.push_str(
                "\n# Fused attention: one table per (dtype, pass, causal, head_dim); point i is \
                 batch_heads[i] heads of q_len[i] queries against kv_len[i] keys, time_s[i].\n",
            );
        }
        for a in &self.attention {
            let _ = writeln!(
                out,
                "\n[[attention]]\ndtype = \"{}\"\npass = \"{}\"\ncausal = {}\nhead_dim = {}",
                a.dtype,
                a.pass.name(),
                a.causal,
                a.head_dim
            );
            write_array(
                &mut out,
                "batch_heads",
                a.batch_heads.iter().map(|v| v.to_string()),
            );
            write_array(&mut out, "q_len", a.q_len.iter().map(|v| v.to_string()));
            write_array(&mut out, "kv_len", a.kv_len.iter().map(|v| v.to_string()));
            write_array(
                &mut out,
                "time_s",
                a.time_s.iter().map(|t| format!("{t:e}")),
            );
        }
        out
    }
}

impl MemorySeries {
    /// Time of a kernel moving `bytes` (the module docs' rule for memory-bound kernels).
    pub fn seconds(&self, bytes: f64) -> f64 {
        bandwidth_seconds(&self.bytes, &self.time_s, bytes)
    }
}

/// Time of a bandwidth-bound kernel moving `bytes`, from measured (bytes, time) points (the module
/// docs' rule for memory-bound kernels).
fn bandwidth_seconds(xs: &[u64], ts: &[f64], bytes: f64) -> f64 {
    let last = xs.len() - 1;
    if bytes <= xs[0] as f64 {
        return ts[0];
    }
    if bytes >= xs[last] as f64 {
        if bytes == xs[last] as f64 {
            return ts[last];
        }
        return bytes / (xs[last] as f64 / ts[last]);
    }
    // xs[i] < bytes < xs[i + 1], or bytes == xs[i].
    let i = xs.partition_point(|&x| (x as f64) <= bytes) - 1;
    if xs[i] as f64 == bytes {
        return ts[i];
    }
    let (x0, x1) = (xs[i] as f64, xs[i + 1] as f64);
    let (bw0, bw1) = (x0 / ts[i], x1 / ts[i + 1]);
    let bw = bw0 + (bw1 - bw0) * (bytes - x0) / (x1 - x0);
    bytes / bw
}

/// The measured format that prices `dtype` on `gpu` among `measured`: `dtype` itself, else one of
/// the same element size and the same datasheet peak on `gpu` (the first by name), else None.
fn stand_in(measured: impl Iterator<Item = Dtype>, gpu: &GpuSpec, dtype: Dtype) -> Option<Dtype> {
    let measured: Vec<Dtype> = measured.collect();
    if measured.contains(&dtype) {
        return Some(dtype);
    }
    let peak = gpu.peak_flops(dtype)?;
    let mut stand_ins: Vec<Dtype> = measured
        .into_iter()
        .filter(|d| d.bytes() == dtype.bytes() && gpu.peak_flops(*d) == Some(peak))
        .collect();
    stand_ins.sort_by_key(|d| d.name());
    stand_ins.first().copied()
}

/// Checks one measured series: same lengths, non-empty, x strictly increasing from 1, times
/// positive and finite.
fn check_series(what: &str, x_name: &str, xs: &[f64], ts: &[f64]) -> Result<(), String> {
    if xs.is_empty() {
        return Err(format!("{what}: `{x_name}` is empty"));
    }
    if xs.len() != ts.len() {
        return Err(format!(
            "{what}: {} values in `{x_name}` but {} in `time_s`; they pair up one to one",
            xs.len(),
            ts.len()
        ));
    }
    if xs[0] < 1.0 {
        return Err(format!(
            "{what}: {x_name}[0] = {} must be at least 1",
            xs[0]
        ));
    }
    for i in 1..xs.len() {
        if xs[i] <= xs[i - 1] {
            return Err(format!(
                "{what}: `{x_name}` must increase strictly, but {x_name}[{i}] = {} follows {}",
                xs[i],
                xs[i - 1]
            ));
        }
    }
    for (i, t) in ts.iter().enumerate() {
        if !(t.is_finite() && *t > 0.0) {
            return Err(format!(
                "{what}: time_s[{i}] = {t} (at {x_name} = {}) must be a positive number of seconds",
                xs[i]
            ));
        }
    }
    Ok(())
}

/// Time of one GEMM table at `m` (rule 2 of the module docs).
fn gemm_at(g: &GemmSeries, m: u64) -> f64 {
    let (ms, ts) = (&g.m, &g.time_s);
    let last = ms.len() - 1;
    if m <= ms[0] {
        return ts[0];
    }
    if m >= ms[last] {
        return ts[last] * m as f64 / ms[last] as f64;
    }
    let i = ms.partition_point(|&x| x <= m) - 1;
    if ms[i] == m {
        return ts[i];
    }
    let f = (m - ms[i]) as f64 / (ms[i + 1] - ms[i]) as f64;
    ts[i] + (ts[i + 1] - ts[i]) * f
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Values per line of the arrays in [`Profile::to_toml`], the same for `m` and `time_s` so that
/// line i of one pairs with line i of the other.
const PER_LINE: usize = 10;

fn write_array(out: &mut String, key: &str, values: impl Iterator<Item = String>) {
    let values: Vec<String> = values.collect();
    let _ = writeln!(out, "{key} = [");
    for chunk in values.chunks(PER_LINE) {
        let _ = writeln!(out, "  {},", chunk.join(", "));
    }
    out.push_str("]\n");
}

#[cfg(test)]
mod tests {
    use super::shipped::SHIPPED;
    use super::*;

    #[test]
    fn the_documented_format_is_the_one_this_build_writes() {
        let page = include_str!("../../../../docs/PROFILES.md");
        let heading = page
            .lines()
            .find(|l| l.starts_with("## File format"))
            .expect("docs/PROFILES.md documents the file format");
        for version in OLDEST_SCHEMA_VERSION..=SCHEMA_VERSION {
            assert!(
                heading.contains(&format!("`{version}`"))
                    || heading.contains(&format!("schema_version = {version}")),
                "docs/PROFILES.md's format heading ({heading}) does not name version {version}"
            );
        }
        assert!(
            !heading.contains(&format!("{}", SCHEMA_VERSION + 1)),
            "docs/PROFILES.md names a version this build does not read: {heading}"
        );
    }

    fn profile(gemm: Vec<GemmSeries>, memory: Option<MemorySeries>) -> Profile {
        Profile {
            gpu: "H100-SXM5-80GB",
            provenance: Provenance {
                device: "d".into(),
                driver: "d".into(),
                cuda: "c".into(),
                clocks: "c".into(),
                date: "d".into(),
                tool: "t".into(),
                method: "m".into(),
                source: "s".into(),
            },
            gemm,
            memory,
            attention: Vec::new(),
            elementwise: Vec::new(),
        }
    }

    fn series(n: u64, k: u64, m: &[u64], t: &[f64]) -> GemmSeries {
        GemmSeries {
            dtype: Dtype::Fp16,
            n,
            k,
            m: m.to_vec(),
            time_s: t.to_vec(),
        }
    }

    #[test]
    fn gemm_rules() {
        let h100 = gpu::find("H100").unwrap();
        let p = profile(vec![series(1000, 1000, &[2, 10], &[1.0, 3.0])], None);
        let t = |m, n, k, d| p.gemm_seconds(h100, m, n, k, d);
        assert_eq!(t(2, 1000, 1000, Dtype::Fp16), Some(1.0));
        assert_eq!(t(1, 1000, 1000, Dtype::Fp16), Some(1.0));
        assert_eq!(t(6, 1000, 1000, Dtype::Fp16), Some(2.0));
        assert_eq!(t(20, 1000, 1000, Dtype::Fp16), Some(6.0));
        // bf16 stands in for fp16 on H100 (same size, same peak); fp8 does not.
        assert_eq!(t(6, 1000, 1000, Dtype::Bf16), Some(2.0));
        assert_eq!(t(6, 1000, 1000, Dtype::Fp8), None);
        // Nearest shape, scaled by the FLOP ratio; too far: none.
        assert_eq!(t(6, 1250, 1000, Dtype::Fp16), Some(2.5));
        assert_eq!(t(6, 1000, 800, Dtype::Fp16), Some(1.6));
        assert_eq!(t(6, 1300, 1000, Dtype::Fp16), None);
    }

    #[test]
    fn memory_rules() {
        let p = profile(
            vec![],
            Some(MemorySeries {
                bytes: vec![100, 300],
                time_s: vec![1.0, 1.5],
            }),
        );
        assert_eq!(p.memory_seconds(50.0), Some(1.0));
        assert_eq!(p.memory_seconds(100.0), Some(1.0));
        assert_eq!(p.memory_seconds(300.0), Some(1.5));
        // bandwidth 100 at 100 bytes, 200 at 300: 150 at 200 bytes.
        let mid = p.memory_seconds(200.0).unwrap();
        assert!((mid - 200.0 / 150.0).abs() < 1e-12, "{mid}");
        assert_eq!(p.memory_seconds(600.0), Some(3.0));
    }

    #[test]
    fn shipped_profiles_parse_and_name_their_gpu() {
        for (name, gpu_name, _) in SHIPPED {
            let p = shipped_profile(name).unwrap();
            assert_eq!(p.gpu, *gpu_name, "{name}");
            assert_eq!(shipped_for(p.gpu_spec()), vec![*name]);
        }
    }

    #[test]
    fn toml_strings_escape() {
        assert_eq!(toml_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
    }
}
