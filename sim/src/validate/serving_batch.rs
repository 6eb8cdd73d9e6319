//! Serving cases at small batches and low load, as the engines' latency benchmarks run them: one
//! batch (or a closed loop of a few requests) of fixed lengths all at once, or a short Poisson
//! run of uniform random lengths. First-token, per-token and end-to-end latency, a batch's
//! latency or output throughput are compared in the case's own unit. Traces of ShareGPT
//! conversations are not shipped, so cases that sample them are not expressible.

use super::prose::{find_gpu, stated_engine, text, whole};
use super::{Case, Row, RowFn, Status, quote, scenario_row};
use crate::hw::gpu::GpuSpec;
use crate::report::serving::ServingReport;
use crate::report::typed::TypedReport;
use serde_json::Value;

/// What a case measured, read from its metric.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Measure {
    /// Time to the first token, the median over requests.
    FirstToken,
    /// Time between output tokens (ITL, TPOT), the median over requests.
    PerToken,
    /// One request's end-to-end latency, the median over requests.
    EndToEnd,
    /// From the batch's start to its last token.
    Batch,
    /// Output tokens per second over the run.
    OutputRate,
}

impl Measure {
    fn of(metric: &str) -> Option<Measure> {
        let m = metric.to_lowercase();
        Some(if m.contains("first-token") || m.contains("ttft") {
            Measure::FirstToken
        } else if m.contains("itl") || m.contains("tpot") {
            Measure::PerToken
        } else if m.contains("latency of one batch") {
            Measure::Batch
        } else if m.contains("e2e") || m.contains("end-to-end") {
            Measure::EndToEnd
        } else if m.contains("throughput") {
            Measure::OutputRate
        } else {
            return None;
        })
    }

    /// The short name a table gives the case's figure.
    fn short(self, unit: &str) -> String {
        let what = match self {
            Measure::FirstToken => "TTFT",
            Measure::PerToken => "per token",
            Measure::EndToEnd => "request",
            Measure::Batch => "batch",
            Measure::OutputRate => return "output tok/s".into(),
        };
        format!("{what} {unit}")
    }

    /// The figure in seconds or tokens per second from `report`.
    fn read(self, report: &Value) -> Option<f64> {
        let r = ServingReport::from_value(report).ok()?;
        match self {
            Measure::FirstToken => r.ttft_s.p50,
            Measure::PerToken => r.tpot_s.p50,
            Measure::EndToEnd => r.e2e_s.p50,
            Measure::Batch => Some(r.requests_completed as f64 / r.throughput.requests_per_s),
            Measure::OutputRate => Some(r.throughput.output_tokens_per_s),
        }
    }
}

/// The short name of a small-batch case's figure; None when its metric has no reading.
pub(super) fn short(c: &Case) -> Option<String> {
    Measure::of(&c.metric).map(|m| m.short(&c.unit))
}

/// Whether `c` is a small-batch case (its lengths are the parallel section's, not `isl_osl`).
pub(super) fn is_small_batch(c: &Case) -> bool {
    c.get("parallel", "input_tokens").is_some() && Measure::of(&c.metric).is_some()
}

/// A small-batch serving case as a scenario, run, its figure read in the case's unit.
pub(super) fn batch_row(c: &Case, file_name: &str, row: &RowFn) -> Row {
    let mut a = Vec::new();
    let toml = match scenario_text(c, &mut a) {
        Ok(toml) => toml,
        Err(status) => return row(status, None, a),
    };
    let measure = Measure::of(&c.metric).expect("checked by is_small_batch");
    scenario_row(toml, file_name, &c.id, a, row, |report, _| {
        let scale = match c.unit.as_str() {
            "ms" => 1e3,
            _ => 1.0,
        };
        measure.read(report).map(|v| v * scale)
    })
}

