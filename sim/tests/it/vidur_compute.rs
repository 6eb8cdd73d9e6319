//! The roofline cost model against real operator timings: Vidur's A100 and H100 profiles of one
//! transformer layer (`shared/data/vidur-profiles/compute/{a100,h100}/ORG/MODEL/mlp.csv`).
//!
//! Every row (num_tokens, tensor-parallel degree) of every model gives four GEMMs (QKV, attention
//! output, MLP up, MLP down) and up to five elementwise kernels (two norms, activation, residual
//! add, rotary embedding). Each is priced with `ComputeModel` from the operator's shape alone and
//! compared with the measured median time: error = (predicted - measured) / measured.
//!
//! Duplicate rows for the same (num_tokens, TP) key (a few per file, within 1-2% of each other)
//! are merged by taking the median of their medians.
//!
//! The profiles were taken in fp16 (Vidur's `mlp_wrapper.py` casts the model to `torch.float16`);
//! the model prices bf16, whose dense peak is the same on both GPUs.
//!
//! Run with `cargo test -p clustersim --test vidur_compute -- --nocapture` to see the tables;
//! docs/COMPUTE-VALIDATION.md records them.

use crate::common;

use std::collections::BTreeMap;

use clustersim::hw::profile::{self, VIDUR_GEMM_OPS as GEMM_OPS};
use clustersim::hw::{ComputeModel, Dtype, ElementwiseOp, Kernel, gpu};
use common::{VidurTable, median, percentile};

const ELEMENTWISE_OPS: [&str; 5] = [
    "input_layernorm",
    "post_attention_layernorm",
    "mlp_act",
    "add",
    "attn_rope",
];

/// Bytes per element: the profiles ran in fp16.
const ELEM: f64 = 2.0;

/// GEMM operator name to its (m, n, k) on one tensor-parallel shard.
type GemmShapes = BTreeMap<&'static str, (u64, u64, u64)>;

/// One merged row of a profile.
struct Row {
    model: String,
    tokens: u64,
    tp: u64,
    heads: u64,
    kv_heads: u64,
    hidden: u64,
    ffn: u64,
    gated: bool,
    gemm_shapes: GemmShapes,
    /// Operator name to measured median, seconds. Operators the model lacks are absent.
    seconds: BTreeMap<String, f64>,
}

/// Reads one `mlp.csv`, merging duplicate (num_tokens, TP) rows by the median. The GEMMs'
/// (m, n, k) on one tensor-parallel shard (Megatron column/row split) are the library's reading of
/// the table (`hw::profile::vidur_mlp_gemms`, which the shipped profiles are imported with).
fn read_profile(table: &VidurTable) -> Vec<Row> {
    let (path, model) = (&table.path, table.model.as_str());
    let mut gemm_shapes: BTreeMap<(u64, u64), GemmShapes> = BTreeMap::new();
    for g in
        profile::vidur_mlp_gemms(&table.csv).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    {
        gemm_shapes
            .entry((g.tokens, g.tp))
            .or_default()
            .entry(g.operator)
            .or_insert((g.m, g.n, g.k));
    }
    let mut lines = table.csv.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_else(|| panic!("{} is empty", path.display()))
        .split(',')
        .collect();
    let col = |name: &str| header.iter().position(|h| *h == name);
    let need =
        |name: &str| col(name).unwrap_or_else(|| panic!("{}: no column `{name}`", path.display()));
    let (c_tokens, c_tp) = (need("num_tokens"), need("num_tensor_parallel_workers"));
    let (c_heads, c_kv, c_hidden, c_ffn, c_gated) = (
        need("n_head"),
        need("n_kv_head"),
        need("n_embd"),
        need("n_expanded_embd"),
        need("use_gated_mlp"),
    );
    let op_cols: Vec<(&str, usize)> = GEMM_OPS
        .iter()
        .chain(ELEMENTWISE_OPS.iter())
        .filter_map(|op| col(&format!("time_stats.{op}.median")).map(|c| (*op, c)))
        .collect();

    type Key = (u64, u64);
    let mut groups: BTreeMap<Key, Vec<Vec<&str>>> = BTreeMap::new();
    for (i, line) in lines.enumerate() {
        assert!(
            !line.contains('"'),
            "{} line {}: quoted fields are not expected",
            path.display(),
            i + 2
        );
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(
            fields.len(),
            header.len(),
            "{} line {}: {} fields, header has {}",
            path.display(),
            i + 2,
            fields.len(),
            header.len()
        );
        let int = |c: usize| -> u64 {
            fields[c]
                .parse()
                .unwrap_or_else(|e| panic!("{} line {}: {e}", path.display(), i + 2))
        };
        groups
            .entry((int(c_tokens), int(c_tp)))
            .or_default()
            .push(fields);
    }

    groups
        .into_iter()
        .map(|((tokens, tp), rows)| {
            let first = &rows[0];
            let int = |c: usize| -> u64 { first[c].parse().expect("integer shape column") };
            let seconds = op_cols
                .iter()
                .map(|&(op, c)| {
                    let mut ms: Vec<f64> = rows
                        .iter()
                        .map(|r| r[c].parse::<f64>().expect("numeric time"))
                        .collect();
                    (op.to_string(), median(&mut ms) * 1e-3)
                })
                .collect();
            let gated = match first[c_gated] {
                "True" | "true" => true,
                "False" | "false" => false,
                other => panic!("{}: use_gated_mlp = {other}", path.display()),
            };
            Row {
                model: model.to_string(),
                tokens,
                tp,
                heads: int(c_heads),
                kv_heads: int(c_kv),
                hidden: int(c_hidden),
                ffn: int(c_ffn),
                gated,
                gemm_shapes: gemm_shapes.remove(&(tokens, tp)).unwrap_or_else(|| {
                    panic!(
                        "{}: no GEMMs read for {tokens} tokens TP{tp}",
                        path.display()
                    )
                }),
                seconds,
            }
        })
        .collect()
}

