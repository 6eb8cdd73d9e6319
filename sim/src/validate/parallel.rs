//! The `[parallel]` table of a training case: degrees, batch, pipeline schedule, recomputation,
//! sequence parallelism and sharding as the source states them, or its framework's defaults.

use super::prose::{not_stated, number, text, whole};
use super::{Case, Refusal};
use crate::workload::training::framework::Framework;
use serde_json::Value;
use std::fmt::Write as _;

/// The `[parallel]` table of a training case, the recomputation it runs and whether the source
/// states that recomputation.
pub(super) fn parallel_table(
    c: &Case,
    framework: Option<Framework>,
    count: u32,
    one_micro_batch: bool,
    dtype: Option<&'static str>,
    precision: &str,
    a: &mut Vec<String>,
) -> Result<(String, &'static str, bool), Refusal> {
    let mut p = String::from("[parallel]\n");
    let (tp, pp, dp) = degrees(c, count, &mut p, a);
    let cp = whole(c.get("parallel", "CP")).unwrap_or(1);
    if let Some((algorithm, why)) = framework
        .and_then(|f| f.context_algorithm())
        .filter(|_| cp > 1)
    {
        let _ = writeln!(p, "cp_algorithm = \"{}\"", algorithm.name());
        a.push(why);
    }
    let (micro_batch, global_batch) = if one_micro_batch {
        one_micro_batch_per_step(c, dp, a)?
    } else {
        stated_batch(c, framework, pp, dp, a)
    };
    let _ = writeln!(p, "micro_batch = {micro_batch}");
    if let Some(g) = global_batch {
        let _ = writeln!(p, "global_batch = {g}");
    }
    schedule(c, pp, &mut p, a);
    let (mut recompute, recompute_stated) = recompute(c, framework, a)?;
    if let Some(f) =
        framework.filter(|f| recompute == "selective" && f.selective_checkpoints_blocks())
    {
        recompute = match checkpointed_blocks(c, f, a) {
            Some(0) => "none",
            Some(n) => {
                let _ = writeln!(p, "recompute_layers = {n}");
                "full"
            }
            None => "full",
        };
    }
    let _ = writeln!(p, "recompute = \"{recompute}\"");
    let sequence_parallel = sequence_parallel(c, framework, tp, &mut p, a);
    let zero = zero(c, framework, pp, a);
    if let Some(z) = zero {
        let _ = writeln!(p, "zero = {z}");
    }
    tp_overlap(framework, tp, sequence_parallel, precision, &mut p, a);
    param_and_grad_switches(framework, zero, dtype, &mut p, a);
    Ok((p, recompute, recompute_stated))
}

/// The tensor, pipeline and data-parallel degrees (with context and expert parallelism where
/// stated), written to the table.
fn degrees(c: &Case, count: u32, p: &mut String, a: &mut Vec<String>) -> (u32, u32, u32) {
    let par = |k: &str| c.get("parallel", k);
    let fsdp = par("FSDP");
    let degree = |key: &str, a: &mut Vec<String>| match whole(par(key)) {
        Some(n) => n,
        None => {
            a.push(format!("{key} = 1 (not stated)"));
            1
        }
    };
    let tp = degree("TP", a);
    let pp = degree("PP", a);
    let _ = writeln!(p, "tp = {tp}\npp = {pp}");
    match whole(par("DP")).or(whole(fsdp)) {
        Some(dp) => {
            let _ = writeln!(p, "dp = {dp}");
        }
        None => a.push("dp derived: GPUs / (tp x pp) (not stated)".into()),
    }
    for key in ["CP", "EP"] {
        if let Some(n) = whole(par(key)) {
            let _ = writeln!(p, "{} = {n}", key.to_lowercase());
        }
    }
    let dp = whole(par("DP"))
        .or(whole(fsdp))
        .unwrap_or(count / (tp * pp).max(1));
    (tp, pp, dp)
}

/// A per-layer micro-benchmark's batch: one micro-batch a replica.
fn one_micro_batch_per_step(
    c: &Case,
    dp: u32,
    a: &mut Vec<String>,
) -> Result<(u32, Option<u32>), Refusal> {
    let par = |k: &str| c.get("parallel", k);
    let mb = whole(par("micro_batch"))
        .ok_or_else(|| Refusal::failed("parallel.micro_batch is not stated as a number", a))?;
    a.push(format!(
        "one micro-batch per step (global batch {} = micro_batch x dp), so that one layer's \
         passes are read from a single forward and backward",
        mb * dp
    ));
    Ok((mb, Some(mb * dp)))
}

