//! Validation against published measurements: every case of a `published.json` (see
//! shared/validation/README.md) set up as the source states it, run, and its predicted value read
//! in the case's own convention.
//!
//! Each training case becomes the TOML text of a scenario, parsed with [`Scenario::parse`] and run
//! with [`crate::run`], so every check of the normal pipeline applies and a feature the simulator
//! lacks is refused with its own message (the row is then "not expressible", and becomes
//! expressible when the feature lands). Collective cases are priced with
//! [`crate::collective::cost`] on an 8-GPU board, as nccl-tests runs them. Nothing is tuned per
//! case: where a source leaves a field unstated, one documented default applies to every case, and
//! the row lists it in `assumptions`, followed by the simulator's own.
//!
//! Conventions (the predicted value is read so that it means what the source measured):
//! - "TFLOP/s per GPU" counting the recomputed forward (Megatron-LM's Eq. 3) is
//!   `hardware_tflops_per_gpu`; a plain "achieved TFLOP/s per GPU" is too when recomputation is
//!   on (Megatron-LM's paper counts every figure by Eq. 3), else `tflops_per_gpu` (they are equal
//!   then).
//! - "MFU (incl. attention FLOPs)" is `mfu` x 100: the simulator counts non-causal attention
//!   (4 s^2 h per layer and sequence, forward), as llm-foundry's MFU does.
//! - "training step time" is `iteration_time_s`; "tokens/s/GPU" is `tokens_per_s` over the GPUs.
//! - "forward+backward time of ONE transformer layer" is read from the simulated timeline of one
//!   micro-batch: the time from the start of a middle layer's forward to the start of the next
//!   layer's forward, plus the same for its backward (with full recomputation the recomputed
//!   forward runs at the start of the layer's backward, as in Korthikanti et al.'s Table 4).
//! - NCCL's "busBW" is the bus bandwidth of the priced collective (nccl-tests' definition).

mod case;
mod collective;
mod framework;
mod row;
mod summary;
mod validation;

use crate::hw::attention_kernel::AttentionKernel;
use crate::hw::gpu::{self, GpuSpec, IntraLinkKind};
use crate::scenario::Scenario;
use framework::Framework;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

pub use case::{Case, LoadError, load, parse};
pub use row::{Row, Status};
pub use summary::{Stats, Summary, summarize};
pub use validation::Validation;

/// Where `clustersim validate` looks when given no file: the shared data beside the repository,
/// relative to the current directory (the repository root).
pub const DEFAULT_FILE: &str = "../shared/validation/published.json";

const GIB: f64 = (1u64 << 30) as f64;

/// Runs every case. `file_name` names the scenarios built from the cases ("published.json#id").
pub fn validate(cases: &[Case], file_name: &str) -> Validation {
    let started = Instant::now();
    let rows: Vec<Row> = cases
        .iter()
        .flat_map(|c| validate_case(c, file_name))
        .collect();
    Validation {
        summary: summarize(&rows),
        rows,
        wall_s: started.elapsed().as_secs_f64(),
    }
}

// ---------------------------------------------------------------------------------------------
// Classification

/// What a case measures, read from its fields.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum CaseKind {
    Training(TrainingMetric),
    LayerTime,
    Collective,
    Serving,
    Diffusion,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum TrainingMetric {
    /// TFLOP/s per GPU that count the recomputed forward (Megatron-LM Eq. 3).
    HardwareTflops,
    /// "achieved TFLOP/s per GPU" without a stated convention.
    Tflops,
    MfuPercent,
    StepTime,
    TokensPerGpu,
}

fn classify(c: &Case) -> Result<CaseKind, String> {
    let metric = c.metric.to_lowercase();
    let unit = c.unit.to_lowercase();
    let has = |section: &str, key: &str| c.get(section, key).is_some();
    if has("parallel", "collective") || metric.contains("busbw") {
        return Ok(CaseKind::Collective);
    }
    if metric.contains("one transformer layer") {
        return Ok(CaseKind::LayerTime);
    }
    if has("model", "steps")
        || has("model", "frames")
        || has("model", "resolution")
        || metric.contains("generation latency")
    {
        return Ok(CaseKind::Diffusion);
    }
    if has("parallel", "engine") || metric.contains("output throughput") || unit.contains("output")
    {
        return Ok(CaseKind::Serving);
    }
    let training = if metric.contains("mfu") {
        TrainingMetric::MfuPercent
    } else if metric.contains("tflop/s") {
        let notes = c.notes().to_lowercase();
        if metric.contains("incl. recompute") || notes.contains("counts the recompute") {
            TrainingMetric::HardwareTflops
        } else {
            TrainingMetric::Tflops
        }
    } else if metric.contains("step time") {
        TrainingMetric::StepTime
    } else if metric.contains("tokens/s/gpu") || unit == "tokens/s/gpu" {
        TrainingMetric::TokensPerGpu
    } else {
        return Err(format!(
            "no reading of the metric \"{}\" ({}) is defined",
            c.metric, c.unit
        ));
    };
    Ok(CaseKind::Training(training))
}