/// All rows of all models for one GPU directory (`a100` or `h100`).
fn load_gpu(gpu_dir: &str) -> Vec<Row> {
    let rows: Vec<Row> = common::vidur_tables(gpu_dir)
        .iter()
        .flat_map(read_profile)
        .collect();
    assert!(!rows.is_empty(), "no profiles for {gpu_dir}");
    rows
}

fn div(a: u64, b: u64, what: &str) -> u64 {
    assert!(
        a.is_multiple_of(b),
        "{what}: {a} does not split over TP {b}"
    );
    a / b
}

/// The kernels of an elementwise operator, with bytes derived from the shapes and the code Vidur
/// profiled (`vidur/profiling/mlp/mlp_impl.py` on sarathi layers):
/// - norms read and write tokens x hidden;
/// - SiluAndMul reads tokens x 2 ffn/TP and writes tokens x ffn/TP; GELU reads and writes
///   tokens x ffn/TP;
/// - the residual add reads two and writes one tokens x hidden; a block without a post-attention
///   norm (phi-2's parallel block) adds `attn + mlp + residual`, i.e. two such kernels;
/// - rope rewrites q and k of this shard in place (rotary dim = head dim in Vidur's profiler) and
///   reads one cos/sin row of head_dim values per token.
///
/// Flops are rough per-element counts; they hide under the memory traffic either way.
fn elementwise_kernels(row: &Row, op: &str) -> Vec<Kernel> {
    let (t, e) = (row.tokens as f64, row.hidden as f64);
    let f = div(row.ffn, row.tp, "ffn") as f64;
    let kind = match op {
        "input_layernorm" | "post_attention_layernorm" => ElementwiseOp::Norm,
        "mlp_act" if row.gated => ElementwiseOp::GatedActivation,
        "mlp_act" => ElementwiseOp::Activation,
        "add" => ElementwiseOp::Add,
        _ => ElementwiseOp::Other,
    };
    let mem = |elements: f64, flops: f64| Kernel::Elementwise {
        op: kind,
        backward: false,
        bytes: elements * ELEM,
        flops,
    };
    match op {
        "input_layernorm" | "post_attention_layernorm" => vec![mem(2.0 * t * e, 4.0 * t * e)],
        "mlp_act" if row.gated => vec![mem(3.0 * t * f, 6.0 * t * f)],
        "mlp_act" => vec![mem(2.0 * t * f, 8.0 * t * f)],
        "add" => {
            let kernels = if row.seconds.contains_key("post_attention_layernorm") {
                1
            } else {
                2
            };
            vec![mem(3.0 * t * e, t * e); kernels]
        }
        "attn_rope" => {
            let head_dim = div(row.hidden, row.heads, "head_dim") as f64;
            let q = div(row.heads, row.tp, "heads") as f64;
            let kv = div(row.kv_heads, row.tp, "kv heads") as f64;
            let qk = t * (q + kv) * head_dim;
            vec![mem(2.0 * qk + t * head_dim, 3.0 * qk)]
        }
        _ => unreachable!("{op}"),
    }
}

