//! Training cases: the scenario a case becomes, with every choice where the source is silent, run
//! through the normal pipeline (recomputation raised where an unstated choice does not fit), and
//! the metric read in the case's convention.

use super::cluster::{inter_node, intra_node};
use super::framework::Framework;
use super::prose::{find_gpu, not_stated, number, power_limit_in, stated_attention, text, whole};
use super::{Case, GIB, Refusal, Row, RowFn, Status, TrainingMetric, quote, with_report_notes};
use crate::scenario::Scenario;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

/// A case set up as a scenario.
pub(super) struct Built {
    pub(super) toml: String,
    pub(super) assumptions: Vec<String>,
    gpus: u32,
    recompute: &'static str,
    /// Whether the source states the recomputation (else it may be raised to make the run fit).
    recompute_stated: bool,
}

/// The scenario TOML of a training case (or a per-layer micro-benchmark), with every choice made
/// where the source is silent.
fn build_training(c: &Case, one_micro_batch: bool) -> Result<Built, Refusal> {
    let mut a: Vec<String> = Vec::new();
    let hw = |k: &str| c.get("hardware", k);
    let md = |k: &str| c.get("model", k);
    let par = |k: &str| c.get("parallel", k);
    let framework = Framework::of(
        text(c.raw.get("source")).unwrap_or(""),
        text(par("zero")).unwrap_or(""),
    );

    // Cluster.
    let gpu_name = text(hw("gpu")).ok_or_else(|| Refusal::failed("hardware.gpu is missing", &a))?;
    let (gpu, note) = find_gpu(gpu_name).map_err(|e| Refusal::failed(e, &a))?;
    a.extend(note);
    let count =
        whole(hw("count")).ok_or_else(|| Refusal::failed("hardware.count is missing", &a))?;
    let gpus_per_node = match whole(hw("gpus_per_node")) {
        Some(n) => n,
        None => {
            let n = count.min(8);
            a.push(format!("{n} GPUs per node (not stated)"));
            n
        }
    };
    if gpus_per_node == 0 || !count.is_multiple_of(gpus_per_node) {
        return Err(Refusal::failed(
            format!("{count} GPUs do not fill nodes of {gpus_per_node}"),
            &a,
        ));
    }
    let nodes = count / gpus_per_node;
    if let Some(stated) = whole(hw("nodes"))
        && stated != nodes
    {
        return Err(Refusal::failed(
            format!(
                "hardware.nodes = {stated}, but {count} GPUs at {gpus_per_node} a node make {nodes}"
            ),
            &a,
        ));
    }
    let mut cluster = format!(
        "[cluster]\ngpu = {}\nnodes = {nodes}\ngpus_per_node = {gpus_per_node}\n",
        quote(gpu.name)
    );
    if let Some(watts) = power_limit_in(gpu_name) {
        let _ = writeln!(cluster, "power_limit = \"{watts} W\"");
        a.push(format!(
            "power limit {watts} W, as the source states for its GPU (clocks fall to fit it)"
        ));
    }
    let intra = intra_node(text(hw("intra_node")), gpu, &mut a);
    if !intra.is_empty() {
        let _ = write!(cluster, "\n[cluster.intra_node]\n{intra}");
    }
    if nodes > 1 {
        let inter = inter_node(text(hw("inter_node")), gpu, gpus_per_node, &mut a)
            .map_err(|e| Refusal::failed(e, &a))?;
        let _ = write!(cluster, "\n[cluster.inter_node]\n{inter}");
    }

    // Model.
    let mut model = String::from("[model]\n");
    for key in ["layers", "hidden", "heads", "seq_len"] {
        let v = whole(md(key))
            .ok_or_else(|| Refusal::failed(format!("model.{key} is not stated as a number"), &a))?;
        let _ = writeln!(model, "{key} = {v}");
    }
    let hidden = whole(md("hidden")).unwrap_or(0);
    if let Some(kv) = whole(md("kv_heads")) {
        let _ = writeln!(model, "kv_heads = {kv}");
    }
    match (whole(md("ffn")), number(md("ffn_expansion"))) {
        (Some(f), _) => {
            let _ = writeln!(model, "ffn = {f}");
        }
        (None, Some(x)) => {
            let _ = writeln!(model, "ffn = {}", (x * hidden as f64).round() as u64);
        }
        (None, None) => a.push("ffn = 4 x hidden (not stated; GPT's standard MLP)".into()),
    }
    match whole(md("vocab")) {
        Some(v) => {
            let _ = writeln!(model, "vocab = {v}");
        }
        None => {
            let _ = writeln!(model, "vocab = 51200");
            a.push("vocab = 51200 (not stated; Megatron-LM's padded GPT-2 vocabulary)".into());
        }
    }
    let arch = text(md("arch")).unwrap_or("").to_lowercase();
    let activation = text(md("activation")).unwrap_or("").to_lowercase();
    if activation.contains("swiglu") || activation.contains("geglu") {
        model.push_str("gated = true\n");
    } else if arch.contains("llama") {
        model.push_str("gated = true\n");
        a.push("gated (SwiGLU) MLP: the Llama architecture's (activation not stated)".into());
    }
    let attention = text(md("attn")).unwrap_or("");
    let named = stated_attention(attention);
    if let Some((kernel, why)) = named.filter(|(k, _)| k.reference(gpu).is_some()) {
        let _ = writeln!(model, "attention_kernel = \"{}\"", kernel.name());
        a.push(format!(
            "{} for the stated attention \"{}\" ({why})",
            kernel.name(),
            text(md("attn")).unwrap_or("")
        ));
    } else if let Some((f, (kernel, why))) = framework
        .filter(|_| attention.is_empty())
        .and_then(|f| Some((f, f.attention_kernel()?)))
    {
        let _ = writeln!(model, "attention_kernel = \"{kernel}\"");
        a.push(format!(
            "{kernel} attention (not stated; {}'s: {why})",
            f.name()
        ));
    }
    if arch.contains("llama") {
        model.push_str("tied_embeddings = false\n");
        a.push("untied input and output embeddings: the Llama architecture's".into());
    }
    let precision = text(par("precision")).unwrap_or("").to_lowercase();
    let dtype = if precision.contains("fp8") || precision.contains("float8") {
        a.push(format!(
            "precision \"{}\" modelled as dtype = fp8 (fp8 GEMMs, the rest in bf16)",
            text(par("precision")).unwrap_or("")
        ));
        Some("fp8")
    } else if precision.contains("bf16") {
        Some("bf16")
    } else if precision.contains("fp16") {
        Some("fp16")
    } else if precision.contains("16-bit") {
        a.push("16-bit format not named: fp16 (the same datasheet peak as bf16)".into());
        Some("fp16")
    } else {
        None
    };
    if let Some(d) = dtype {
        let _ = writeln!(model, "dtype = \"{d}\"");
    }
    if let Some(f) = framework.filter(|f| f.runs_eager(&precision)) {
        model.push_str("elementwise = \"eager\"\n");
        a.push(format!(
            "elementwise operations eager, a kernel per operation (not stated; {}'s model code \
             without torch.compile, its default)",
            f.name()
        ));
    }

    // Parallelism.
    let mut p = String::from("[parallel]\n");
    let fsdp = par("FSDP");
    let degree = |key: &str, a: &mut Vec<String>| match whole(par(key)) {
        Some(n) => n,
        None => {
            a.push(format!("{key} = 1 (not stated)"));
            1
        }
    };
    let tp = degree("TP", &mut a);
    let pp = degree("PP", &mut a);
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
    let (micro_batch, global_batch) = if one_micro_batch {
        let mb = whole(par("micro_batch"))
            .ok_or_else(|| Refusal::failed("parallel.micro_batch is not stated as a number", &a))?;
        a.push(format!(
            "one micro-batch per step (global batch {} = micro_batch x dp), so that one layer's \
             passes are read from a single forward and backward",
            mb * dp
        ));
        (mb, Some(mb * dp))
    } else {
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
    };
    let _ = writeln!(p, "micro_batch = {micro_batch}");
    if let Some(g) = global_batch {
        let _ = writeln!(p, "global_batch = {g}");
    }
    // Pipeline schedule.
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
    // Activation recomputation.
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
                    &a,
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
    let _ = writeln!(p, "recompute = \"{recompute}\"");
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
    // ZeRO / FSDP.
    let zero_text = text(par("zero")).unwrap_or("").to_lowercase();
    let zero = if zero_text.contains("zero-3")
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
    };
    if let Some(z) = zero {
        let _ = writeln!(p, "zero = {z}");
    }
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
    if let Some(f) = framework.filter(|f| tp > 1 && f.tp_comm_overlap(&precision)) {
        p.push_str("tp_comm_overlap = true\n");
        a.push(format!(
            "tensor-parallel collectives overlapped with their GEMMs ({}'s AsyncTP, as stated)",
            f.name()
        ));
    }
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
    if let Some(f) = framework.filter(|f| f.half_precision_gradients()) {
        let d = dtype.unwrap_or("bf16");
        let _ = writeln!(p, "grad_dtype = \"{d}\"");
        a.push(format!(
            "gradients reduced in {d} (not stated; {}'s 16-bit engine reduces them in the \
             model's format)",
            f.name()
        ));
    }

    let toml = format!(
        "# {}: {}\nname = {}\nkind = \"training\"\n\n{cluster}\n{model}\n{p}\n[sim]\nnetwork = \"flow\"\n",
        c.id,
        c.raw.get("table").and_then(Value::as_str).unwrap_or(""),
        quote(&c.id),
    );
    Ok(Built {
        toml,
        assumptions: a,
        gpus: count,
        recompute,
        recompute_stated,
    })
}

