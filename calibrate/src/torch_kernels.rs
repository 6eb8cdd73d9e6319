//! PyTorch's kernel records (`torch_bench.py kernels`) as profile tables: `[[attention]]` from the
//! fused-attention records and `[elementwise]` from the norm, activation and residual-add records.
//!
//! Attention: one table per (dtype, pass, causal, head_dim), a point per record (batch x heads,
//! q_len, kv_len, median time), in the records' order.
//!
//! Elementwise: one table per kind of kernel the simulator distinguishes (norm: layer norm and
//! RMS norm; activation: tanh-GELU; gated activation: SwiGLU; add: the residual add), forward and
//! backward records pooled (the simulator prices a backward as its forward's kind moving twice the
//! bytes). Each record gives an achieved bandwidth at its bytes (counted as the simulator counts
//! them: inputs read once, outputs written once; a backward twice its forward); a kind's records
//! are grouped by their size rounded to the nearest power of two, and each group becomes one
//! point: the geometric mean of its sizes, at the median of its bandwidths.

use crate::measure::output::round_sig;
use crate::torch::{KernelRecord, Output};
use clustersim::hw::attention_series::AttentionSeries;
use clustersim::hw::profile::ElementwiseSeries;
use clustersim::hw::{ElementwiseOp, Pass, Profile};
use std::collections::BTreeMap;

/// A record's pass.
fn pass(name: &str) -> Result<Pass, String> {
    match name {
        "forward" => Ok(Pass::Forward),
        "backward" => Ok(Pass::Backward),
        other => Err(format!(
            "a record with pass {other:?} (forward or backward)"
        )),
    }
}

/// The attention tables of `records`.
pub fn attention(records: &[KernelRecord]) -> Result<Vec<AttentionSeries>, String> {
    let mut tables: BTreeMap<(String, &str, bool, u64), AttentionSeries> = BTreeMap::new();
    let mut order = Vec::new();
    for r in records.iter().filter(|r| r.kind == "attention") {
        let dtype = r.dtype;
        let pass = pass(&r.pass)?;
        let key = (dtype.name().to_string(), pass.name(), r.causal, r.head_dim);
        if !tables.contains_key(&key) {
            order.push(key.clone());
        }
        let t = tables.entry(key).or_insert_with(|| AttentionSeries {
            dtype,
            pass,
            causal: r.causal,
            head_dim: r.head_dim,
            batch_heads: Vec::new(),
            q_len: Vec::new(),
            kv_len: Vec::new(),
            time_s: Vec::new(),
        });
        t.batch_heads.push(r.batch * r.heads);
        t.q_len.push(r.q_len);
        t.kv_len.push(r.kv_len);
        t.time_s.push(r.median_s);
    }
    Ok(order
        .into_iter()
        .map(|k| tables.remove(&k).expect("inserted"))
        .collect())
}

/// The simulator's kind of a PyTorch operator of the script, or None for an unknown one.
pub fn kind(op: &str) -> Option<ElementwiseOp> {
    match op {
        "layernorm" | "rmsnorm" => Some(ElementwiseOp::Norm),
        "gelu" => Some(ElementwiseOp::Activation),
        "swiglu" => Some(ElementwiseOp::GatedActivation),
        "add" => Some(ElementwiseOp::Add),
        _ => None,
    }
}

/// The elementwise tables of `records`, one per kind (see the module docs).
pub fn elementwise(records: &[KernelRecord]) -> Result<Vec<ElementwiseSeries>, String> {
    // (kind, pass) -> power of two of the size -> (bytes, bandwidth) of each record.
    type BySize = BTreeMap<i64, Vec<(f64, f64)>>;
    let mut groups: BTreeMap<(ElementwiseOp, Pass), BySize> = BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| r.kind == "elementwise" && r.bytes > 0)
    {
        let name = r.op.as_deref().unwrap_or("");
        let op = kind(name).ok_or_else(|| format!("elementwise record of unknown op {name:?}"))?;
        let bytes = r.bytes as f64;
        groups
            .entry((op, pass(&r.pass)?))
            .or_default()
            .entry(bytes.log2().round() as i64)
            .or_default()
            .push((bytes, bytes / r.median_s));
    }
    let mut tables = Vec::new();
    for ((op, pass), sizes) in groups {
        let mut series = ElementwiseSeries {
            op,
            pass,
            bytes: Vec::new(),
            time_s: Vec::new(),
        };
        for group in sizes.values() {
            let size = (group.iter().map(|(b, _)| b.ln()).sum::<f64>() / group.len() as f64).exp();
            let mut bandwidths: Vec<f64> = group.iter().map(|(_, bw)| *bw).collect();
            let Some(bw) = clustersim::stats::median(&mut bandwidths) else {
                continue;
            };
            let size = size.round() as u64;
            if series.bytes.last().is_some_and(|&last| last >= size) {
                continue;
            }
            series.bytes.push(size);
            series.time_s.push(round_sig(size as f64 / bw, 4));
        }
        tables.push(series);
    }
    Ok(tables)
}

