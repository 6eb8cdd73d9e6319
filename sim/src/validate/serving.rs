//! Serving throughput cases (TensorRT-LLM's offline benchmark) as serving scenarios, output
//! tokens per second compared.

use super::prose::{find_gpu, text, whole};
use super::{Case, Row, RowFn, Status, quote, scenario_row};
use crate::report::serving::ServingReport;
use crate::report::typed::TypedReport;
use serde_json::Value;

/// A serving throughput case (TensorRT-LLM's offline benchmark): the model on one replica of the
/// stated TP, every request at time zero with the stated input and output lengths, output tokens
/// per second compared.
pub(super) fn serving_row(c: &Case, file_name: &str, row: &RowFn) -> Row {
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
    let engine_lines = super::prose::stated_engine(text(par("engine")).unwrap_or(""), &mut a);
    let dtype = if fp8 { "fp8" } else { "bf16" };
    let kv = if fp8 { "fp8" } else { "bf16" };
    let toml = format!(
        "name = {}\nkind = \"serving\"\n[cluster]\ngpu = \"{}\"\nnodes = 1\ngpus_per_node = 8\n\
         [model]\npreset = \"{preset}\"\ndtype = \"{dtype}\"\n\
         [serving]\n{engine_lines}replicas = 1\ntp = {tp}\nscheduler = \"sarathi\"\nmax_batch_size = 512\n\
         max_batch_tokens = 8192\nkv_memory_fraction = 0.9\nkv_cache_dtype = \"{kv}\"\n\
         [workload]\nrequests = {requests}\narrival = \"offline\"\nprompt_tokens = {isl}\n\
         output_tokens = {osl}\n",
        quote(&c.id),
        gpu.name
    );
    scenario_row(toml, file_name, &c.id, a, row, |report, _| {
        ServingReport::from_value(report)
            .ok()
            .map(|r| r.throughput.output_tokens_per_s)
    })
}