/// One compared case.
struct Case {
    error: f64,
    what: String,
}

#[derive(Debug, Clone, Copy)]
struct Summary {
    count: usize,
    median_abs: f64,
    p90_abs: f64,
    bias: f64,
    worst: f64,
}

fn summarize(cases: &[&Case]) -> (Summary, String) {
    assert!(!cases.is_empty());
    let mut abs: Vec<f64> = cases.iter().map(|c| c.error.abs()).collect();
    let mut signed: Vec<f64> = cases.iter().map(|c| c.error).collect();
    let median_abs = median(&mut abs);
    let p90_abs = percentile(&abs, 0.9);
    let bias = median(&mut signed);
    let worst = cases
        .iter()
        .max_by(|a, b| a.error.abs().total_cmp(&b.error.abs()))
        .unwrap();
    (
        Summary {
            count: cases.len(),
            median_abs,
            p90_abs,
            bias,
            worst: worst.error,
        },
        worst.what.clone(),
    )
}

fn line(label: &str, s: &Summary, worst_case: &str) -> String {
    format!(
        "| {label:<28} | {:>6} | {:>6.1}% | {:>6.1}% | {:>+7.1}% | {:>+7.1}% | {worst_case}\n",
        s.count,
        100.0 * s.median_abs,
        100.0 * s.p90_abs,
        100.0 * s.bias,
        100.0 * s.worst
    )
}

const HEADER: &str = "| operator                     |  count | med|e|  | p90|e|  |  bias    |  worst   | worst case\n\
                      |------------------------------|--------|---------|---------|----------|----------|-----------\n";

/// A case with what it is grouped by: (operator, token bucket: floor(log2(tokens)) rounded down to
/// even, model, case).
type Tagged<'a> = (&'a str, u32, &'a str, Case);

/// Compares one GPU's profiles for one operator family; prints the table, by operator, by token
/// count and by model; returns the overall summary.
fn compare(
    gpu_dir: &str,
    gpu_name: &str,
    rows: &[Row],
    ops: &[&str],
    price: impl Fn(&ComputeModel, &Row, &str) -> f64,
    family: &str,
) -> Summary {
    let model = ComputeModel::new(gpu::find(gpu_name).expect("GPU in catalog"));
    let mut cases: Vec<Tagged> = Vec::new();
    for row in rows {
        for &op in ops {
            let Some(&measured) = row.seconds.get(op) else {
                continue;
            };
            assert!(measured > 0.0, "{} {op}: non-positive time", row.model);
            let predicted = price(&model, row, op);
            let bucket = row.tokens.ilog2() / 2 * 2;
            cases.push((
                op,
                bucket,
                row.model.as_str(),
                Case {
                    error: (predicted - measured) / measured,
                    what: format!(
                        "{} {op} tokens={} TP{}: {:.1} us predicted, {:.1} us measured",
                        row.model,
                        row.tokens,
                        row.tp,
                        predicted * 1e6,
                        measured * 1e6
                    ),
                },
            ));
        }
    }
    let mut table = format!("\n{family} on {gpu_dir} ({gpu_name}):\n{HEADER}");
    // Adds the line of the cases `keep` selects, if there are any, and returns their summary.
    let mut add = |label: &str, keep: &dyn Fn(&Tagged) -> bool| -> Option<Summary> {
        let refs: Vec<&Case> = cases.iter().filter(|c| keep(c)).map(|c| &c.3).collect();
        if refs.is_empty() {
            return None;
        }
        let (s, w) = summarize(&refs);
        table.push_str(&line(label, &s, &w));
        Some(s)
    };
    for &op in ops {
        add(op, &|c| c.0 == op);
    }
    let overall = add("ALL", &|_| true).expect("no cases compared");
    let mut buckets: Vec<u32> = cases.iter().map(|c| c.1).collect();
    buckets.sort_unstable();
    buckets.dedup();
    for bucket in buckets {
        let label = format!("  tokens {}-{}", 1u64 << bucket, (1u64 << (bucket + 2)) - 1);
        add(&label, &|c| c.1 == bucket);
    }
    let mut models: Vec<&str> = cases.iter().map(|c| c.2).collect();
    models.sort_unstable();
    models.dedup();
    for model_name in models {
        add(&format!("  {model_name}"), &|c| c.2 == model_name);
    }
    println!("{table}");
    overall
}