/// The micro-batch and global batch a training case states, or the defaults where it is silent.
fn stated_batch(
    c: &Case,
    framework: Option<Framework>,
    pp: u32,
    dp: u32,
    a: &mut Vec<String>,
) -> (u32, Option<u32>) {
    let par = |k: &str| c.get("parallel", k);
    // The framework's split of a local batch over the pipeline, where it has one that divides.
    let pipeline_split = |local: u32| {
        framework
            .and_then(|f| Some((f, f.pipeline_micro_batches(pp)?)))
            .filter(|(_, n)| local.is_multiple_of(*n))
    };
    let mb = match (whole(par("micro_batch")), whole(par("local_batch"))) {
        (Some(mb), _) => mb,
        (None, Some(local)) if pp == 1 => {
            a.push(format!(
                "micro_batch = local_batch = {local} (no gradient accumulation stated)"
            ));
            local
        }
        (None, Some(local)) if let Some((f, n)) = pipeline_split(local) => {
            a.push(format!(
                "micro_batch = local_batch / {n} = {} (not stated; {}'s default: as many \
                 micro-batches as pipeline stages)",
                local / n,
                f.name()
            ));
            local / n
        }
        _ => {
            a.push("micro_batch = 1 (not stated)".into());
            1
        }
    };
    let gb = whole(par("global_batch")).or(whole(par("global_batch_seqs")));
    if gb.is_none() {
        a.push("global batch: one micro-batch per replica (not stated)".into());
    }
    if let (Some(acc), Some(g)) = (whole(par("grad_accum")), gb)
        && acc * mb * dp != g
    {
        a.push(format!(
            "stated grad_accum = {acc} differs from global_batch / (micro_batch x dp) = {g} / \
             ({mb} x {dp}); the global batch is kept"
        ));
    }
    (mb, gb)
}

/// The pipeline schedule, written to the table.
fn schedule(c: &Case, pp: u32, p: &mut String, a: &mut Vec<String>) {
    let par = |k: &str| c.get("parallel", k);
    let schedule = text(par("schedule")).unwrap_or("").to_lowercase();
    let vp = whole(par("VP"));
    if pp > 1 {
        if schedule.contains("interleaved") || vp.is_some_and(|v| v > 1) {
            let v = match vp {
                Some(v) => v,
                None => {
                    a.push(
                        "virtual_stages = 2 (interleaved schedule without a stated number of \
                         model chunks: the fewest it allows)"
                            .into(),
                    );
                    2
                }
            };
            if schedule.is_empty() {
                a.push(format!(
                    "interleaved 1F1B schedule (not stated; VP = {v} implies it)"
                ));
            }
            let _ = writeln!(p, "schedule = \"interleaved-1f1b\"\nvirtual_stages = {v}");
        } else if schedule.contains("1f1b") {
            p.push_str("schedule = \"1f1b\"\n");
        } else if schedule.contains("gpipe") {
            p.push_str("schedule = \"gpipe\"\n");
        } else {
            p.push_str("schedule = \"1f1b\"\n");
            a.push("1F1B pipeline schedule (not stated)".into());
        }
    } else if !schedule.is_empty() {
        a.push(format!(
            "schedule \"{}\" has no effect with PP = 1",
            text(par("schedule")).unwrap_or("")
        ));
    }
}