/// Whether a scenario error says the simulator lacks a feature (rather than a bad set-up).
fn lacks_feature(message: &str) -> bool {
    message.contains("not modelled by this version")
}

/// Parses and runs a built scenario.
fn run_built(
    c: &Case,
    file_name: &str,
    built: &Built,
) -> Result<crate::RunOutput, (Status, Vec<String>)> {
    let path = format!("{file_name}#{}", c.id);
    let outcome =
        Scenario::parse(Path::new(&path), built.toml.clone(), &[]).and_then(|s| crate::run(&s));
    outcome.map_err(|e| {
        let mut message = e.message.clone();
        if let Some(help) = &e.help
            && !lacks_feature(&message)
        {
            let _ = write!(message, " ({help})");
        }
        let status = if lacks_feature(&e.message) {
            Status::NotExpressible(e.message.clone())
        } else {
            Status::Failed(message)
        };
        (status, built.assumptions.clone())
    })
}

/// Builds the case's training scenario and runs it; a refusal or a failed run becomes the row
/// that reports it (with the scenario text when there is one).
pub(super) fn build_and_run(
    c: &Case,
    file_name: &str,
    one_micro_batch: bool,
    row: &RowFn,
) -> Result<(Built, crate::RunOutput), Box<Row>> {
    let built = build_training(c, one_micro_batch)
        .map_err(|r| Box::new(row(r.status, None, r.assumptions)))?;
    match run_built(c, file_name, &built) {
        Ok(output) => Ok((built, output)),
        Err((status, assumptions)) => {
            let mut r = row(status, None, assumptions);
            r.scenario = Some(built.toml);
            Err(Box::new(r))
        }
    }
}