/// `profile` with the attention and elementwise tables of `kernels` (replacing any it had), its
/// provenance saying where they come from; checked by writing and reading it back.
pub fn add_to(profile: &Profile, kernels: &Output<KernelRecord>) -> Result<Profile, String> {
    let mut p = profile.clone();
    p.attention = attention(&kernels.records)?;
    p.elementwise = elementwise(&kernels.records)?;
    let env = &kernels.environment;
    let attention_points: usize = p.attention.iter().map(AttentionSeries::points).sum();
    // How the records were timed, as they say themselves.
    let timing = match kernels.records.iter().filter_map(|r| r.calls).max() {
        Some(most) => format!(
            "CUDA events around batches of up to {most} back-to-back calls (as many as last \
             about 1 ms) after warm-up, median time per call over the batches"
        ),
        None => "CUDA events around each call after warm-up, median of 5 to 50 calls".to_string(),
    };
    let _ = std::fmt::Write::write_fmt(
        &mut p.provenance.method,
        format_args!(
            " [[attention]] and [[elementwise]]: PyTorch {} (CUDA {}) on {}, {}, through \
             calibrate/python/torch_bench.py kernels: FlashAttention via \
             scaled_dot_product_attention (bf16; {} points), and PyTorch's layer norm, RMS norm, \
             tanh-GELU, SwiGLU and residual add at width 4096 forward and backward, one table per \
             kind (median bandwidth per power of two of size, {} points); {timing}.",
            env.torch,
            env.cuda.as_deref().unwrap_or("?"),
            env.device,
            env.date,
            attention_points,
            p.elementwise.iter().map(|e| e.bytes.len()).sum::<usize>(),
        ),
    );
    Profile::parse(&p.to_toml(), "the profile with PyTorch's tables").map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clustersim::hw::Dtype;

    fn record(kind: &str, pass: &str, q: u64, kv: u64, bytes: u64, t: f64) -> KernelRecord {
        KernelRecord {
            kind: kind.into(),
            pass: pass.into(),
            op: None,
            batch: 2,
            heads: 16,
            q_len: q,
            kv_len: kv,
            head_dim: 128,
            causal: true,
            dtype: Dtype::Bf16,
            bytes,
            median_s: t,
            calls: None,
        }
    }

    #[test]
    fn attention_records_group_by_pass_and_keep_their_points() {
        let recs = [
            record("attention", "forward", 1024, 1024, 0, 1e-4),
            record("attention", "backward", 1024, 1024, 0, 3e-4),
            record("attention", "forward", 4096, 4096, 0, 1e-3),
            record("elementwise", "forward", 0, 0, 1 << 20, 1e-5),
        ];
        let tables = attention(&recs).unwrap();
        assert_eq!(tables.len(), 2);
        assert_eq!(tables[0].pass, Pass::Forward);
        assert_eq!(tables[0].q_len, vec![1024, 4096]);
        assert_eq!(tables[0].batch_heads, vec![32, 32]);
        assert_eq!(tables[1].time_s, vec![3e-4]);
    }

    #[test]
    fn elementwise_records_make_one_table_per_kind_at_the_median_bandwidth() {
        let mb = 1u64 << 20;
        let ew = |op: &str, pass: &str, bytes: u64, bw: f64| KernelRecord {
            op: Some(op.into()),
            ..record("elementwise", pass, 0, 0, bytes, bytes as f64 / bw)
        };
        let recs = [
            // Two forward norm records near 1 MiB at 100 and 200 GB/s: the median is 150 GB/s.
            ew("layernorm", "forward", mb, 100e9),
            ew("rmsnorm", "forward", mb, 200e9),
            ew("layernorm", "backward", mb, 400e9),
            ew("rmsnorm", "forward", 64 * mb, 3e12),
            ew("add", "forward", mb, 1e12),
        ];
        let tables = elementwise(&recs).unwrap();
        let kinds: Vec<(ElementwiseOp, Pass)> = tables.iter().map(|t| (t.op, t.pass)).collect();
        assert_eq!(
            kinds,
            [
                (ElementwiseOp::Norm, Pass::Forward),
                (ElementwiseOp::Norm, Pass::Backward),
                (ElementwiseOp::Add, Pass::Forward)
            ]
        );
        let norm = &tables[0];
        assert_eq!(norm.bytes, vec![mb, 64 * mb]);
        assert!((norm.time_s[0] / (mb as f64 / 150e9) - 1.0).abs() < 1e-3);
        assert!((norm.time_s[1] / (64.0 * mb as f64 / 3e12) - 1.0).abs() < 1e-3);
        assert!((tables[1].time_s[0] / (mb as f64 / 400e9) - 1.0).abs() < 1e-3);
        assert!(elementwise(&recs[..0]).unwrap().is_empty());
        let err = elementwise(&[ew("softmax", "forward", mb, 1e12)]).unwrap_err();
        assert!(err.contains("softmax"), "{err}");
    }

    #[test]
    fn rounding_keeps_four_digits() {
        assert_eq!(round_sig(1.234567e-5, 4), 1.235e-5);
        assert_eq!(round_sig(0.5, 4), 0.5);
    }
}