/// The scenario of `c`, every choice its source leaves open in `a`.
fn scenario_text(c: &Case, a: &mut Vec<String>) -> Result<String, Status> {
    let gpu = gpu(c, a)?;
    let preset = preset(c, a)?;
    let (dtype, kv) = formats(c, a);
    let par = |k: &str| c.get("parallel", k);
    let tp = match whole(par("TP")) {
        Some(tp) => tp,
        None => {
            let count = whole(c.get("hardware", "count")).unwrap_or(1);
            a.push(format!(
                "tensor parallel over the {count} GPUs (TP not stated)"
            ));
            count
        }
    };
    let stated = text(par("engine")).unwrap_or("");
    let engine = stated.to_lowercase();
    let scheduler = if engine.contains("static") || engine.contains("lmdeploy") {
        a.push("static batching, as the engine's benchmark runs".into());
        "scheduler = \"static\"\n"
    } else {
        ""
    };
    let engine_lines = stated_engine(stated, a);
    let workload = workload(c, a)?;
    let batch_limit = match whole(par("batch")) {
        Some(b) => format!("max_batch_size = {b}\n"),
        None => String::new(),
    };
    Ok(format!(
        "name = {}\nkind = \"serving\"\n[cluster]\ngpu = \"{}\"\nnodes = 1\ngpus_per_node = {}\n\
         [model]\npreset = \"{preset}\"\ndtype = \"{dtype}\"\n\
         [serving]\n{engine_lines}replicas = 1\ntp = {tp}\n{scheduler}{batch_limit}\
         kv_cache_dtype = \"{kv}\"\n[workload]\n{workload}",
        quote(&c.id),
        gpu.name,
        tp.max(8),
    ))
}

/// The catalog GPU the case names, read past a machine label ("8xH100") or a size written
/// "A100-80G".
fn gpu(c: &Case, a: &mut Vec<String>) -> Result<&'static GpuSpec, Status> {
    let name = text(c.get("hardware", "gpu")).unwrap_or("");
    let bare = name
        .split_once('x')
        .filter(|(n, _)| !n.is_empty() && n.chars().all(|d| d.is_ascii_digit()))
        .map_or(name, |(_, rest)| rest);
    let tries = [bare.to_string(), bare.replace('-', " ")];
    let mut last = String::new();
    for t in tries {
        match find_gpu(&t) {
            Ok((g, note)) => {
                a.extend(note);
                return Ok(g);
            }
            Err(e) => last = e,
        }
    }
    Err(Status::Failed(last))
}

/// The preset of the case's model: Llama 2 (7B, 13B, 70B), Llama 3 (8B, 70B) and 3.1 (8B, 70B,
/// 405B); Llama 3.3 70B has Llama 3.1 70B's shapes.
fn preset(c: &Case, a: &mut Vec<String>) -> Result<&'static str, Status> {
    let arch = text(c.get("model", "arch")).unwrap_or("");
    let flat: String = arch
        .to_lowercase()
        .chars()
        .filter(|ch| ch.is_ascii_alphanumeric() || *ch == '.')
        .collect();
    let size = ["405b", "70b", "13b", "8b", "7b"]
        .into_iter()
        .find(|s| flat.contains(s));
    let preset = match size {
        Some(size) if flat.contains("llama2") || (flat.starts_with("llama") && size == "7b") => {
            match size {
                "7b" => Some("llama-2-7b"),
                "13b" => Some("llama-2-13b"),
                "70b" => Some("llama-2-70b"),
                _ => None,
            }
        }
        Some(size) if flat.contains("llama3.3") => (size == "70b").then(|| {
            a.push("Llama 3.3 70B has Llama 3.1 70B's shapes".into());
            "llama-3.1-70b"
        }),
        Some(size) if flat.contains("llama3.1") => match size {
            "8b" => Some("llama-3.1-8b"),
            "70b" => Some("llama-3.1-70b"),
            "405b" => Some("llama-3.1-405b"),
            _ => None,
        },
        Some(size) if flat.contains("llama3") => match size {
            "8b" => Some("llama-3-8b"),
            "70b" => Some("llama-3-70b"),
            _ => None,
        },
        _ => None,
    };
    preset.ok_or_else(|| Status::Failed(format!("no model preset for \"{arch}\"")))
}