/// When the source does not state the recomputation and the run does not fit without it, the run
/// that was measured must have recomputed: try selective, then full recomputation, and say so.
/// Where neither fits, the measured run recomputed at least as much as the memory model allows
/// for, so full recomputation is compared (and the row says it does not fit).
fn fit_by_recomputation(
    c: &Case,
    file_name: &str,
    built: Built,
    output: crate::RunOutput,
) -> (Built, crate::RunOutput) {
    if built.recompute_stated || output.report["memory"]["fits"] != false {
        return (built, output);
    }
    let peak_gib = |o: &crate::RunOutput| {
        o.report["memory"]["peak_bytes_per_gpu"]
            .as_f64()
            .unwrap_or(0.0)
            / GIB
    };
    for level in ["selective", "full"] {
        let from = built.recompute;
        let toml = built.toml.replace(
            &format!("recompute = \"{from}\""),
            &format!("recompute = \"{level}\""),
        );
        let mut candidate = Built {
            toml,
            assumptions: built.assumptions.clone(),
            gpus: built.gpus,
            recompute: level,
            recompute_stated: false,
        };
        candidate.assumptions.push(format!(
            "recomputation raised from {from} to {level}: not stated, and {from} does not fit \
             ({:.0} GiB a GPU), so the measured run must have recomputed",
            peak_gib(&output)
        ));
        match run_built(c, file_name, &candidate) {
            Ok(o) if o.report["memory"]["fits"] != false => return (candidate, o),
            // Selective still short: try full from the stated start, not from selective.
            Ok(_) if level == "selective" => {}
            Ok(o) => {
                candidate.assumptions.push(format!(
                    "full recomputation does not fit either ({:.0} GiB a GPU); compared with it, \
                     the most recomputation there is",
                    peak_gib(&o)
                ));
                return (candidate, o);
            }
            Err(_) => break,
        }
    }
    (built, output)
}