fn short_name(kind: &Result<CaseKind, String>, c: &Case) -> String {
    match kind {
        Ok(CaseKind::Training(TrainingMetric::HardwareTflops)) => "HW TFLOP/s/GPU".into(),
        Ok(CaseKind::Training(TrainingMetric::Tflops)) => "TFLOP/s/GPU".into(),
        Ok(CaseKind::Training(TrainingMetric::MfuPercent)) => "MFU %".into(),
        Ok(CaseKind::Training(TrainingMetric::StepTime)) => "step time s".into(),
        Ok(CaseKind::Training(TrainingMetric::TokensPerGpu)) => "tokens/s/GPU".into(),
        Ok(CaseKind::LayerTime) => "layer fwd+bwd ms".into(),
        Ok(CaseKind::Collective) if c.unit == "us" => "time us".into(),
        Ok(CaseKind::Collective) => "busBW GB/s".into(),
        Ok(CaseKind::Serving) => "output tok/s".into(),
        Ok(CaseKind::Diffusion) if denoise_only(c) => "DiT latency s".into(),
        Ok(CaseKind::Diffusion) => "latency s".into(),
        Err(_) => c.unit.clone(),
    }
}

/// The rows of one case: its headline metric, and comparable figures of `extra_metrics`.
pub fn validate_case(c: &Case, file_name: &str) -> Vec<Row> {
    let started = Instant::now();
    let kind = classify(c);
    let row = |status: Status, predicted: Option<f64>, assumptions: Vec<String>| Row {
        id: c.id.clone(),
        group: c.group(),
        metric: c.metric.clone(),
        short: short_name(&kind, c),
        unit: c.unit.clone(),
        measured: c.value,
        predicted,
        error: None,
        status,
        assumptions,
        wall_s: 0.0,
        primary: true,
        scenario: None,
        fits: None,
    };
    // A panic is a bug in the simulator; it fails this case's row rather than the whole run (the
    // panic message is printed on stderr as usual).
    let rows = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &kind {
        Err(e) => vec![row(Status::Failed(e.clone()), None, Vec::new())],
        Ok(CaseKind::Serving) => vec![serving_row(c, file_name, &row)],
        Ok(CaseKind::Diffusion) => vec![diffusion_row(c, file_name, &row)],
        Ok(CaseKind::Collective) => vec![match collective::collective(c) {
            Ok((busbw, assumptions)) => row(Status::Compared, Some(busbw), assumptions),
            Err(Refusal {
                status,
                assumptions,
            }) => row(status, None, assumptions),
        }],
        Ok(CaseKind::Training(metric)) => training_rows(c, file_name, *metric, &row),
        Ok(CaseKind::LayerTime) => layer_rows(c, file_name, &row),
    }));
    let mut rows = rows.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        vec![row(
            Status::Failed(format!("the simulator panicked: {message}")),
            None,
            Vec::new(),
        )]
    });
    let wall = started.elapsed().as_secs_f64();
    for r in &mut rows {
        r.wall_s = wall;
        if r.status == Status::Compared {
            match r.predicted {
                Some(p) if p.is_finite() && p > 0.0 => {
                    r.error = Some((p - r.measured) / r.measured);
                }
                Some(p) => {
                    r.status = Status::Failed(format!(
                        "the predicted value {p} is not a finite positive number"
                    ));
                    r.predicted = None;
                }
                None => r.status = Status::Failed("no predicted value".into()),
            }
        }
    }
    rows
}

/// The reason a kind of workload is not expressible: the scenario pipeline's own refusal of a
/// minimal scenario of that kind.
struct Refusal {
    status: Status,
    assumptions: Vec<String>,
}

