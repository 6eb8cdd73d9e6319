//! Video diffusion cases (xDiT's tables) as diffusion scenarios, the latency read end to end or
//! for the denoising steps alone, as the case's metric says.

use super::prose::{find_gpu, stated_attention, text, whole};
use super::{Case, GIB, Row, RowFn, Status, quote, scenario_row};
use crate::hw::GpuSpec;
use crate::hw::attention_kernel::AttentionKernel;
use crate::model::dit::VideoDit;
use crate::report::diffusion::DiffusionReport;
use crate::report::typed::TypedReport;

/// A video diffusion case (xDiT's tables): the model from its architecture, the video from its
/// resolution, frames and steps, the degrees from the parallel section, end-to-end latency read.
pub(super) fn diffusion_row(c: &Case, file_name: &str, row: &RowFn) -> Row {
    let mut a: Vec<String> = Vec::new();
    let stated = text(c.get("model", "attn")).unwrap_or("");
    if !stated.is_empty() && stated_attention(stated).is_none() {
        return row(
            Status::NotExpressible(format!(
                "attention \"{stated}\" is none of the kernels modelled (FlashAttention 1, 2 \
                 and 3, unfused)"
            )),
            None,
            a,
        );
    }
    let toml = match scenario_toml(c, &mut a) {
        Ok(toml) => toml,
        Err(e) => return row(Status::Failed(e), None, a),
    };
    scenario_row(toml, file_name, &c.id, a, row, |report, a| {
        let r = DiffusionReport::from_value(report).ok()?;
        Some(if let Some(bytes) = memory_unit(c) {
            a.push("the peak memory of a GPU (`memory.peak_bytes_per_gpu`)".into());
            r.memory.peak_bytes_per_gpu / bytes
        } else if denoise_only(c) {
            a.push(
                "the denoising steps alone (`breakdown_s.denoise`): the source's latency \
                 excludes the text encoders and the VAE"
                    .into(),
            );
            r.breakdown_s.denoise
        } else {
            r.latency_s
        })
    })
}

/// The case as a diffusion scenario's TOML, or why it cannot be one.
fn scenario_toml(c: &Case, a: &mut Vec<String>) -> Result<String, String> {
    let (gpu, note) = find_gpu(text(c.get("hardware", "gpu")).unwrap_or(""))?;
    a.extend(note);
    let preset = preset(c)?;
    let (width, height, frames, steps) = video(c)?;
    let (ulysses, ring, cfg, dsp) = degrees(c)?;
    let guided = guidance(c, cfg, a)?;
    let source = c.raw["source"].as_str().unwrap_or("").to_lowercase();
    let offload = if source.contains("xdit") {
        a.push("VAE decoded on one GPU; text encoders and VAE resident on every GPU (xDiT)".into());
        "offload = \"none\"\n"
    } else if states_no_offload(c) {
        a.push("VAE decoded on one GPU; no offload, as the source states".into());
        "offload = \"none\"\n"
    } else {
        a.push("VAE decoded on one GPU".into());
        ""
    };
    let kernel_line = attention_line(c, gpu, a);
    let dsp_line = match dsp {
        1 => String::new(),
        n => format!("dsp = {n}\n"),
    };
    Ok(format!(
        "name = {}\nkind = \"diffusion\"\n[cluster]\ngpu = \"{}\"\nnodes = 1\ngpus_per_node = 8\n\
         [model]\npreset = \"{}\"\n{kernel_line}\
         [diffusion]\nwidth = {width}\nheight = {height}\nframes = {frames}\nsteps = {steps}\ncfg = {}\n{offload}\
         [parallel]\nulysses = {ulysses}\nring = {ring}\ncfg = {cfg}\n{dsp_line}",
        quote(&c.id),
        gpu.name,
        preset.name,
        guided,
    ))
}

/// The preset named first in the architecture ("ConsisID (CogVideoX-5B with identity modules)"
/// is ConsisID), the longest name where two start at the same place.
fn preset(c: &Case) -> Result<VideoDit, String> {
    let arch = text(c.get("model", "arch")).unwrap_or("").to_lowercase();
    let squashed = arch.replace(' ', "");
    crate::model::dit_preset::all()
        .into_iter()
        .filter_map(|m| squashed.find(m.name).map(|at| (at, m)))
        .min_by_key(|(at, m)| (*at, std::cmp::Reverse(m.name.len())))
        .map(|(_, m)| m)
        .ok_or_else(|| format!("no video DiT preset for \"{arch}\""))
}

/// The video: width and height from the resolution, frames and steps.
fn video(c: &Case) -> Result<(u32, u32, u32, u32), String> {
    let md = |k: &str| c.get("model", k);
    let resolution = text(md("resolution")).unwrap_or("");
    let Some((width, height)) = resolution
        .split_once('x')
        .and_then(|(w, h)| Some((w.trim().parse::<u32>().ok()?, h.trim().parse::<u32>().ok()?)))
    else {
        return Err(format!("no resolution in \"{resolution}\""));
    };
    let (Some(frames), Some(steps)) = (whole(md("frames")), whole(md("steps"))) else {
        return Err("no frames or steps".into());
    };
    Ok((width, height, frames, steps))
}