/// The activation recomputation the case states (or its variant names), and whether it is
/// stated.
fn recompute(
    c: &Case,
    framework: Option<Framework>,
    a: &mut Vec<String>,
) -> Result<(&'static str, bool), Refusal> {
    let par = |k: &str| c.get("parallel", k);
    let variant = text(par("variant")).unwrap_or("").to_lowercase();
    let recompute_field = par("recompute")
        .or(par("AC"))
        .or(par("activation_checkpointing"));
    // "Selective" as the framework means it.
    let selective = framework.map_or("selective", |f| f.selective_recompute());
    let recompute = match recompute_field {
        Some(Value::Bool(true)) => {
            a.push(
                "activation_checkpointing = true read as full recomputation (whole blocks \
                 checkpointed)"
                    .into(),
            );
            "full"
        }
        Some(Value::Bool(false)) => "none",
        Some(Value::String(s)) if !not_stated(recompute_field) => {
            let s = s.to_lowercase();
            if s.contains("full") {
                "full"
            } else if s.contains("selective") {
                selective
            } else if s.contains("none") || s.starts_with("no") {
                "none"
            } else {
                return Err(Refusal::failed(
                    format!("no reading of the recomputation \"{s}\""),
                    a,
                ));
            }
        }
        _ if !variant.is_empty() => {
            if variant.contains("full") {
                "full"
            } else if variant.contains("selective") {
                selective
            } else {
                "none"
            }
        }
        _ => {
            a.push("no activation recomputation (not stated)".into());
            "none"
        }
    };
    if let Some(f) = framework.filter(|_| recompute == selective && selective != "selective") {
        a.push(format!(
            "selective activation checkpointing read as recompute = \"{selective}\" ({}'s \
             selective policy)",
            f.name()
        ));
    }
    let recompute_stated =
        recompute_field.is_some_and(|f| !not_stated(Some(f))) || !variant.is_empty();
    Ok((recompute, recompute_stated))
}

/// How many blocks a framework whose "selective" checkpointing takes a fraction p of the blocks
/// checkpoints (`None`: all, 0: none): p as stated (`parallel.selective_checkpointing`), else as
/// the case's hardware and model FLOP utilisations imply (a recomputed layer adds a third of its
/// model FLOPs: p = 3 (HFU / MFU - 1)), else the framework's default of every block.
fn checkpointed_blocks(c: &Case, f: Framework, a: &mut Vec<String>) -> Option<u32> {
    let layers = whole(c.get("model", "layers"))?;
    let metric = |k: &str| number(c.get("extra_metrics", k));
    let (p, why) = match (
        number(c.get("parallel", "selective_checkpointing")),
        metric("HFU_fraction"),
        metric("MFU_fraction"),
    ) {
        (Some(p), _, _) => (p, "as stated".to_string()),
        (None, Some(hfu), Some(mfu)) if mfu > 0.0 => (
            3.0 * (hfu / mfu - 1.0),
            format!(
                "not stated; the case's HFU {hfu} over MFU {mfu}, a recomputed layer adding a \
                 third of its model FLOPs"
            ),
        ),
        _ => {
            a.push(format!(
                "every block checkpointed (not stated; {}'s selective_checkpointing defaults to 1)",
                f.name()
            ));
            return None;
        }
    };
    let n = (p.clamp(0.0, 1.0) * layers as f64).round() as u32;
    a.push(format!(
        "selective activation checkpointing as {} runs it: whole blocks, {n} of the {layers} \
         (p = {p:.2}, {why})",
        f.name()
    ));
    (n < layers).then_some(n)
}

/// Whether sequence parallelism is on (stated, or the framework's default with tensor
/// parallelism), written to the table.
fn sequence_parallel(
    c: &Case,
    framework: Option<Framework>,
    tp: u32,
    p: &mut String,
    a: &mut Vec<String>,
) -> bool {
    let par = |k: &str| c.get("parallel", k);
    let variant = text(par("variant")).unwrap_or("").to_lowercase();
    let stated_sp = variant.contains("sequence")
        || par("sequence_parallel").and_then(Value::as_bool) == Some(true);
    let sp_unstated = tp > 1 && par("sequence_parallel").is_none() && variant.is_empty();
    let default_sp = framework.filter(|f| sp_unstated && f.sequence_parallel());
    let sequence_parallel = stated_sp || default_sp.is_some();
    if sequence_parallel {
        p.push_str("sequence_parallel = true\n");
    }
    if let Some(f) = default_sp.filter(|_| !stated_sp) {
        a.push(format!(
            "sequence parallelism on (not stated; {}'s default with tensor parallelism)",
            f.name()
        ));
    } else if sp_unstated {
        a.push("no sequence parallelism (not stated)".into());
    }
    sequence_parallel
}