impl Refusal {
    fn failed(message: impl Into<String>, assumptions: &[String]) -> Self {
        Refusal {
            status: Status::Failed(message.into()),
            assumptions: assumptions.to_vec(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reading the sources' prose

/// A number in a field, when the field holds one (prose such as "not stated" is None).
fn number(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
}

fn whole(v: Option<&Value>) -> Option<u32> {
    v.and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
}

fn text(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
}

/// Numbers in prose that stand on their own ("200 Gb/s", not the "3" of "NVLink3"), each with the
/// text that follows it.
fn numbers(text: &str) -> Vec<(f64, &str)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i].is_ascii_digit()
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'.'));
        if !starts {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        if let Ok(v) = text[start..i].parse::<f64>() {
            out.push((v, &text[i..]));
        }
    }
    out
}

/// A power limit in prose, in watts: "H100 SXM (500W power limit)"; None unless the text says
/// it is a limit or a cap (a bare "700 W" is a datasheet TDP).
fn power_limit_in(text: &str) -> Option<f64> {
    let lower = text.to_lowercase();
    if !(lower.contains("power limit") || lower.contains("power cap")) {
        return None;
    }
    numbers(text).into_iter().find_map(|(v, rest)| {
        let rest = rest.trim_start();
        (rest.starts_with('W') && !rest.starts_with("Wh")).then_some(v)
    })
}

/// A bandwidth in prose, in bytes/s: "200 Gb/s", "400Gbps", "900 GB/s".
fn bandwidth_in(text: &str) -> Option<(f64, String)> {
    numbers(text).into_iter().find_map(|(v, rest)| {
        let rest = rest.trim_start();
        [
            ("Gb/s", 1e9 / 8.0),
            ("Gbps", 1e9 / 8.0),
            ("GB/s", 1e9),
            ("GBps", 1e9),
            ("Tb/s", 1e12 / 8.0),
        ]
        .into_iter()
        .find(|(unit, _)| rest.starts_with(unit))
        .map(|(unit, scale)| (v * scale, format!("{v} {unit}")))
    })
}

/// A count written "8x" or "8 x" in prose.
fn count_in(text: &str) -> Option<u32> {
    numbers(text).into_iter().find_map(|(v, rest)| {
        let rest = rest.trim_start();
        let after = rest.strip_prefix('x').or_else(|| rest.strip_prefix('×'))?;
        let word_ends = after.chars().next().is_none_or(|c| !c.is_alphanumeric());
        (word_ends && v.fract() == 0.0 && v >= 1.0).then_some(v as u32)
    })
}

fn not_stated(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.to_lowercase().contains("not stated"),
        _ => false,
    }
}

/// A catalog GPU for a source's name: the name as written, without its parenthesis, or its
/// longest leading words that the catalog knows ("H100 SXM 94GB HBM3" -> "H100 SXM"). A note
/// says how it was read when it was not a catalog name as written.
fn find_gpu(name: &str) -> Result<(&'static GpuSpec, Option<String>), String> {
    if let Ok(g) = gpu::find(name) {
        let note = (g.name != name).then(|| format!("GPU \"{name}\" is the catalog's {}", g.name));
        return Ok((g, note));
    }
    let bare = name.split('(').next().unwrap_or(name).trim();
    let words: Vec<&str> = bare.split_whitespace().collect();
    for n in (1..=words.len()).rev() {
        let candidate = words[..n].join(" ");
        let Ok(g) = gpu::find(&candidate) else {
            continue;
        };
        let mut note = format!(
            "GPU \"{name}\" read as the catalog's {} (from \"{candidate}\")",
            g.name
        );
        // A memory size the source states that the catalog entry does not have.
        let catalog_gb = (g.memory_bytes as f64 / GIB).round();
        for (v, rest) in numbers(bare) {
            if rest.trim_start().starts_with("GB") && (v - catalog_gb).abs() > 0.5 {
                let _ = write!(
                    note,
                    "; the source's GPU has {v} GB, not {catalog_gb} GB, and is not in the \
                     catalog: the {} datasheet figures stand in for it",
                    g.name
                );
            }
        }
        return Ok((g, Some(note)));
    }
    let close = gpu::find(bare).err().unwrap_or_default();
    Err(format!(
        "GPU \"{name}\" is not in the catalog (closest: {})",
        close.join(", ")
    ))
}

/// TOML for a string.
fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

// ---------------------------------------------------------------------------------------------
// Training cases