/// The weights' and the KV cache's formats: as stated, else 16-bit (bf16) and a KV cache in the
/// weights' 16-bit format.
fn formats(c: &Case, a: &mut Vec<String>) -> (&'static str, &'static str) {
    let stated = text(c.get("model", "weights"))
        .or_else(|| text(c.get("model", "dtype")))
        .unwrap_or("")
        .to_lowercase();
    let dtype = if stated.starts_with("fp8") {
        "fp8"
    } else if stated.starts_with("fp16") || stated.starts_with("float16") {
        "fp16"
    } else {
        if !stated.starts_with("bf16") {
            a.push("bf16 weights (format not stated)".into());
        }
        "bf16"
    };
    let kv = match text(c.get("model", "kv_cache_dtype")) {
        Some(k) if k.to_lowercase().starts_with("fp8") => "fp8",
        _ => {
            let kv = if dtype == "fp16" { "fp16" } else { "bf16" };
            a.push(format!("{kv} KV cache (format not stated)"));
            kv
        }
    };
    (dtype, kv)
}

/// The `[workload]` keys: a batch (or a closed loop of that many requests) all at time zero, or
/// Poisson arrivals; lengths fixed, averaged, or uniform random.
fn workload(c: &Case, a: &mut Vec<String>) -> Result<String, Status> {
    let par = |k: &str| c.get("parallel", k);
    let prose = |k: &str| text(par(k)).unwrap_or("").to_lowercase();
    if ["input_tokens", "output_tokens", "batch"]
        .iter()
        .any(|k| prose(k).contains("sharegpt"))
    {
        return Err(Status::NotExpressible(
            "ShareGPT conversations are sampled; no trace of them is shipped".into(),
        ));
    }
    let lengths = |key: &str, a: &mut Vec<String>| -> Result<String, Status> {
        if let Some(n) = whole(par(key)) {
            return Ok(n.to_string());
        }
        let p = prose(key);
        let first_number = |s: &str| -> Option<u32> {
            s.split(|ch: char| !ch.is_ascii_digit() && ch != '.')
                .find_map(|w| w.parse::<f64>().ok())
                .map(|v| v.round() as u32)
        };
        if let Some(rest) = p.split("--random-").nth(1) {
            let max = first_number(rest).filter(|&n| n > 0);
            if let Some(max) = max {
                a.push(format!(
                    "{key}: uniform from 1 to {max} (random, range ratio 0)"
                ));
                return Ok(format!("{{ dist = \"uniform\", min = 1, max = {max} }}"));
            }
        }
        if p.starts_with("average")
            && let Some(mean) = first_number(&p)
        {
            a.push(format!("{key}: every request at the average, {mean}"));
            return Ok(mean.to_string());
        }
        Err(Status::Failed(format!(
            "no {key} read from \"{}\"",
            text(par(key)).unwrap_or("")
        )))
    };
    let prompt = lengths("input_tokens", a)?;
    let output = lengths("output_tokens", a)?;
    if let Some(b) = whole(par("batch")) {
        let metric = c.metric.to_lowercase();
        if metric.contains("concurrency") || prose("engine").contains("nim") || b > 1 {
            a.push(format!(
                "{b} requests at once (a closed loop of {b} requests of equal lengths runs in waves)"
            ));
        }
        return Ok(format!(
            "requests = {b}\narrival = \"offline\"\nprompt_tokens = {prompt}\n\
             output_tokens = {output}\n"
        ));
    }
    let batch = prose("batch");
    let rate = c
        .get("parallel", "request_rate")
        .and_then(Value::as_f64)
        .or_else(|| {
            let after = batch.split("poisson").nth(1)?;
            after.split_whitespace().find_map(|w| w.parse::<f64>().ok())
        });
    let requests = batch.split(',').find_map(|part| {
        part.trim()
            .strip_suffix(" prompts)")?
            .trim()
            .parse::<u32>()
            .ok()
    });
    match (rate, requests) {
        (Some(rate), Some(requests)) => Ok(format!(
            "requests = {requests}\narrival = \"poisson\"\nrate = \"{rate}/s\"\n\
             prompt_tokens = {prompt}\noutput_tokens = {output}\n"
        )),
        _ => Err(Status::Failed(format!(
            "no arrivals read from \"{}\"",
            text(par("batch")).unwrap_or("")
        ))),
    }
}