fn price_gemm(model: &ComputeModel, row: &Row, op: &str) -> f64 {
    let (m, n, k) = row.gemm_shapes[op];
    let kernel = Kernel::Gemm {
        m,
        n,
        k,
        batch: 1,
        dtype: Dtype::Bf16,
    };
    model.cost(&kernel).expect("bf16 GEMM").seconds
}

fn price_elementwise(model: &ComputeModel, row: &Row, op: &str) -> f64 {
    elementwise_kernels(row, op)
        .iter()
        .map(|k| model.cost(k).expect("memory kernel").seconds)
        .sum()
}

const GPUS: [(&str, &str); 2] = [("a100", "A100"), ("h100", "H100")];

/// Bounds the GEMM error may not exceed, per GPU. Measured with the shared constants of
/// `Efficiency::DEFAULT` (docs/COMPUTE-VALIDATION.md): median |error| 4.8% (A100) and 7.3% (H100),
/// p90 13.7% and 20.1%, median signed error -0.6% and -0.7%. The roofline before the overlap
/// exponent and the tensor-core latency were added measured 6.3% / 12.3% median, 22.2% / 36.1%
/// p90 and -5.3% / -11.9% bias, and fails all three bounds on H100 and the bias bound on A100.
const GEMM_MEDIAN_BOUND: f64 = 0.10;
const GEMM_P90_BOUND: f64 = 0.28;
const GEMM_BIAS_BOUND: f64 = 0.05;

#[test]
fn gemm_times_match_vidur_profiles() {
    // Print every table first, then check, so a failure still shows both GPUs.
    let summaries: Vec<(&str, Summary)> = GPUS
        .iter()
        .map(|&(dir, name)| {
            let rows = load_gpu(dir);
            (
                name,
                compare(dir, name, &rows, &GEMM_OPS, price_gemm, "GEMMs"),
            )
        })
        .collect();
    for (name, s) in summaries {
        assert!(
            s.median_abs < GEMM_MEDIAN_BOUND,
            "{name}: GEMM median |error| {:.1}% is above {:.0}% (4.8% A100, 7.3% H100 when the \
             bound was set)",
            100.0 * s.median_abs,
            100.0 * GEMM_MEDIAN_BOUND
        );
        assert!(
            s.p90_abs < GEMM_P90_BOUND,
            "{name}: GEMM p90 |error| {:.1}% is above {:.0}% (13.7% A100, 20.1% H100 when set)",
            100.0 * s.p90_abs,
            100.0 * GEMM_P90_BOUND
        );
        assert!(
            s.bias.abs() < GEMM_BIAS_BOUND,
            "{name}: GEMM median signed error {:+.1}% is outside +-{:.0}% (-0.6% A100, -0.7% H100 \
             when set)",
            100.0 * s.bias,
            100.0 * GEMM_BIAS_BOUND
        );
    }
}

/// Elementwise kernels are reported, and only loosely bounded: the shared `memory_fraction`
/// (0.85 of datasheet bandwidth) is far above what these fp16 norm, activation and rope kernels
/// reach (0.35-0.6), so they are underpredicted by 30-55%; the residual add, whose inputs are
/// partly still in L2, is overpredicted. This bound catches a regression, not a good fit.
const ELEMENTWISE_MEDIAN_BOUND: f64 = 0.55;

#[test]
fn elementwise_times_against_vidur_profiles() {
    let summaries: Vec<(&str, Summary)> = GPUS
        .iter()
        .map(|&(dir, name)| {
            let rows = load_gpu(dir);
            let s = compare(
                dir,
                name,
                &rows,
                &ELEMENTWISE_OPS,
                price_elementwise,
                "Elementwise kernels",
            );
            (name, s)
        })
        .collect();
    for (name, s) in summaries {
        assert!(
            s.median_abs < ELEMENTWISE_MEDIAN_BOUND,
            "{name}: elementwise median |error| {:.1}% is above {:.0}% (a known-weak area, see \
             docs/COMPUTE-VALIDATION.md)",
            100.0 * s.median_abs,
            100.0 * ELEMENTWISE_MEDIAN_BOUND
        );
    }
}

#[test]
fn profiles_cover_both_gpus_and_all_models() {
    for (dir, _) in GPUS {
        let rows = load_gpu(dir);
        let models: std::collections::BTreeSet<&str> =
            rows.iter().map(|r| r.model.as_str()).collect();
        assert!(models.len() >= 6, "{dir}: only {models:?}");
        assert!(rows.iter().any(|r| r.tokens == 1) && rows.iter().any(|r| r.tokens >= 4096));
        assert!(rows.iter().any(|r| r.tp == 8));
    }
}