pub(super) fn training_rows(
    c: &Case,
    file_name: &str,
    metric: TrainingMetric,
    row: &RowFn,
) -> Vec<Row> {
    let (built, output) = match build_and_run(c, file_name, false, row) {
        Ok(run) => run,
        Err(r) => return vec![*r],
    };
    let (built, output) = fit_by_recomputation(c, file_name, built, output);
    let report = &output.report;
    let f = |key: &str| report[key].as_f64();
    let mut assumptions = built.assumptions.clone();
    let predicted = match metric {
        TrainingMetric::HardwareTflops => {
            assumptions.push(
                "metric read as hardware_tflops_per_gpu (the stated convention counts the \
                 recomputed forward)"
                    .into(),
            );
            f("hardware_tflops_per_gpu")
        }
        TrainingMetric::Tflops if built.recompute == "full" => {
            assumptions.push(
                "metric read as hardware_tflops_per_gpu: recomputation is on and the source \
                 counts FLOPs by Megatron-LM's Eq. 3, which includes the recomputed forward"
                    .into(),
            );
            f("hardware_tflops_per_gpu")
        }
        TrainingMetric::Tflops => {
            assumptions.push(
                "metric read as tflops_per_gpu (no recomputed forward to count: model and \
                 hardware FLOPs are equal)"
                    .into(),
            );
            f("tflops_per_gpu")
        }
        TrainingMetric::MfuPercent => f("mfu").map(|m| 100.0 * m),
        TrainingMetric::StepTime => f("iteration_time_s"),
        TrainingMetric::TokensPerGpu => f("tokens_per_s").map(|t| t / built.gpus as f64),
    };
    let assumptions = with_report_notes(assumptions, report);
    let fits = report["memory"]["fits"].as_bool();
    let mut rows = vec![row(Status::Compared, predicted, assumptions.clone())];
    rows[0].scenario = Some(built.toml.clone());
    rows[0].fits = fits;
    // A second, convention-free figure of the same row: tokens per second per GPU.
    if metric == TrainingMetric::MfuPercent
        && let Some(measured) = number(c.get("extra_metrics", "tokens_per_s_per_gpu"))
    {
        let mut r = row(
            Status::Compared,
            f("tokens_per_s").map(|t| t / built.gpus as f64),
            assumptions,
        );
        r.metric = "tokens/s per GPU (extra_metrics.tokens_per_s_per_gpu)".into();
        r.short = "tokens/s/GPU".into();
        r.unit = "tokens/s/GPU".into();
        r.measured = measured;
        r.primary = false;
        r.fits = fits;
        rows.push(r);
    }
    rows
}