/// The Ulysses, ring, CFG and DSP degrees, their product the case's GPUs.
fn degrees(c: &Case) -> Result<(u32, u32, u32, u32), String> {
    let par = |k: &str| c.get("parallel", k);
    let gpus = whole(c.get("hardware", "count")).unwrap_or(1);
    let ulysses = whole(par("ulysses_degree")).unwrap_or(1);
    let ring = whole(par("ring_degree")).unwrap_or(1);
    let cfg = whole(par("cfg_parallel")).unwrap_or(1);
    let dsp = whole(par("dsp_degree")).unwrap_or(1);
    if ulysses * ring * cfg * dsp != gpus {
        return Err(format!(
            "ulysses {ulysses} x ring {ring} x cfg {cfg} x dsp {dsp} is not the {gpus} GPUs"
        ));
    }
    Ok((ulysses, ring, cfg, dsp))
}

/// Whether classifier-free guidance runs: as the case states its scale (above 1: two branches a
/// step, on the same GPUs unless cfg_parallel splits them); unstated, cfg_parallel = 1 reads as
/// guidance off.
fn guidance(c: &Case, cfg: u32, a: &mut Vec<String>) -> Result<bool, String> {
    let scale = match c.get("model", "guidance_scale") {
        None => None,
        Some(v) => match v.as_f64() {
            Some(g) => Some(g),
            None => {
                return Err(format!(
                    "model.guidance_scale is {v}: a number is needed (1 or less: one branch a \
                     step; above 1: two)"
                ));
            }
        },
    };
    let guided = scale.map_or(cfg > 1, |g| g > 1.0);
    if cfg > 1 && !guided {
        return Err(format!(
            "cfg_parallel {cfg} with guidance_scale {} (no second branch to split)",
            scale.unwrap_or(1.0)
        ));
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
    Ok(guided)
}

/// The scenario's `attention_kernel` line: the kernel the case names (`model.attn`; a named
/// kernel without a figure on the GPU fails as the scenario would); else none, and the
/// scenario's own default applies (the reference pipelines' kernel, said so).
fn attention_line(c: &Case, gpu: &'static GpuSpec, a: &mut Vec<String>) -> String {
    let fa2 = AttentionKernel::FlashAttention2;
    let fa3 = AttentionKernel::FlashAttention3;
    let stated = text(c.get("model", "attn")).unwrap_or("");
    let sglang_default = stated.to_lowercase().contains("sglang")
        && stated_attention(stated).is_some_and(|(k, _)| k == fa2);
    if sglang_default && fa3.reference(gpu).is_some() {
        a.push(format!(
            "{} for the stated attention \"{stated}\" (SGLang's diffusion runtime prefers \
             FlashAttention 3 where the GPU runs it: docs/diffusion/performance/\
             attention_backends.md)",
            fa3.name()
        ));
        format!("attention_kernel = \"{}\"\n", fa3.name())
    } else if let Some((kernel, why)) = stated_attention(stated) {
        a.push(format!(
            "{} for the stated attention \"{stated}\" ({why})",
            kernel.name()
        ));
        format!("attention_kernel = \"{}\"\n", kernel.name())
    } else {
        String::new()
    }
}

/// Whether the case says its pipeline ran without offload ("offload disabled" in its table or
/// set-up), overriding the reference pipeline's own.
fn states_no_offload(c: &Case) -> bool {
    let said = [
        text(c.raw.get("table")).unwrap_or(""),
        text(c.get("parallel", "impl")).unwrap_or(""),
    ]
    .join(" ")
    .to_lowercase();
    [
        "offload disabled",
        "offload off",
        "no offload",
        "without offload",
    ]
    .iter()
    .any(|p| said.contains(p))
}

/// Bytes in the unit of a peak-memory case ("GB": 1e9, "GiB": 2^30), or None for a latency.
pub(super) fn memory_unit(c: &Case) -> Option<f64> {
    if !c.metric.to_lowercase().contains("memory") {
        return None;
    }
    match c.unit.trim() {
        "GB" => Some(1e9),
        "GiB" => Some(GIB),
        _ => None,
    }
}

/// Whether a diffusion case's latency leaves out the text encoders and the VAE (the
/// transformer's denoising steps alone), as its metric says.
pub(super) fn denoise_only(c: &Case) -> bool {
    let m = c.metric.to_lowercase();
    m.contains("excluding") && m.contains("vae")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn case(raw: serde_json::Value) -> Case {
        Case {
            id: "c".into(),
            metric: "end-to-end generation latency".into(),
            unit: "s".into(),
            value: 1.0,
            raw,
        }
    }

    #[test]
    fn a_stated_run_without_offload_is_read_as_one() {
        let said = |table: &str, set_up: &str| {
            states_no_offload(&case(json!({"table": table, "parallel": {"impl": set_up}})))
        };
        assert!(said("H200 GPU 1, offload disabled, 832x480", ""));
        assert!(said("", "diffusers CogVideoXPipeline, bf16, no offload"));
        assert!(!said(
            "Inference Speed",
            "diffusers CogVideoXPipeline with enable_sequential_cpu_offload"
        ));
    }

    #[test]
    fn sglangs_default_flash_attention_is_flash_attention_3_where_the_gpu_runs_it() {
        let stated = json!({"model": {"attn": "FlashAttention (SGLang default FA backend)"}});
        let line = |gpu: &str| {
            let (gpu, _) = find_gpu(gpu).unwrap();
            attention_line(&case(stated.clone()), gpu, &mut Vec::new())
        };
        assert_eq!(line("H200"), "attention_kernel = \"flash-attention-3\"\n");
        assert_eq!(
            line("A100 80GB"),
            "attention_kernel = \"flash-attention-2\"\n"
        );
        let plain = json!({"model": {"attn": "FlashAttention"}});
        let (h200, _) = find_gpu("H200").unwrap();
        assert_eq!(
            attention_line(&case(plain), h200, &mut Vec::new()),
            "attention_kernel = \"flash-attention-2\"\n"
        );
    }
}
