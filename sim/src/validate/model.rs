//! The `[model]` table of a training case: its shape (or a simulator preset it names), the
//! attention kernel, dtype and elementwise fusion it states, or its framework's where it is
//! silent (dropout too).

use super::prose::{number, stated_attention, text, whole};
use super::{Case, Refusal};
use crate::hw::gpu::GpuSpec;
use crate::workload::training::framework::Framework;
use std::fmt::Write as _;

/// The `[model]` table of a training case, and the dtype it runs in (when stated).
pub(super) fn model_table(
    c: &Case,
    gpu: &'static GpuSpec,
    framework: Option<Framework>,
    precision: &str,
    a: &mut Vec<String>,
) -> Result<(String, Option<&'static str>), Refusal> {
    let md = |k: &str| c.get("model", k);
    let mut model = shape(c, a)?;
    let arch = text(md("arch")).unwrap_or("").to_lowercase();
    attention(c, gpu, framework, &mut model, a);
    if arch.contains("llama") && md("preset").is_none() {
        model.push_str("tied_embeddings = false\n");
        a.push("untied input and output embeddings: the Llama architecture's".into());
    }
    let dtype = dtype(c, precision, a);
    if let Some(d) = dtype {
        let _ = writeln!(model, "dtype = \"{d}\"");
    }
    if let Some(f) = framework.filter(|f| f.runs_eager(precision)) {
        model.push_str("elementwise = \"eager\"\n");
        a.push(format!(
            "elementwise operations eager, a kernel per operation (not stated; {}'s model code \
             without torch.compile, its default)",
            f.name()
        ));
    }
    if let Some(f) = framework.filter(|f| !f.trains_with_dropout()) {
        model.push_str("dropout = 0.0\n");
        a.push(format!(
            "no dropout (not stated; {}'s models train without it)",
            f.name()
        ));
    }
    Ok((model, dtype))
}

/// The model's shape: layers, widths, heads, sequence, vocabulary and MLP.
fn shape(c: &Case, a: &mut Vec<String>) -> Result<String, Refusal> {
    let md = |k: &str| c.get("model", k);
    if let Some(preset) = text(md("preset")) {
        // A model the simulator has as a preset (mixtures of experts, MLA): its published config.
        let seq = whole(md("seq_len"))
            .ok_or_else(|| Refusal::failed("model.seq_len is not stated as a number", a))?;
        a.push(format!(
            "the model as the simulator's preset \"{preset}\" (its published config)"
        ));
        let mut model = format!("[model]\npreset = \"{preset}\"\nseq_len = {seq}\n");
        if let Some(cf) = number(md("capacity_factor")) {
            let _ = writeln!(model, "capacity_factor = {cf}");
            a.push(format!(
                "experts take at most {cf} x an even share of the tokens (token dropping)"
            ));
        }
        return Ok(model);
    }
    let mut model = String::from("[model]\n");
    for key in ["layers", "hidden", "heads", "seq_len"] {
        let v = whole(md(key))
            .ok_or_else(|| Refusal::failed(format!("model.{key} is not stated as a number"), a))?;
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
    Ok(model)
}

/// The attention kernel the case names (where the simulator has a figure for it on the GPU), or
/// its framework's when it names none.
fn attention(
    c: &Case,
    gpu: &'static GpuSpec,
    framework: Option<Framework>,
    model: &mut String,
    a: &mut Vec<String>,
) {
    let md = |k: &str| c.get("model", k);
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
        let _ = writeln!(model, "attention_kernel = \"{}\"", kernel.name());
        a.push(format!(
            "{} attention (not stated; {}'s: {why})",
            kernel.name(),
            f.name()
        ));
    }
}

/// The dtype the stated precision names, if any.
fn dtype(c: &Case, precision: &str, a: &mut Vec<String>) -> Option<&'static str> {
    let par = |k: &str| c.get("parallel", k);
    // A format the text rules out ("no Float8") is not the run's.
    let mut said = precision.to_string();
    for negation in ["no ", "without ", "not "] {
        for format in ["fp8", "float8"] {
            said = said.replace(&format!("{negation}{format}"), "");
        }
    }
    let precision = said.as_str();
    if precision.contains("fp8") || precision.contains("float8") {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_format_the_text_rules_out_is_not_the_runs() {
        let case = |precision: &str| {
            let text = format!(
                r#"[{{"id": "p", "source": "s", "parallel": {{"precision": "{precision}"}},
                     "metric": "m", "value": 1, "unit": "s"}}]"#
            );
            super::super::parse(std::path::Path::new("p.json"), &text)
                .unwrap()
                .remove(0)
        };
        let read = |precision: &str| {
            let lower = precision.to_lowercase();
            dtype(&case(precision), &lower, &mut Vec::new())
        };
        assert_eq!(
            read("bf16, Optimizations 'None' (no Float8, no async TP)"),
            Some("bf16")
        );
        assert_eq!(read("Float8 (tensorwise) + torch.compile"), Some("fp8"));
        assert_eq!(read("bf16 without fp8"), Some("bf16"));
    }
}