/// A case set up as a scenario.
struct Built {
    toml: String,
    assumptions: Vec<String>,
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

/// `[cluster.intra_node]` keys for the source's description (empty: the GPU's datasheet).
fn intra_node(stated: Option<&str>, gpu: &GpuSpec, a: &mut Vec<String>) -> String {
    let usual = match gpu.intra_link {
        IntraLinkKind::NvSwitch => "NVSwitch",
        IntraLinkKind::Mesh => "NVLink mesh",
        IntraLinkKind::Pcie => "PCIe",
    };
    let Some(t) = stated else {
        a.push(format!(
            "intra-node link: the {}'s usual {usual} (not stated)",
            gpu.name
        ));
        return String::new();
    };
    let lower = t.to_lowercase();
    if !lower.contains(&usual.to_lowercase()) {
        a.push(format!(
            "intra-node \"{t}\" modelled as the {}'s usual {usual}",
            gpu.name
        ));
    }
    let Some((bw, written)) = bandwidth_in(t) else {
        return String::new();
    };
    let datasheet = gpu.intra_bandwidth;
    let close = |x: f64| (x - datasheet).abs() <= 0.01 * datasheet;
    let per_direction = if lower.contains("bidirectional") || close(bw / 2.0) {
        if !lower.contains("bidirectional") {
            a.push(format!(
                "intra-node {written} read as the bidirectional total ({} GB/s per direction)",
                bw / 2e9
            ));
        }
        bw / 2.0
    } else {
        a.push(format!("intra-node {written} read as per direction"));
        bw
    };
    if close(per_direction) {
        String::new()
    } else {
        format!("bandwidth = \"{} GB/s\"\n", per_direction / 1e9)
    }
}

/// `[cluster.inter_node]` keys for the source's description; the assumed network when it is not
/// stated.
fn inter_node(
    stated: Option<&str>,
    gpu: &GpuSpec,
    gpus_per_node: u32,
    a: &mut Vec<String>,
) -> Result<String, String> {
    let stated = stated.filter(|t| !t.to_lowercase().contains("not stated"));
    let Some(t) = stated else {
        let rate = if gpu.name.starts_with("H100")
            || gpu.name.starts_with("H800")
            || gpu.name.starts_with("H200")
        {
            400
        } else if gpu.name.starts_with("A100") {
            200
        } else {
            return Err(format!(
                "the inter-node network is not stated and there is no default for {}",
                gpu.name
            ));
        };
        a.push(format!(
            "inter-node network not stated: 8 x {rate} Gb/s NICs per node on a non-blocking fat \
             tree (usual for {} clusters)",
            gpu.name
        ));
        return Ok(format!(
            "topology = \"fat-tree\"\nnic_bandwidth = \"{rate} Gb/s\"\nnics_per_node = 8\n"
        ));
    };
    let lower = t.to_lowercase();
    let (bw, _) = bandwidth_in(t)
        .ok_or_else(|| format!("no NIC bandwidth in the inter-node description \"{t}\""))?;
    let nics = if lower.contains("per gpu") {
        gpus_per_node
    } else if let Some(n) = count_in(t) {
        n
    } else {
        a.push(format!(
            "{gpus_per_node} NICs per node, one per GPU (count not stated in \"{t}\")"
        ));
        gpus_per_node
    };
    let topology = if lower.contains("fat tree") || lower.contains("fat-tree") {
        "fat-tree"
    } else if lower.contains("rail") {
        "rail-optimized"
    } else {
        a.push("non-blocking fat tree between nodes (topology not stated)".into());
        "fat-tree"
    };
    // An InfiniBand subnet manager fills the switches' tables with one path per destination;
    // Ethernet fabrics hash each flow (the scenario default).
    let routing = if lower.contains("infiniband") {
        a.push(
            "InfiniBand: switches route by destination (the subnet manager's forwarding tables, \
             routing = \"destination\"), not by a hash of each flow"
                .into(),
        );
        "routing = \"destination\"\n"
    } else {
        ""
    };
    Ok(format!(
        "topology = \"{topology}\"\nnic_bandwidth = \"{} Gb/s\"\nnics_per_node = {nics}\n{routing}",
        bw * 8.0 / 1e9
    ))
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

/// The row's assumptions: the mapping's, then the simulator's (from the report), then whether the
/// configuration fits.
fn with_report_notes(mut assumptions: Vec<String>, report: &Value) -> Vec<String> {
    if let Some(list) = report["assumptions"].as_array() {
        assumptions.extend(
            list.iter()
                .filter_map(Value::as_str)
                .map(|s| format!("simulator: {s}")),
        );
    }
    if report["memory"]["fits"] == false {
        assumptions.push(format!(
            "simulator: does not fit in memory ({:.1} GiB a GPU of {:.1} GiB); the time is still \
             reported",
            report["memory"]["peak_bytes_per_gpu"]
                .as_f64()
                .unwrap_or(0.0)
                / GIB,
            report["memory"]["capacity_bytes"].as_f64().unwrap_or(0.0) / GIB
        ));
    }
    assumptions
}

/// Builds the case's training scenario and runs it; a refusal or a failed run becomes the row
/// that reports it (with the scenario text when there is one).
fn build_and_run(
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

type RowFn<'a> = dyn Fn(Status, Option<f64>, Vec<String>) -> Row + 'a;

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

/// A serving throughput case (TensorRT-LLM's offline benchmark): the model on one replica of the
/// stated TP, every request at time zero with the stated input and output lengths, output tokens
/// per second compared.
fn serving_row(c: &Case, file_name: &str, row: &RowFn) -> Row {
    let mut a: Vec<String> = Vec::new();
    let hw = |k: &str| c.get("hardware", k);
    let md = |k: &str| c.get("model", k);
    let par = |k: &str| c.get("parallel", k);
    let gpu_text = text(hw("gpu")).unwrap_or("");
    let gpu = match find_gpu(gpu_text) {
        Ok((gpu, note)) => {
            a.extend(note);
            gpu
        }
        Err(e) => return row(Status::Failed(e), None, a),
    };
    let arch = text(md("arch")).unwrap_or("").to_lowercase();
    let preset = if arch.contains("llama-3.1-8b") {
        "llama-3.1-8b"
    } else {
        return row(
            Status::Failed(format!("no model preset for \"{arch}\"")),
            None,
            a,
        );
    };
    let fp8 = arch.contains("fp8");
    let tp = whole(par("TP")).unwrap_or(1);
    // "ISL/OSL=1000/1000" in the metric or extra_metrics.
    let isl_osl = c
        .get("extra_metrics", "isl_osl")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_default();
    let Some((isl, osl)) = isl_osl
        .split_once('/')
        .and_then(|(i, o)| Some((i.trim().parse::<u32>().ok()?, o.trim().parse::<u32>().ok()?)))
    else {
        return row(
            Status::Failed("no input/output lengths (isl_osl)".into()),
            None,
            a,
        );
    };
    // The request count the notes give for these lengths ("30000 for 128/128, ...").
    let notes = c.notes();
    let requests = notes
        .split([',', '(', ')'])
        .filter_map(|part| {
            let (n, lengths) = part
                .trim()
                .trim_start_matches("e.g.")
                .trim()
                .split_once(" for ")?;
            (lengths.trim() == isl_osl).then(|| n.trim().parse::<u32>().ok())?
        })
        .next();
    let requests = match requests {
        Some(n) => n,
        None => {
            a.push("1000 requests (count not stated for these lengths)".into());
            1000
        }
    };
    a.push(format!(
        "{requests} requests of {isl} prompt and {osl} output tokens, all at time zero"
    ));
    if fp8 {
        a.push(
            "fp8 weights and KV cache (NVIDIA's ModelOpt FP8 checkpoints quantize the KV cache too)"
                .into(),
        );
    }
    a.push(
        "chunked-prefill scheduler (sarathi), 8192-token budget, 512 requests a batch (not stated)"
            .into(),
    );
    let dtype = if fp8 { "fp8" } else { "bf16" };
    let kv = if fp8 { "fp8" } else { "bf16" };
    let toml = format!(
        "name = {}\nkind = \"serving\"\n[cluster]\ngpu = \"{}\"\nnodes = 1\ngpus_per_node = 8\n\
         [model]\npreset = \"{preset}\"\ndtype = \"{dtype}\"\n\
         [serving]\nreplicas = 1\ntp = {tp}\nscheduler = \"sarathi\"\nmax_batch_size = 512\n\
         max_batch_tokens = 8192\nkv_memory_fraction = 0.9\nkv_cache_dtype = \"{kv}\"\n\
         [workload]\nrequests = {requests}\narrival = \"offline\"\nprompt_tokens = {isl}\n\
         output_tokens = {osl}\n",
        quote(&c.id),
        gpu.name
    );
    let path = format!("{file_name}#{}", c.id);
    match Scenario::parse(Path::new(&path), toml.clone(), &[]).and_then(|s| crate::run(&s)) {
        Ok(out) => {
            let predicted = out.report["throughput"]["output_tokens_per_s"].as_f64();
            let mut r = row(
                Status::Compared,
                predicted,
                with_report_notes(a, &out.report),
            );
            r.scenario = Some(toml);
            r
        }
        Err(e) => {
            let mut r = row(Status::Failed(e.message), None, a);
            r.scenario = Some(toml);
            r
        }
    }
}

/// A video diffusion case (xDiT's tables): the model from its architecture, the video from its
/// resolution, frames and steps, the degrees from the parallel section, end-to-end latency read.
fn diffusion_row(c: &Case, file_name: &str, row: &RowFn) -> Row {
    let mut a: Vec<String> = Vec::new();
    let hw = |k: &str| c.get("hardware", k);
    let md = |k: &str| c.get("model", k);
    let par = |k: &str| c.get("parallel", k);
    let gpu = match find_gpu(text(hw("gpu")).unwrap_or("")) {
        Ok((gpu, note)) => {
            a.extend(note);
            gpu
        }
        Err(e) => return row(Status::Failed(e), None, a),
    };
    // The preset named first in the architecture ("ConsisID (CogVideoX-5B with identity
    // modules)" is ConsisID), the longest name where two start at the same place.
    let arch = text(md("arch")).unwrap_or("").to_lowercase();
    let squashed = arch.replace(' ', "");
    let Some(preset) = crate::model::dit_preset::all()
        .into_iter()
        .filter_map(|m| squashed.find(m.name).map(|at| (at, m)))
        .min_by_key(|(at, m)| (*at, std::cmp::Reverse(m.name.len())))
        .map(|(_, m)| m)
    else {
        return row(
            Status::Failed(format!("no video DiT preset for \"{arch}\"")),
            None,
            a,
        );
    };
    let resolution = text(md("resolution")).unwrap_or("");
    let Some((width, height)) = resolution
        .split_once('x')
        .and_then(|(w, h)| Some((w.trim().parse::<u32>().ok()?, h.trim().parse::<u32>().ok()?)))
    else {
        return row(
            Status::Failed(format!("no resolution in \"{resolution}\"")),
            None,
            a,
        );
    };
    let (Some(frames), Some(steps)) = (whole(md("frames")), whole(md("steps"))) else {
        return row(Status::Failed("no frames or steps".into()), None, a);
    };
    let gpus = whole(hw("count")).unwrap_or(1);
    let ulysses = whole(par("ulysses_degree")).unwrap_or(1);
    let ring = whole(par("ring_degree")).unwrap_or(1);
    let cfg = whole(par("cfg_parallel")).unwrap_or(1);
    if ulysses * ring * cfg != gpus {
        return row(
            Status::Failed(format!(
                "ulysses {ulysses} x ring {ring} x cfg {cfg} is not the {gpus} GPUs"
            )),
            None,
            a,
        );
    }
    // Guidance: as the case states its scale (above 1: two branches a step, on the same GPUs
    // unless cfg_parallel splits them); unstated, cfg_parallel = 1 reads as guidance off.
    let scale = match md("guidance_scale") {
        None => None,
        Some(v) => match v.as_f64() {
            Some(g) => Some(g),
            None => {
                return row(
                    Status::Failed(format!(
                        "model.guidance_scale is {v}: a number is needed (1 or less: one branch a \
                         step; above 1: two)"
                    )),
                    None,
                    a,
                );
            }
        },
    };
    let guided = scale.map_or(cfg > 1, |g| g > 1.0);
    if cfg > 1 && !guided {
        return row(
            Status::Failed(format!(
                "cfg_parallel {cfg} with guidance_scale {} (no second branch to split)",
                scale.unwrap_or(1.0)
            )),
            None,
            a,
        );
    }
    a.push(match (scale, cfg > 1) {
        (_, true) => "classifier-free guidance, its two branches on the cfg_parallel groups".into(),
        (Some(g), false) if guided => format!(
            "classifier-free guidance (guidance_scale {g}): both branches every step, as one \
             batch of two on the same GPUs"
        ),
        (Some(g), false) => format!("one branch a step (guidance_scale {g})"),
        (None, false) => "one branch a step: cfg_parallel = 1 read as guidance off (true of \
                          HunyuanVideo, which distils its guidance into the model)"
            .into(),
    });
    a.push("VAE decoded on one GPU; text encoders and VAE resident on every GPU".into());
    // The attention kernel the case names (`model.attn`); else FlashAttention 2 where the
    // simulator has a figure for it on the GPU (a named kernel without one fails as the scenario
    // would); elsewhere the roofline's default attention efficiency, said so.
    let fa2 = AttentionKernel::FlashAttention2;
    let stated = text(md("attn")).unwrap_or("");
    let kernel_line = if let Some((kernel, why)) = stated_attention(stated) {
        a.push(format!(
            "{} for the stated attention \"{stated}\" ({why})",
            kernel.name()
        ));
        format!("attention_kernel = \"{}\"\n", kernel.name())
    } else if fa2.reference(gpu).is_some() {
        a.push(
            "FlashAttention 2 (not stated): xDiT's USP runs flash-attn 2 by default, and the \
             official HunyuanVideo repository requires it"
                .into(),
        );
        format!("attention_kernel = \"{}\"\n", fa2.name())
    } else {
        a.push(format!(
            "FlashAttention 2 has no figure on {}: the roofline's default attention efficiency",
            gpu.name
        ));
        String::new()
    };
    let toml = format!(
        "name = {}\nkind = \"diffusion\"\n[cluster]\ngpu = \"{}\"\nnodes = 1\ngpus_per_node = 8\n\
         [model]\npreset = \"{}\"\n{kernel_line}\
         [diffusion]\nwidth = {width}\nheight = {height}\nframes = {frames}\nsteps = {steps}\ncfg = {}\n\
         [parallel]\nulysses = {ulysses}\nring = {ring}\ncfg = {cfg}\n",
        quote(&c.id),
        gpu.name,
        preset.name,
        guided,
    );
    let path = format!("{file_name}#{}", c.id);
    let mut r =
        match Scenario::parse(Path::new(&path), toml.clone(), &[]).and_then(|s| crate::run(&s)) {
            Ok(out) => {
                let predicted = if denoise_only(c) {
                    a.push(
                        "the denoising steps alone (`breakdown_s.denoise`): the source's latency \
                         excludes the text encoders and the VAE"
                            .into(),
                    );
                    out.report["breakdown_s"]["denoise"].as_f64()
                } else {
                    out.report["latency_s"].as_f64()
                };
                row(
                    Status::Compared,
                    predicted,
                    with_report_notes(a, &out.report),
                )
            }
            Err(e) => row(Status::Failed(e.message), None, a),
        };
    r.scenario = Some(toml);
    r
}

/// The attention kernel a case's `attn` names, and why it is read so: a Triton flash attention
/// is flash-attention's 2022 Triton port, the one LLM Foundry's MPT runs (`attn_impl: triton`,
/// the default of its benchmark script), the first FlashAttention algorithm; FlashAttention 3
/// when named; any other flash attention FlashAttention 2.
fn stated_attention(stated: &str) -> Option<(AttentionKernel, &'static str)> {
    let lower = stated.to_lowercase();
    let squashed = lower.replace(['-', ' ', '_'], "");
    if lower.contains("triton") {
        Some((
            AttentionKernel::FlashAttention1,
            "flash-attention's 2022 Triton port, the first FlashAttention algorithm (LLM \
             Foundry's `attn_impl: triton`, its benchmark script's default)",
        ))
    } else if squashed.contains("flashattention3") || squashed == "fa3" {
        Some((AttentionKernel::FlashAttention3, "as the source states"))
    } else if lower.contains("flash") {
        Some((
            AttentionKernel::FlashAttention2,
            "flash-attn 2: it does not use Hopper's asynchronous tensor-core instructions",
        ))
    } else {
        None
    }
}

/// Whether a diffusion case's latency leaves out the text encoders and the VAE (the
/// transformer's denoising steps alone), as its metric says.
fn denoise_only(c: &Case) -> bool {
    let m = c.metric.to_lowercase();
    m.contains("excluding") && m.contains("vae")
}

fn training_rows(c: &Case, file_name: &str, metric: TrainingMetric, row: &RowFn) -> Vec<Row> {
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

// ---------------------------------------------------------------------------------------------
// Per-layer micro-benchmarks

fn layer_rows(c: &Case, file_name: &str, row: &RowFn) -> Vec<Row> {
    let (built, output) = match build_and_run(c, file_name, true, row) {
        Ok(run) => run,
        Err(r) => return vec![*r],
    };
    let layers = output.report["model"]["layers"].as_u64().unwrap_or(0) as u32;
    if layers < 3 || output.report["parallel"]["pp"] != 1 {
        let mut r = row(
            Status::Failed(
                "a layer's time is read only without pipeline parallelism and with 3 layers or more"
                    .into(),
            ),
            None,
            built.assumptions.clone(),
        );
        r.scenario = Some(built.toml);
        return vec![r];
    }
    let layer = layers / 2;
    let mut assumptions = built.assumptions.clone();
    assumptions.push(format!(
        "layer time read from the simulated timeline: layer {layer} of {layers}, from the start \
         of its forward (backward) to the start of the next layer's, tensor-parallel collectives \
         included"
    ));
    let assumptions = with_report_notes(assumptions, &output.report);
    let fits = output.report["memory"]["fits"].as_bool();
    let Some((forward, backward)) = output.layer_times(layer) else {
        let mut r = row(
            Status::Failed("the timeline has no per-layer operations to read".into()),
            None,
            assumptions,
        );
        r.scenario = Some(built.toml);
        return vec![r];
    };
    let mut rows = vec![row(
        Status::Compared,
        Some(1e3 * (forward + backward)),
        assumptions.clone(),
    )];
    rows[0].scenario = Some(built.toml.clone());
    rows[0].fits = fits;
    for (key, value, short) in [
        ("forward_ms", forward, "layer fwd ms"),
        ("backward_ms", backward, "layer bwd ms"),
    ] {
        if let Some(measured) = number(c.get("extra_metrics", key)) {
            let mut r = row(Status::Compared, Some(1e3 * value), assumptions.clone());
            r.metric = format!("{short} (extra_metrics.{key})");
            r.short = short.into();
            r.measured = measured;
            r.primary = false;
            r.fits = fits;
            rows.push(r);
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_limits_are_read_only_when_stated_as_limits() {
        assert_eq!(
            power_limit_in("H100 SXM 96GB HBM2e (500W power limit)"),
            Some(500.0)
        );
        assert_eq!(power_limit_in("H100 capped: power cap 450 W"), Some(450.0));
        assert_eq!(power_limit_in("H100 SXM 700 W"), None);
        assert_eq!(power_limit_in("A100-SXM4-80GB"), None);
    }

    #[test]
    fn prose_is_read_honestly() {
        let (bw, _) = bandwidth_in("8x Mellanox HDR InfiniBand 200 Gb/s HCAs per node").unwrap();
        assert_eq!(bw, 25e9);
        assert_eq!(count_in("8x Mellanox HDR InfiniBand 200 Gb/s"), Some(8));
        assert_eq!(count_in("8 x 400 Gb/s"), Some(8));
        assert_eq!(count_in("RDMA backend network 400 Gb/s per GPU"), None);
        let (bw, _) = bandwidth_in("NVLink3 + NVSwitch (600 GB/s bidirectional per GPU)").unwrap();
        assert_eq!(bw, 600e9);
    }

    #[test]
    fn infiniband_routes_by_destination_and_other_networks_hash() {
        let a100 = find_gpu("A100-SXM4-80GB").unwrap().0;
        let mut a = Vec::new();
        let ib = inter_node(
            Some("8x Mellanox HDR InfiniBand 200 Gb/s HCAs per node (fat tree)"),
            a100,
            8,
            &mut a,
        )
        .unwrap();
        assert!(ib.contains("routing = \"destination\""), "{ib}");
        assert!(a.iter().any(|x| x.starts_with("InfiniBand")), "{a:?}");
        let mut a = Vec::new();
        let rdma = inter_node(
            Some("RDMA backend network 400 Gb/s per GPU"),
            a100,
            8,
            &mut a,
        );
        assert!(!rdma.unwrap().contains("routing"));
        assert!(
            !inter_node(None, a100, 8, &mut a)
                .unwrap()
                .contains("routing")
        );
    }

    #[test]
    fn gpu_names_are_normalised_to_the_catalog() {
        assert_eq!(find_gpu("h100_80gb").unwrap().0.name, "H100-SXM5-80GB");
        assert_eq!(
            find_gpu("H100-SXM 80GB (DGX H100 / DGX Cloud)")
                .unwrap()
                .0
                .name,
            "H100-SXM5-80GB"
        );
        let (g, _) = find_gpu("H100 SXM 96GB HBM2e (500W power limit)").unwrap();
        assert_eq!(g.name, "H100-SXM-96GB-HBM2e");
        // A variant the catalog lacks: its leading words, and a note on what differs.
        let (g, note) = find_gpu("H100 SXM 94GB HBM3 (a test part)").unwrap();
        assert_eq!(g.name, "H100-SXM5-80GB");
        assert!(note.unwrap().contains("94 GB"));
        assert!(find_gpu("Z9000").is_err());
    }
}