/// The ZeRO stage of the stated sharding (or of FSDP, or the framework's default).
fn zero(c: &Case, framework: Option<Framework>, pp: u32, a: &mut Vec<String>) -> Option<u32> {
    let par = |k: &str| c.get("parallel", k);
    let fsdp = par("FSDP");
    let zero_text = text(par("zero")).unwrap_or("").to_lowercase();
    if zero_text.contains("zero-3")
        || zero_text.contains("zero3")
        || zero_text.contains("full_shard")
        || zero_text.contains("fsdp")
    {
        Some(3)
    } else if zero_text.contains("zero-2") || zero_text.contains("shard_grad_op") {
        Some(2)
    } else if zero_text.contains("zero-1") {
        Some(1)
    } else if let Some(f) =
        framework.filter(|f| fsdp.is_some() && pp > 1 && f.fsdp_keeps_params_with_pp())
    {
        a.push(format!(
            "FSDP with pipeline parallelism read as ZeRO-1 ({}'s: parameters gathered once a \
             step and kept, not resharded after each micro-batch's forward, and gradients \
             reduce-scattered once, after the last micro-batch)",
            f.name()
        ));
        Some(1)
    } else if fsdp.is_some() {
        a.push("FSDP read as ZeRO-3 (FSDP's default FULL_SHARD)".into());
        Some(3)
    } else if let Some(f) = framework.filter(|f| f.distributed_optimizer() && zero_text.is_empty())
    {
        a.push(format!(
            "ZeRO-1: optimizer states sharded over the data-parallel ranks (not stated; {}'s \
             distributed optimizer is its default)",
            f.name()
        ));
        Some(1)
    } else {
        None
    }
}

/// The framework's overlap of tensor-parallel collectives with GEMMs, written to the table.
fn tp_overlap(
    framework: Option<Framework>,
    tp: u32,
    sequence_parallel: bool,
    precision: &str,
    p: &mut String,
    a: &mut Vec<String>,
) {
    if let Some(f) = framework.filter(|f| tp > 1 && f.tp_dgrad_overlap()) {
        p.push_str("tp_dgrad_overlap = true\n");
        a.push(format!(
            "the backward's input-gradient {} of each column-split GEMM beside its \
             weight-gradient GEMM (not stated; {}'s asynchronous tensor-parallel communication)",
            if sequence_parallel {
                "reduce-scatter"
            } else {
                "all-reduce"
            },
            f.name()
        ));
    }
    if let Some(f) = framework.filter(|f| tp > 1 && f.tp_comm_overlap(precision)) {
        p.push_str("tp_comm_overlap = true\n");
        a.push(format!(
            "tensor-parallel collectives overlapped with their GEMMs ({}'s AsyncTP, as stated)",
            f.name()
        ));
    }
}

/// The framework's ZeRO-3 parameter gathering and gradient format, written to the table.
fn param_and_grad_switches(
    framework: Option<Framework>,
    zero: Option<u32>,
    dtype: Option<&'static str>,
    p: &mut String,
    a: &mut Vec<String>,
) {
    if let Some((f, gather)) = framework
        .filter(|_| zero == Some(3))
        .and_then(|f| Some((f, f.param_gather()?)))
    {
        let _ = writeln!(p, "param_gather = \"{gather}\"");
        a.push(format!(
            "ZeRO-3 parameters gathered {gather} (not stated; {}'s: each parameter gathered when \
             its module runs, after the GPU drains, and gradients reduce-scattered per parameter)",
            f.name()
        ));
    }
    let te = Some(crate::workload::training::policy::Fp8Casts::TransformerEngine);
    if let Some(f) = framework.filter(|f| dtype == Some("fp8") && f.fp8_casts() == te) {
        let _ = writeln!(p, "fp8_casts = \"transformer-engine\"");
        a.push(format!(
            "fp8 weights cast once a step and reused by its micro-batches (not stated; {}'s \
             Transformer Engine layers)",
            f.name()
        ));
    }
    if let Some(f) = framework.filter(|f| f.half_precision_gradients()) {
        // fp8 training keeps its weights, and so its gradients, in bf16.
        let d = dtype.filter(|&d| d != "fp8").unwrap_or("bf16");
        let _ = writeln!(p, "grad_dtype = \"{d}\"");
        a.push(format!(
            "gradients reduced in {d} (not stated; {}'s default: the model's 16-bit format)",
            f.name()
        ));
    }
}
